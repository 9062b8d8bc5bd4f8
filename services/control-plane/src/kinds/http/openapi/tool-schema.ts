/**
 * An OpenAPI schema (3.1, resolved) turned into a JSON Schema a tool's arguments can be checked
 * against (draft 2020-12, the project's strict Ajv set-up): a copy keeping only JSON Schema
 * keywords with well-formed values, formats the validator knows, no vendor extensions, OpenAPI-only
 * keywords (`discriminator`, `xml`) or `$ref`s left unresolved (those accept any value).
 *
 * Resolved documents share subtrees and may be recursive, so the copy cuts a schema that contains
 * itself where it recurs, and keeps within a budget of nodes and a nesting depth: a schema past
 * the depth keeps its `type`, `title` and `description` and accepts any content. Callers retry with
 * a smaller depth when the budget runs out (toolSchemaWithin).
 */

export type JsonObject = Record<string, unknown>;

export interface SchemaCopyState {
  /** Nodes left in the budget; the copy throws BudgetSpent below zero. */
  nodes: number;
  /** Deepest JSON nesting a copied schema may reach. */
  maxDepth: number;
  /** `$ref`s found unresolved (external ones, or local ones pointing at nothing). */
  unresolved: Set<string>;
  /** True once something was cut at maxDepth or at a recursion. */
  cut: boolean;
  /** Drop `pattern` and `format`: the fallback when the strict validator refuses the copy. */
  loose: boolean;
}

export class BudgetSpent extends Error {}

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
// ajv-formats' full set: any other format would be refused by the validator (strictSchema).
const FORMATS = new Set(
  (
    'date time date-time iso-time iso-date-time duration uri uri-reference uri-template url email hostname ' +
    'ipv4 ipv6 regex uuid json-pointer json-pointer-uri-fragment relative-json-pointer byte int32 int64 ' +
    'float double password binary'
  ).split(' '),
);
const SCHEMA_KEYWORDS = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
];
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', 'dependentSchemas'];
const SCHEMA_LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const NUMBER_KEYWORDS = ['maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum'];
const COUNT_KEYWORDS = [
  'maxLength',
  'minLength',
  'maxItems',
  'minItems',
  'maxProperties',
  'minProperties',
  'maxContains',
  'minContains',
];
const BOOLEAN_KEYWORDS = ['uniqueItems', 'deprecated', 'readOnly', 'writeOnly'];
const TEXT_KEYWORDS = ['title', 'contentMediaType', 'contentEncoding'];
const MAX_DESCRIPTION = 1000;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Sets `key` as an own property even when it is "__proto__" (never reached: dropped on load). */
function put(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function spend(state: SchemaCopyState, count = 1): void {
  state.nodes -= count;
  if (state.nodes < 0) throw new BudgetSpent();
}

/** A deep copy of a JSON value (default, const, enum, examples), charged to the budget. */
function copyValue(value: unknown, state: SchemaCopyState, depth: number, seen: Set<object>): unknown {
  spend(state);
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value) || depth >= state.maxDepth) {
    state.cut = true;
    return null;
  }
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => copyValue(item, state, depth + 1, seen));
    const copy: JsonObject = {};
    for (const [key, item] of Object.entries(value)) put(copy, key, copyValue(item, state, depth + 1, seen));
    return copy;
  } finally {
    seen.delete(value);
  }
}

/** Type, title and description only: what a schema keeps where the copy stops. */
function summary(source: JsonObject): JsonObject {
  const kept: JsonObject = {};
  if (typeof source.type === 'string' && TYPES.has(source.type)) kept.type = source.type;
  if (typeof source.title === 'string') kept.title = source.title;
  if (typeof source.description === 'string') kept.description = source.description.slice(0, MAX_DESCRIPTION);
  return kept;
}

/**
 * The copy of schema `source` at JSON depth `depth`; `ancestors` are the source objects being
 * copied around it (a schema met again inside itself is a recursion). `dropReadOnly` leaves out
 * properties marked `readOnly` (a request never sends them).
 */
export function copySchema(
  source: unknown,
  state: SchemaCopyState,
  options: { dropReadOnly?: boolean } = {},
  depth = 0,
  ancestors: Set<object> = new Set(),
): JsonObject | boolean {
  spend(state);
  if (typeof source === 'boolean') return source;
  if (!isObject(source)) return {};
  if (typeof source.$ref === 'string') {
    state.unresolved.add(source.$ref);
    return summary(source);
  }
  if (ancestors.has(source) || depth >= state.maxDepth) {
    state.cut = true;
    return summary(source);
  }
  ancestors.add(source);
  try {
    return copyKeywords(source, state, options, depth, ancestors);
  } finally {
    ancestors.delete(source);
  }
}

