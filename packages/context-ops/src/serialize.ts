/**
 * Turning a result into JSON text under a byte budget. The value is walked and written piece by
 * piece, so an oversized result fails as soon as the budget is passed instead of after a huge
 * string has been built.
 */
import { OpError } from './errors.ts';
import type { JsonValue } from './json.ts';

/**
 * The JSON text of `value` (identical to JSON.stringify); throws RESULT_TOO_LARGE as soon as its
 * UTF-8 size passes `maxBytes`, without building the whole text first.
 */
export function serializeResult(value: JsonValue, maxBytes: number): string {
  const chunks: string[] = [];
  writeJson(
    value,
    budgetedSink(maxBytes, (chunk) => chunks.push(chunk)),
  );
  return chunks.join('');
}

/** The UTF-8 size of `value`'s JSON text; throws RESULT_TOO_LARGE once it passes `maxBytes`. */
export function measureResult(value: JsonValue, maxBytes: number): number {
  const sink = budgetedSink(maxBytes, () => undefined);
  writeJson(value, sink);
  return sink.bytes;
}

/** Where `writeJson` writes; it may throw to stop the walk (a budget passed). */
export interface JsonSink {
  /** Called before a string is escaped: refuses it early when even its raw length cannot fit. */
  reserve(minimumUnits: number): void;
  write(chunk: string): void;
}

interface Sink extends JsonSink {
  bytes: number;
}

function budgetedSink(maxBytes: number, keep: (chunk: string) => void): Sink {
  const sink: Sink = {
    bytes: 0,
    reserve(minimumBytes) {
      if (sink.bytes + minimumBytes > maxBytes) throw tooLarge(maxBytes);
    },
    write(chunk) {
      sink.bytes += utf8Length(chunk);
      if (sink.bytes > maxBytes) throw tooLarge(maxBytes);
      keep(chunk);
    },
  };
  return sink;
}

function tooLarge(maxBytes: number): OpError {
  return new OpError(
    'RESULT_TOO_LARGE',
    `The result is larger than the ${maxBytes}-byte limit. Use \`preview\` to page through the data, ` +
      'or a narrower `query` that selects fewer items or fields.',
    { max_bytes: maxBytes },
  );
}

/**
 * Writes the JSON text of `value` to `sink` piece by piece, exactly as JSON.stringify would (one
 * `write` at least per value visited, so a sink can meter the walk).
 */
// Mirrors JSON.stringify for JSON input; the non-JSON branches (undefined, NaN) follow JSON.stringify
// too, so a value that slipped through typing still serialises the way every other tool would.
export function writeJson(value: unknown, sink: JsonSink): void {
  if (value === null) return sink.write('null');
  switch (typeof value) {
    case 'boolean':
      return sink.write(value ? 'true' : 'false');
    case 'number':
      return sink.write(Number.isFinite(value) ? String(value) : 'null');
    case 'string':
      return writeString(value, sink);
    case 'object':
      break;
    default:
      return sink.write('null');
  }
  if (Array.isArray(value)) {
    sink.write('[');
    for (let i = 0; i < value.length; i += 1) {
      if (i > 0) sink.write(',');
      writeJson(value[i], sink);
    }
    return sink.write(']');
  }
  const record = value as Record<string, unknown>;
  sink.write('{');
  let first = true;
  for (const key of Object.keys(record)) {
    const member = record[key];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    if (!first) sink.write(',');
    first = false;
    writeString(key, sink);
    sink.write(':');
    writeJson(member, sink);
  }
  sink.write('}');
}

function writeString(text: string, sink: JsonSink): void {
  // Every UTF-16 unit takes at least one UTF-8 byte and quotes add two, so this check needs no copy.
  sink.reserve(text.length + 2);
  sink.write(JSON.stringify(text));
}

/** The UTF-8 length of `text` (a lone surrogate counts as U+FFFD, as Node's encoder writes it). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
