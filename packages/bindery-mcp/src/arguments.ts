/**
 * A tool's arguments on a command line, typed by its input schema: `--name value` pairs (also
 * `--name=value`), integers and numbers parsed, booleans `true`/`false` (a bare flag is true),
 * arrays by repeating the flag or as one JSON array, objects as JSON. And the other way round:
 * each argument described for `bindery help <tool>`.
 */
import type { JsonSchema } from './rest.ts';
import { UsageError } from './settings.ts';

type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object' | 'null' | 'any';

/** The schema's one non-null type, looking through a nullable union. */
function kindOf(schema: JsonSchema | undefined): Kind {
  if (!schema) return 'any';
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  const real = types.filter((t) => t !== 'null');
  if (real.length === 1) return real[0] as Kind;
  if (real.length === 0 && types.length === 1) return 'null';
  if (real.length === 0) {
    const variants = (schema.anyOf ?? schema.oneOf ?? []).filter((v) => v.type !== 'null');
    if (variants.length === 1) return kindOf(variants[0]);
    const values = schema.enum ?? (schema.const === undefined ? undefined : [schema.const]);
    if (values && values.length > 0) {
      const seen = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
      if (seen.size === 1) {
        const only = [...seen][0];
        if (only === 'string' || only === 'integer' || only === 'number' || only === 'boolean') return only;
      }
    }
  }
  return 'any';
}

/** `string`, `integer`, `array<string>`, `one of a|b|c`, ... */
export function typeLabel(schema: JsonSchema | undefined): string {
  if (schema?.enum && schema.enum.length > 0) return `one of ${schema.enum.map((v) => String(v)).join('|')}`;
  if (schema?.const !== undefined) return `exactly ${JSON.stringify(schema.const)}`;
  const kind = kindOf(schema);
  const nullable = Array.isArray(schema?.type) && schema.type.includes('null') && kind !== 'null';
  const label = kind === 'array' ? `array<${typeLabel(schema?.items).replace(/^one of /, '')}>` : kind;
  return nullable ? `${label} or null` : label;
}

export interface ArgumentHelp {
  name: string;
  type: string;
  required: boolean;
  default?: unknown;
  description?: string;
}

/** Each argument of `schema`: the required ones first, then by name (stores may reorder keys). */
export function describeArguments(schema: JsonSchema | undefined): ArgumentHelp[] {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {})
    .map(([name, property]) => ({
      name,
      type: typeLabel(property),
      required: required.has(name),
      ...(property.default !== undefined && { default: property.default }),
      ...(property.description !== undefined && { description: property.description }),
    }))
    .sort(
      (a, b) => Number(b.required) - Number(a.required) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
}

/** The value of `--name` for a schema of `kind`; throws UsageError naming the flag. */
function parseValue(flag: string, raw: string, schema: JsonSchema | undefined): unknown {
  const kind = kindOf(schema);
  const fail = (expected: string): never => {
    throw new UsageError(`--${flag} expects ${expected}, not "${raw}"`);
  };
  if (raw === 'null' && Array.isArray(schema?.type) && schema.type.includes('null')) return null;
  let value: unknown;
  switch (kind) {
    case 'string':
      value = raw;
      break;
    case 'integer':
      if (!/^-?\d+$/.test(raw.trim())) fail('an integer');
      value = Number(raw.trim());
      break;
    case 'number': {
      const number = raw.trim() === '' ? NaN : Number(raw.trim());
      if (!Number.isFinite(number)) fail('a number');
      value = number;
      break;
    }
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') fail('true or false');
      value = raw === 'true';
      break;
    case 'object':
      value = parseJson(flag, raw);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('a JSON object');
      break;
    case 'null':
      if (raw !== 'null') fail('null');
      value = null;
      break;
    case 'array':
      // One element; parseFlags gathers them (or takes a whole JSON array).
      value = parseValue(flag, raw, schema?.items);
      break;
    default:
      // No usable type: JSON when it parses as JSON, else the text.
      try {
        value = JSON.parse(raw);
      } catch {
        value = raw;
      }
  }
  if (kind !== 'array' && schema?.enum && !schema.enum.some((e) => e === value)) {
    fail(`one of ${schema.enum.map((v) => String(v)).join('|')}`);
  }
  return value;
}

function parseJson(flag: string, raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`--${flag} expects JSON: ${(error as Error).message}`);
  }
}

