/**
 * A tool's arguments on a command line, typed by its input schema and read with Node's
 * util.parseArgs: `--name value` pairs (also `--name=value`, the only way for a value starting
 * with "-"), integers and numbers parsed, booleans `true`/`false` (a bare flag is true), arrays by
 * repeating the flag or as one JSON array, objects as JSON. And the other way round: each argument
 * described for `bindery help <tool>`.
 */
import { parseArgs } from 'node:util';
import type { JsonSchema } from './rest.ts';
import { UsageError } from './settings.ts';

// The grammar is also the control plane's sidebar's (`call TOOL --name value`): what it needs with it.
export { UsageError, type JsonSchema };

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
      // One element; parseToolFlags gathers them (or takes a whole JSON array).
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

const unexpected = (arg: string) =>
  new UsageError(`unexpected "${arg}": arguments are given as --name value`);
const needsValue = (name: string, what: string) =>
  `--${name} needs a value (${what}); one that starts with "-" goes as --${name}=<value>`;

/**
 * parseArgs' refusal as a UsageError: `unknown` words a flag as given, `badValue` an option's name.
 * The flag is read from Node's message; should its wording change, the message is used as it is.
 */
export function flagError(
  error: unknown,
  unknown: (flag: string) => string,
  badValue: (name: string) => string,
): Error {
  const { code, message } = error as { code?: unknown; message: string };
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return error as Error;
  const flag = /'(.*?)'/.exec(message)?.[1];
  if (flag === undefined) return new UsageError(message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new UsageError(unknown(flag));
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return new UsageError(badValue(flag.replace(/^--| .*$/g, '')));
  return unexpected(/'(.*)'\. /s.exec(message)?.[1] ?? flag);
}

/**
 * `--name value ...` typed by `schema`, through util.parseArgs: each property a string option, and
 * `--json`; all `multiple`, to refuse a repeated one that is not an array. A flag the schema does
 * not have is a usage error (listing the ones it has); so is a missing required one (unless `--json`).
 */
export function parseToolFlags(tool: string, argv: string[], schema: JsonSchema | undefined): ParsedFlags {
  const properties = schema?.properties ?? {};
  const known = Object.keys(properties);
  const list = known.length === 0 ? 'it takes no arguments' : `its arguments: ${known.join(', ')}`;
  const options: Record<string, { type: 'string'; multiple: true }> = Object.fromEntries(
    [...known, 'json'].map((name) => [name, { type: 'string', multiple: true }]),
  );
  // A bare boolean flag is true (parseArgs would take the next flag for its value).
  const args = argv.map((arg, i) =>
    arg.startsWith('--') &&
    kindOf(properties[arg.slice(2)]) === 'boolean' &&
    (argv[i + 1]?.startsWith('-') ?? true)
      ? `${arg}=true`
      : arg,
  );
  let given: Record<string, string[] | undefined>;
  try {
    given = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw flagError(
      error,
      (flag) =>
        !flag.startsWith('--') || flag.includes('=')
          ? unexpected(flag).message
          : `${tool} has no argument "${flag.slice(2)}" (${list})${flag === '--caller' ? '; to choose the caller, put --caller before the command' : ''}`,
      (name) => needsValue(name, name === 'json' ? 'a JSON object' : typeLabel(properties[name])),
    );
  }
  const values: Record<string, unknown> = {};
  for (const [name, raws = []] of Object.entries(given)) {
    // `--json` is the whole arguments object.
    const property = name === 'json' ? { type: 'object' } : properties[name];
    if (kindOf(property) !== 'array') {
      if (raws.length > 1) throw new UsageError(`--${name} is given twice`);
      values[name] = parseValue(name, raws[0]!, property);
      continue;
    }
    // A JSON array is the elements; anything else one element (repeat the flag for more).
    values[name] = raws.flatMap((raw) => {
      const elements = raw.trimStart().startsWith('[') ? jsonArray(raw) : undefined;
      if (elements) return elements;
      if (kindOf(property?.items) !== 'string' && raw.trimStart().startsWith('[')) {
        throw new UsageError(`--${name} expects a JSON array or one element: "${raw}" is not JSON`);
      }
      return [parseValue(name, raw, property)];
    });
  }
  const { json, ...flags } = values;
  if (json !== undefined) {
    if (Object.keys(flags).length > 0) {
      throw new UsageError(
        '--json takes the whole arguments object: give either --json or --name value flags',
      );
    }
    return { json: json as Record<string, unknown>, values: flags };
  }
  const missing = (schema?.required ?? []).filter((name) => !Object.hasOwn(flags, name));
  if (missing.length > 0) {
    throw new UsageError(`${tool} needs ${missing.map((name) => `--${name}`).join(', ')}`);
  }
  return { values: flags };
}

function jsonArray(raw: string): unknown[] | undefined {
  try {
    const parsed = JSON.parse(raw) as unknown;
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `--name value` pairs as strings (a prompt's arguments, not known beforehand): parseArgs' tokens
 * without options, an option and the positional after it a pair; a flag without a value refused.
 */
export function parseStringFlags(argv: string[]): Record<string, string> {
  const { tokens } = parseArgs({ args: argv, strict: false, tokens: true });
  const values: Record<string, string> = {};
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i]!;
    if (token.kind !== 'option' || !token.rawName.startsWith('--') || token.name === '') {
      throw unexpected(argv[token.index]!);
    }
    let value = token.value;
    const next = tokens[i + 1];
    if (value === undefined && next?.kind === 'positional') {
      value = next.value;
      i += 1;
    }
    if (value === undefined) throw new UsageError(needsValue(token.name, 'a string'));
    if (Object.hasOwn(values, token.name)) throw new UsageError(`--${token.name} is given twice`);
    values[token.name] = value;
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
