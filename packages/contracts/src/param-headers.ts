/**
 * Tool parameters mirrored into HTTP headers (MCP 2026-07-28, `basic/transports/streamable-http.mdx`,
 * "Custom Headers from Tool Parameters", SEP-2243). A tool's `inputSchema` may mark a primitive
 * property with `x-mcp-header: "Region"`; a client on Streamable HTTP then sends the argument's
 * value as `Mcp-Param-Region`, and a server that reads the body refuses a request whose header is
 * missing or says otherwise (400, HeaderMismatch -32020), so that a load balancer routing on the
 * header and the server acting on the body cannot disagree.
 *
 * The reference SDK does this inside its client and server but exports none of it, and Bindery
 * needs it in four places (the gateway's check, the upstream client's headers, the stdio relay's
 * headers, the sync that refuses a tool whose marks break the rules), so it is written here once,
 * from the spec's text, and behaves as the SDK does where the spec leaves room (a header for a
 * value the body lacks is ignored; integers compare as numbers).
 */

/** The schema keyword that marks a property. */
export const X_MCP_HEADER = 'x-mcp-header';
/** The prefix of a mirrored parameter's header (names compare case-insensitively). */
export const PARAM_HEADER_PREFIX = 'Mcp-Param-';

/** One marked property: where it sits in the arguments and the header it travels in. */
export interface HeaderParam {
  /** The chain of `properties` keys from the schema's root. */
  path: readonly string[];
  /** The header's whole name, `Mcp-Param-{mark}`. */
  header: string;
  type: 'string' | 'integer' | 'boolean';
}

/** What a tool's marks are: the parameters they mirror, or the first rule they break. */
export type HeaderParams = { ok: true; params: readonly HeaderParam[] } | { ok: false; reason: string };

// RFC 9110 section 5.1: a field name is a token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'boolean']);
// Keywords whose subschemas are not reached by a chain of `properties` keys: a mark under any of
// them makes the tool invalid ("reachable via a chain consisting solely of properties keys").
const UNREACHABLE = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
] as const;
const NAMED_SUBSCHEMAS: ReadonlySet<string> = new Set([
  'patternProperties',
  'dependentSchemas',
  '$defs',
  'definitions',
]);
// Deeper than any schema a tool could mean; a cycle of shared objects would otherwise never end.
const MAX_DEPTH = 64;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const pathName = (path: readonly string[]) => (path.length === 0 ? 'the schema root' : path.join('.'));

const scans = new WeakMap<object, HeaderParams>();

/**
 * The parameters `inputSchema` marks with `x-mcp-header`, or the first rule a mark breaks (the
 * spec's constraints: a non-empty token, unique regardless of case, on a string, integer or boolean
 * property reached from the root through `properties` alone). Remembered per schema object.
 */
export function headerParamsOf(inputSchema: unknown): HeaderParams {
  if (!isObject(inputSchema)) return { ok: true, params: [] };
  const known = scans.get(inputSchema);
  if (known) return known;
  const params: HeaderParam[] = [];
  const seen = new Map<string, string>();
  const visit = (node: unknown, path: string[], reachable: boolean, depth: number): string | undefined => {
    if (!isObject(node)) return undefined;
    if (depth > MAX_DEPTH) return `the schema nests deeper than ${MAX_DEPTH} levels`;
    if (Object.hasOwn(node, X_MCP_HEADER)) {
      const mark = node[X_MCP_HEADER];
      if (!reachable || path.length === 0) {
        return `${pathName(path)}: ${X_MCP_HEADER} may only mark a property reached from the root through "properties" alone (not under items, additionalProperties, oneOf/anyOf/allOf/not, if/then/else or $defs)`;
      }
      if (typeof mark !== 'string' || mark === '')
        return `${pathName(path)}: ${X_MCP_HEADER} must be a non-empty string`;
      if (!TOKEN.test(mark)) {
        return `${pathName(path)}: ${X_MCP_HEADER} ${JSON.stringify(mark.slice(0, 80))} is not an HTTP field-name token (RFC 9110 section 5.1)`;
      }
      const type = typeof node.type === 'string' ? node.type : undefined;
      if (type === undefined || !TYPES.has(type)) {
        return `${pathName(path)}: ${X_MCP_HEADER} may only mark a string, integer or boolean property, not ${type === undefined ? 'one without a single type' : `one of type ${type}`}`;
      }
      const lower = mark.toLowerCase();
      const prior = seen.get(lower);
      if (prior !== undefined)
        return `${X_MCP_HEADER} "${mark}" is used twice (also as "${prior}"; names are compared regardless of case)`;
      seen.set(lower, mark);
      params.push({
        path: [...path],
        header: `${PARAM_HEADER_PREFIX}${mark}`,
        type: type as HeaderParam['type'],
      });
    }
    if (isObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable, depth + 1);
        if (fault !== undefined) return fault;
      }
    }
    for (const keyword of UNREACHABLE) {
      const sub = node[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : NAMED_SUBSCHEMAS.has(keyword) && isObject(sub)
          ? Object.values(sub)
          : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false, depth + 1);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true, 0);
  const scan: HeaderParams = fault === undefined ? { ok: true, params } : { ok: false, reason: fault };
  scans.set(inputSchema, scan);
  return scan;
}

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
// An integer as a header may write it: digits, and a fraction of zeros at most (`42`, `42.0`).
const INTEGER_TEXT = /^-?\d+(\.0+)?$/;
// TextEncoder, btoa and atob rather than Buffer: this package is the console's too.
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