export interface ParsedFlags {
  /** `--json '{...}'`: the whole arguments object. */
  json?: Record<string, unknown>;
  values: Record<string, unknown>;
}

/**
 * `--name value ...` typed by `schema`. A flag the schema does not have is a usage error (the
 * message lists the ones it has); so is a missing required one (unless `--json` is used).
 */
export function parseToolFlags(tool: string, argv: string[], schema: JsonSchema | undefined): ParsedFlags {
  const properties = schema?.properties ?? {};
  const values: Record<string, unknown> = {};
  const arrays = new Map<string, unknown[]>();
  let json: Record<string, unknown> | undefined;
  const known = Object.keys(properties);
  const list = known.length === 0 ? 'it takes no arguments' : `its arguments: ${known.join(', ')}`;

  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (!arg.startsWith('--') || arg === '--') {
      throw new UsageError(`unexpected "${arg}": arguments are given as --name value`);
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let raw = eq === -1 ? undefined : arg.slice(eq + 1);
    if (name === 'json') {
      raw ??= argv[++i];
      if (raw === undefined) throw new UsageError('--json needs a JSON object');
      const parsed = parseJson('json', raw);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new UsageError('--json expects a JSON object (the whole arguments)');
      }
      json = parsed as Record<string, unknown>;
      continue;
    }
    if (!Object.hasOwn(properties, name)) {
      const hint = name === 'caller' ? '; to choose the caller, put --caller before the command' : '';
      throw new UsageError(`${tool} has no argument "${name}" (${list})${hint}`);
    }
    const property = properties[name];
    const kind = kindOf(property);
    if (raw === undefined) {
      const next = argv[i + 1];
      // A bare boolean flag is true.
      if (kind === 'boolean' && (next === undefined || next.startsWith('--'))) raw = 'true';
      else {
        if (next === undefined) throw new UsageError(`--${name} needs a value (${typeLabel(property)})`);
        raw = next;
        i += 1;
      }
    }
    if (kind === 'array') {
      const gathered = arrays.get(name) ?? [];
      // A JSON array is the elements; anything else one element (repeat the flag for more).
      const whole = raw.trimStart().startsWith('[') ? jsonArray(raw) : undefined;
      if (whole) gathered.push(...whole);
      else if (kindOf(property?.items) !== 'string' && raw.trimStart().startsWith('[')) {
        throw new UsageError(`--${name} expects a JSON array or one element: "${raw}" is not JSON`);
      } else gathered.push(parseValue(name, raw, property));
      arrays.set(name, gathered);
      continue;
    }
    if (Object.hasOwn(values, name)) throw new UsageError(`--${name} is given twice`);
    values[name] = parseValue(name, raw, property);
  }
  for (const [name, items] of arrays) values[name] = items;

  if (json !== undefined) {
    if (Object.keys(values).length > 0) {
      throw new UsageError(
        '--json takes the whole arguments object: give either --json or --name value flags',
      );
    }
    return { json, values };
  }
  const missing = (schema?.required ?? []).filter((name) => !Object.hasOwn(values, name));
  if (missing.length > 0) {
    throw new UsageError(`${tool} needs ${missing.map((name) => `--${name}`).join(', ')}`);
  }
  return { values };
}

function jsonArray(raw: string): unknown[] | undefined {
  try {
    const parsed = JSON.parse(raw) as unknown;
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** `--name value` pairs as strings (a prompt's arguments). */
export function parseStringFlags(argv: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (!arg.startsWith('--') || arg === '--') {
      throw new UsageError(`unexpected "${arg}": arguments are given as --name value`);
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (name === '' || value === undefined) throw new UsageError(`${arg} needs a value`);
    if (Object.hasOwn(values, name)) throw new UsageError(`--${name} is given twice`);
    values[name] = value;
  }
  return values;
}

/** Names close to `wanted` (a typo, or a part of one), best first. */
export function closeMatches(wanted: string, names: string[]): string[] {
  const lower = wanted.toLowerCase();
  return names
    .map((name) => ({ name, distance: editDistance(lower, name.toLowerCase()) }))
    .filter(
      ({ name, distance }) =>
        distance <= Math.max(2, Math.floor(wanted.length / 3)) ||
        (lower.length >= 3 && name.toLowerCase().includes(lower)),
    )
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, 3)
    .map(({ name }) => name);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      row[j] = Math.min(
        previous[j]! + 1,
        row[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = row;
  }
  return previous[b.length]!;
}
