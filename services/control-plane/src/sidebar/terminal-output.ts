/**
 * What the sidebar's terminal prints: arrays of objects as a table, anything else as indented
 * JSON, and always bounded (rows, columns, cell width, total size), saying what was left out.
 */
import type { JsonValue } from '@bindery/context-ops';

export const MAX_OUTPUT_CHARS = 32_768;
const MAX_ROWS = 50;
const MAX_COLUMNS = 8;
const MAX_CELL = 40;

/** `text` cut to MAX_OUTPUT_CHARS, saying how much was cut. */
export function bounded(text: string, limit = MAX_OUTPUT_CHARS): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n… ${text.length - limit} more characters (narrow the path or the query)`;
}

function isRecord(value: JsonValue): value is Record<string, JsonValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A value as the terminal shows it. */
export function formatValue(value: JsonValue): string {
  if (Array.isArray(value) && value.length > 0 && value.every(isRecord)) return table(value);
  return bounded(JSON.stringify(value, null, 2));
}

function cell(value: JsonValue | undefined): string {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
}

/** Rows of objects as aligned columns (the keys of the first rows), bounded. */
export function table(rows: readonly Record<string, JsonValue>[]): string {
  const keys: string[] = [];
  for (const row of rows.slice(0, 20)) {
    for (const key of Object.keys(row)) if (!keys.includes(key)) keys.push(key);
  }
  const columns = keys.slice(0, MAX_COLUMNS);
  const shown = rows.slice(0, MAX_ROWS).map((row) => columns.map((key) => cell(row[key])));
  const widths = columns.map((key, i) => Math.max(key.length, ...shown.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const out = [line(columns), line(widths.map((w) => '-'.repeat(w))), ...shown.map(line)];
  if (keys.length > columns.length)
    out.push(`(${keys.length - columns.length} more columns: cat an item to see all)`);
  if (rows.length > MAX_ROWS) out.push(`… ${rows.length - MAX_ROWS} more rows (${rows.length} in all)`);
  return bounded(out.join('\n'));
}

/** `ls`: the members of an object or the items of an array, one line each with type and preview. */
export function listing(value: JsonValue): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '(empty array)';
    if (value.every(isRecord)) return table(value.map((item, i) => ({ '#': i, ...item })));
    return entries(
      value.map((item, i) => [String(i), item] as const),
      value.length,
    );
  }
  if (isRecord(value)) {
    const all = Object.entries(value);
    if (all.length === 0) return '(empty object)';
    return entries(all, all.length);
  }
  return `${typeOf(value)}: ${cell(value)}`;
}

function entries(items: readonly (readonly [string, JsonValue])[], total: number): string {
  const shown = items.slice(0, MAX_ROWS * 2);
  const width = Math.min(24, Math.max(...shown.map(([k]) => k.length)));
  const out = shown.map(([key, v]) => `${key.padEnd(width)}  ${typeOf(v).padEnd(7)}  ${summary(v)}`);
  if (total > shown.length) out.push(`… ${total - shown.length} more (${total} in all)`);
  return bounded(out.join('\n'));
}

function typeOf(value: JsonValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function summary(value: JsonValue): string {
  if (Array.isArray(value)) return `${value.length} items`;
  if (isRecord(value)) {
    const keys = Object.keys(value);
    return `{${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', …' : ''}}`;
  }
  return cell(value);
}