const isSentinel = (value: string) =>
  value.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length &&
  value.startsWith(SENTINEL_PREFIX) &&
  value.endsWith(SENTINEL_SUFFIX);

/** True when every character may stand in a header value as it is (visible ASCII, space, tab). */
function plainHeaderSafe(value: string): boolean {
  for (let i = 0; i < value.length; i += 1) {
    const c = value.charCodeAt(i);
    if (c !== 0x09 && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

/**
 * A value as a header carries it: as it is when it is plain visible ASCII without surrounding
 * whitespace, else `=?base64?{UTF-8 in Base64}?=` (so is a value that looks like that wrapping).
 */
export function encodeHeaderValue(value: string): string {
  const plain = value !== '' && value === value.trim() && !isSentinel(value) && plainHeaderSafe(value);
  if (plain) return value;
  let binary = '';
  for (const byte of utf8.encode(value)) binary += String.fromCharCode(byte);
  return `${SENTINEL_PREFIX}${btoa(binary)}${SENTINEL_SUFFIX}`;
}

/**
 * What a header value says: the wrapped UTF-8 of `=?base64?...?=`, or the value itself. Undefined
 * when the wrapping holds no canonical Base64 of valid UTF-8, or a plain value holds a character a
 * header may not carry: both are refused.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!isSentinel(value)) return plainHeaderSafe(value) ? value : undefined;
  const base64 = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  try {
    // Canonical Base64 is what encoding its bytes gives back: padded, no whitespace, and the unused
    // bits of the last character zero (`SGVsbG9=` is not `SGVsbG8=`). atob throws outside the alphabet.
    const binary = atob(base64);
    if (btoa(binary) !== base64) return undefined;
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Why a header value `decodeHeaderValue` refuses is refused (it names the header, not the value). */
export const undecodableHeader = (header: string): string =>
  `the ${header} header carries characters a header value may not, or a =?base64?...?= value that is not canonical Base64 of UTF-8`;

/** The argument at `path`, if any. */
function valueAt(args: unknown, path: readonly string[]): unknown {
  let node = args;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** A primitive argument as its header text; undefined for what no header can carry. */
function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value)))
      return undefined;
    return String(value);
  }
  return undefined;
}

/**
 * The `Mcp-Param-*` headers of one call of a tool whose marks are `params`: one per marked argument
 * that is present and not null (a value of another kind than the mark's is left out rather than
 * sent malformed).
 */
export function paramHeaders(params: readonly HeaderParam[], args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const param of params) {
    const text = headerText(valueAt(args, param.path));
    if (text !== undefined) headers[param.header] = encodeHeaderValue(text);
  }
  return headers;
}

/**
 * Why the `Mcp-Param-*` headers of a call do not match its arguments, or undefined when they do.
 * `header(name)`: the request's one value of the lowercase header `name` (undefined when absent).
 * A marked argument that is present and not null needs its header, decoded equal to it (integers
 * as numbers: `42.0` is `42`, `42.5` is not); a header for an absent argument is not looked at.
 */
export function paramHeaderMismatch(
  params: readonly HeaderParam[],
  args: unknown,
  header: (lowercaseName: string) => string | undefined,
): string | undefined {
  for (const param of params) {
    const value = valueAt(args, param.path);
    const text = headerText(value);
    if (text === undefined) continue;
    const sent = header(param.header.toLowerCase());
    const where = param.path.join('.');
    if (sent === undefined) return `the ${param.header} header is missing (the arguments carry ${where})`;
    const decoded = decodeHeaderValue(sent);
    if (decoded === undefined) {
      return undecodableHeader(param.header);
    }
    const same =
      param.type === 'integer' && typeof value === 'number' && INTEGER_TEXT.test(decoded)
        ? Number(decoded) === value
        : decoded === text;
    if (!same) return `the ${param.header} header does not match the value of ${where} in the arguments`;
  }
  return undefined;
}