function copyKeywords(
  source: JsonObject,
  state: SchemaCopyState,
  options: { dropReadOnly?: boolean },
  depth: number,
  ancestors: Set<object>,
): JsonObject {
  // A resolved recursive schema repeats a whole map of properties (the resolver copies the keys of
  // the target into the referring object, so the map itself is shared): that is a recursion too.
  if (SCHEMA_MAP_KEYWORDS.some((key) => isObject(source[key]) && ancestors.has(source[key] as object))) {
    state.cut = true;
    return summary(source);
  }
  const out: JsonObject = {};
  const child = (value: unknown, extra = 1) =>
    copySchema(value, state, options, depth + 1 + extra, ancestors);
  const map = (value: JsonObject) => {
    ancestors.add(value);
    try {
      const copy: JsonObject = {};
      for (const [name, schema] of Object.entries(value)) {
        if (options.dropReadOnly === true && isObject(schema) && schema.readOnly === true) continue;
        put(copy, name, child(schema));
      }
      return copy;
    } finally {
      ancestors.delete(value);
    }
  };

  const type = source.type;
  if (typeof type === 'string' && TYPES.has(type)) out.type = type;
  else if (
    Array.isArray(type) &&
    type.length > 0 &&
    type.every((t) => typeof t === 'string' && TYPES.has(t))
  ) {
    out.type = [...new Set(type)];
  }
  if (typeof source.description === 'string') out.description = source.description.slice(0, MAX_DESCRIPTION);
  for (const key of TEXT_KEYWORDS) if (typeof source[key] === 'string') out[key] = source[key];
  for (const key of BOOLEAN_KEYWORDS) if (typeof source[key] === 'boolean') out[key] = source[key];
  for (const key of NUMBER_KEYWORDS)
    if (typeof source[key] === 'number' && Number.isFinite(source[key])) out[key] = source[key];
  for (const key of COUNT_KEYWORDS) {
    const value = source[key];
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0) out[key] = value;
  }
  if (typeof source.multipleOf === 'number' && source.multipleOf > 0) out.multipleOf = source.multipleOf;
  if (!state.loose) {
    if (typeof source.pattern === 'string') out.pattern = source.pattern;
    if (typeof source.format === 'string' && FORMATS.has(source.format)) out.format = source.format;
  }
  if (Array.isArray(source.enum) && source.enum.length > 0)
    out.enum = copyValue(source.enum, state, depth + 1, new Set());
  if ('const' in source) out.const = copyValue(source.const, state, depth + 1, new Set());
  if ('default' in source) out.default = copyValue(source.default, state, depth + 1, new Set());
  if (Array.isArray(source.examples))
    out.examples = copyValue(source.examples.slice(0, 3), state, depth + 1, new Set());
  if (Array.isArray(source.required)) {
    const names = source.required.filter((name): name is string => typeof name === 'string');
    if (names.length > 0) out.required = [...new Set(names)];
  }
  if (isObject(source.dependentRequired)) {
    const copy: JsonObject = {};
    for (const [name, list] of Object.entries(source.dependentRequired)) {
      if (Array.isArray(list) && list.every((n) => typeof n === 'string'))
        put(copy, name, [...new Set(list)]);
    }
    out.dependentRequired = copy;
  }

  for (const key of SCHEMA_KEYWORDS) {
    const value = source[key];
    if (key === 'items' && Array.isArray(value)) {
      // Draft 4 tuple form (still in some 3.0 documents): 2020-12 calls it prefixItems.
      out.prefixItems = value.map((item) => child(item));
    } else if (typeof value === 'boolean' || isObject(value)) {
      out[key] = child(value, 0);
    }
  }
  for (const key of SCHEMA_MAP_KEYWORDS) {
    const value = source[key];
    if (isObject(value)) out[key] = map(value);
  }
  for (const key of SCHEMA_LIST_KEYWORDS) {
    const value = source[key];
    if (Array.isArray(value) && value.length > 0) out[key] = value.map((item) => child(item));
  }
  if (options.dropReadOnly === true && Array.isArray(out.required) && isObject(source.properties)) {
    const properties = source.properties;
    out.required = (out.required as string[]).filter(
      (name) => !(isObject(properties[name]) && (properties[name] as JsonObject).readOnly === true),
    );
    if ((out.required as string[]).length === 0) delete out.required;
  }
  return out;
}

/** A fresh copy state. */
export function copyState(maxNodes: number, maxDepth: number, loose: boolean): SchemaCopyState {
  return { nodes: maxNodes, maxDepth, unresolved: new Set(), cut: false, loose };
}

/**
 * Runs `build` with the deepest nesting (from `depths`, deepest first) whose copy fits in
 * `maxNodes`; the last depth is tried without a budget, so something always comes back.
 */
export function toolSchemaWithin<T>(
  maxNodes: number,
  depths: readonly number[],
  loose: boolean,
  build: (state: SchemaCopyState) => T,
): { value: T; state: SchemaCopyState } {
  for (const [index, depth] of depths.entries()) {
    const last = index === depths.length - 1;
    const state = copyState(last ? Number.POSITIVE_INFINITY : maxNodes, depth, loose);
    try {
      return { value: build(state), state };
    } catch (error) {
      if (!(error instanceof BudgetSpent) || last) throw error;
    }
  }
  throw new Error('toolSchemaWithin needs at least one depth');
}
