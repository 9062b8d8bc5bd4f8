/**
 * Input-schema overrides (DESIGN.md §5): a binding may show an agent a narrower schema than the
 * operation's canonical one, never a wider one. "Narrower" is judged structurally on the subset of
 * JSON Schema that overrides may use, so the control plane can refuse a bad override at save time
 * with a message that names the offending keyword.
 */
import { OpError } from './errors.ts';
import { isJsonObject, type JsonSchema } from './json.ts';
import { deepFreeze } from './freeze.ts';
import { parsePointer } from './pointer.ts';
import { PatternRefused } from './schema-pattern.ts';
import {
  compileToolSchema,
  describeSchemaError,
  toolSchemaErrors,
  type SchemaError,
} from './schema-validation.ts';

// Keywords whose effect the checker understands. Anything else (anyOf, $ref, if/then, ...) could
// widen or reshape what is accepted in ways a structural comparison cannot judge, so it is refused.
const SUPPORTED_KEYWORDS: ReadonlySet<string> = new Set([
  '$schema',
  '$comment',
  'title',
  'description',
  'examples',
  'default',
  'type',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'properties',
  'required',
  'additionalProperties',
]);

/**
 * Throws VALIDATION_FAILED, naming the offending keyword path (e.g.
 * `input_schema.properties.limit.maximum`), unless every value `override` accepts is also accepted
 * by `canonical`. An override without `additionalProperties` is read as `additionalProperties: false`.
 * `root` names the override in messages (`input_schema`; `output_schema` for an answer's schema,
 * which narrows by the same rule: every answer it accepts, the tool's own schema accepts).
 */
export function checkSchemaNarrowing(
  canonical: JsonSchema,
  override: JsonSchema,
  root: 'input_schema' | 'output_schema' = 'input_schema',
): void {
  const ROOT = root; // as the name of the override in messages
  if (!isJsonObject(override)) refuse(`${ROOT} must be a JSON Schema object`, ROOT);
  try {
    compileToolSchema(canonical);
  } catch (cause) {
    refuse(
      `${ROOT} cannot narrow the tool's own schema, which Bindery cannot use: ${cause instanceof Error ? cause.message : String(cause)}`,
      ROOT,
    );
  }
  refuseUnsupported(override, ROOT);
  try {
    // Read as the tool's schema is (its dialect, if it names one): the keywords it may use are
    // limited above, so what strict mode would catch besides is an unknown format.
    compileToolSchema(override);
  } catch (cause) {
    if (cause instanceof PatternRefused) {
      throw new OpError('VALIDATION_FAILED', `${ROOT} cannot be used: ${cause.message}`, {
        field: ROOT,
        pattern: cause.pattern,
      });
    }
    refuse(
      `${ROOT} is not a valid JSON Schema: ${cause instanceof Error ? cause.message : String(cause)}`,
      ROOT,
    );
  }
  if (override.type !== 'object') refuse(`${ROOT}.type must be "object"`, `${ROOT}.type`);
  dialects = { canonical: canonical.$schema, override: override.$schema };
  try {
    inlined = { nodes: 0, chars: 0 };
    compare(inlineLocalRefs(canonical, canonical, 0) as JsonSchema, override, ROOT);
  } finally {
    dialects = undefined;
  }
}

// The `$schema`s of the two roots being compared, for their sub-schemas, which are checked on their
// own (set for the span of one synchronous checkSchemaNarrowing call).
let dialects: { canonical: unknown; override: unknown } | undefined;

/** The errors of `value` against a sub-schema of the canonical (`canonical`) or the override. */
function schemaErrors(
  node: JsonSchema,
  value: unknown,
  whose: 'canonical' | 'override' = 'override',
): SchemaError[] {
  const dialect = dialects?.[whose];
  // The canonical's parts are this check's own copy (inlineLocalRefs): made once and frozen; the
  // override's are the caller's, never frozen here.
  const alone =
    typeof dialect !== 'string' || !isJsonObject(node)
      ? node
      : whose === 'canonical'
        ? withDialect(node, dialect)
        : { ...node, $schema: dialect };
  try {
    return toolSchemaErrors(alone as JsonSchema, value);
  } catch {
    // A sub-schema that cannot be read on its own (a `$ref` to a part of its root left unresolved,
    // an `$anchor`): the value is judged at each call, against the whole schema (checkArguments).
    return [];
  }
}

// How deep local references are followed, and how much inlining may make in all (nodes, and
// characters of the referenced parts): a recursive schema stops there (read as `{}`, any value,
// which the call-time check against the whole schema still judges), and a schema referring to
// large parts of itself many times cannot make the copy blow up.
const MAX_REF_DEPTH = 16;
const MAX_INLINED_NODES = 20_000;
const MAX_INLINED_CHARS = 1_000_000;
let inlined = { nodes: 0, chars: 0 };

// Keywords whose values are data, not schemas: a `{"$ref": ...}` there is a value, left as it is.
const DATA_KEYWORDS: ReadonlySet<string> = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * `schema` with its local references (`{"$ref": "#/definitions/x"}`, `#/$defs/x`) replaced by what
 * they point at in `root`, so a sub-schema can be compared, and checked, on its own.
 */
function inlineLocalRefs(node: unknown, root: JsonSchema, depth: number): unknown {
  inlined.nodes += 1;
  if (inlined.nodes > MAX_INLINED_NODES || inlined.chars > MAX_INLINED_CHARS) return {};
  if (Array.isArray(node)) return node.map((item) => inlineLocalRefs(item, root, depth));
  if (!isJsonObject(node)) return node;
  if (typeof node.$ref === 'string' && node.$ref.startsWith('#/')) {
    if (depth >= MAX_REF_DEPTH) return {};
    const target = pointedAt(root, node.$ref);
    if (!isJsonObject(target)) return {};
    inlined.chars += JSON.stringify(target).length;
    if (inlined.chars > MAX_INLINED_CHARS) return {};
    const { $ref: _ref, ...siblings } = node;
    return inlineLocalRefs({ ...target, ...siblings }, root, depth + 1);
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      DATA_KEYWORDS.has(key) ? value : inlineLocalRefs(value, root, depth),
    ]),
  );
}

/** What a `#/...` JSON Pointer names in `root`; undefined for one that names nothing or is malformed. */
function pointedAt(root: JsonSchema, ref: string): unknown {
  let tokens: string[];
  try {
    // The fragment percent-decoded is an RFC 6901 pointer.
    tokens = parsePointer(decodeURIComponent(ref.slice(1)));
  } catch {
    return undefined;
  }
  let target: unknown = root;
  for (const key of tokens) {
    target = isJsonObject(target) && Object.hasOwn(target, key) ? target[key] : undefined;
  }
  return target;
}

// A sub-schema with its root's dialect, made once per sub-schema and frozen: checking many values
// against it (an override's enum) compiles and keys it once (schema-validation.ts keyOf).
const withDialects = new WeakMap<object, JsonSchema>();
function withDialect(node: JsonSchema & object, dialect: string): JsonSchema {
  let made = withDialects.get(node);
  if (made === undefined) {
    made = deepFreeze({ ...node, $schema: dialect }) as JsonSchema;
    withDialects.set(node, made);
  }
  return made;
}

function refuse(message: string, path: string): never {
  throw new OpError('VALIDATION_FAILED', message, { field: path });
}

function refuseUnsupported(schema: unknown, path: string): void {
  if (!isJsonObject(schema)) return;
  for (const keyword of Object.keys(schema)) {
    if (!SUPPORTED_KEYWORDS.has(keyword)) {
      refuse(
        `${path}.${keyword} is not supported in an input-schema override (supported: ${[...SUPPORTED_KEYWORDS].join(', ')})`,
        `${path}.${keyword}`,
      );
    }
  }
  if (isJsonObject(schema.properties)) {
    for (const [name, property] of Object.entries(schema.properties)) {
      refuseUnsupported(property, `${path}.properties.${name}`);
    }
  }
  refuseUnsupported(schema.items, `${path}.items`);
  refuseUnsupported(schema.additionalProperties, `${path}.additionalProperties`);
}

// Structural checks come first and the default last: a default is only worth discussing once the
// shape around it is known to be narrower.
// `required`: the override makes this property required, so no default ever applies to it.
function compare(canonical: JsonSchema, override: JsonSchema, path: string, required = false): void {
  if ('enum' in override || 'const' in override) {
    // Every accepted value is listed, and each was checked against the canonical schema: bounds,
    // patterns and types have nothing left to widen.
    checkListedValues(canonical, override, path);
    checkDefault(canonical, override, path, required);
    return;
  }
  if ('enum' in canonical || 'const' in canonical) {
    refuse(`${path} must keep an enum or const: the canonical schema only accepts listed values`, path);
  }
  checkTypes(canonical, override, path);
  checkLowerBound(canonical, override, path, 'minimum', 'exclusiveMinimum');
  checkUpperBound(canonical, override, path, 'maximum', 'exclusiveMaximum');
  checkLowerBound(canonical, override, path, 'minLength');
  checkUpperBound(canonical, override, path, 'maxLength');
  checkLowerBound(canonical, override, path, 'minItems');
  checkUpperBound(canonical, override, path, 'maxItems');
  checkMultipleOf(canonical, override, path);
  for (const keyword of ['pattern', 'format'] as const) {
    if (keyword in canonical && override[keyword] !== canonical[keyword]) {
      refuse(
        `${path}.${keyword} must stay ${JSON.stringify(canonical[keyword])} as in the canonical schema`,
        `${path}.${keyword}`,
      );
    }
  }
  if (canonical.uniqueItems === true && override.uniqueItems !== true) {
    refuse(`${path}.uniqueItems must stay true as in the canonical schema`, `${path}.uniqueItems`);
  }
  checkItems(canonical, override, path);
  checkObject(canonical, override, path);
  checkDefault(canonical, override, path, required);
}

function checkDefault(canonical: JsonSchema, override: JsonSchema, path: string, required: boolean): void {
  if (!('default' in override)) {
    // The engine applies the canonical default when an optional argument is left out, so that
    // default must be one the override accepts, or the override must bring its own (or require it).
    if (!required && 'default' in canonical && schemaErrors(override, canonical.default).length > 0) {
      refuse(
        `${path}.default is missing: the canonical default ${JSON.stringify(canonical.default)} is outside this override, so give one it accepts or make the property required`,
        `${path}.default`,
      );
    }
    return;
  }
  const value = override.default;
  const [againstCanonical] = schemaErrors(canonical, value, 'canonical');
  if (againstCanonical !== undefined) {
    refuse(
      `${path}.default ${JSON.stringify(value)} is not accepted by the canonical schema: ${describeSchemaError(againstCanonical, 'value')}`,
      `${path}.default`,
    );
  }
  const [againstOverride] = schemaErrors(override, value);
  if (againstOverride !== undefined) {
    refuse(
      `${path}.default ${JSON.stringify(value)} does not satisfy the override itself: ${describeSchemaError(againstOverride, 'value')}`,
      `${path}.default`,
    );
  }
}

function checkListedValues(canonical: JsonSchema, override: JsonSchema, path: string): void {
  const listed: [string, unknown][] = [];
  if ('const' in override) listed.push(['const', override.const]);
  if (Array.isArray(override.enum)) override.enum.forEach((value, i) => listed.push([`enum[${i}]`, value]));
  for (const [where, value] of listed) {
    const [error] = schemaErrors(canonical, value, 'canonical');
    if (error !== undefined) {
      refuse(
        `${path}.${where} ${JSON.stringify(value)} is not accepted by the canonical schema: ${describeSchemaError(error, 'value')}`,
        `${path}.${where.replace(/\[\d+\]$/, '')}`,
      );
    }
  }
}

function typesOf(schema: JsonSchema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type))
    return schema.type.filter((type): type is string => typeof type === 'string');
  return undefined;
}

function checkTypes(canonical: JsonSchema, override: JsonSchema, path: string): void {
  const allowed = typesOf(canonical);
  if (allowed === undefined) return;
  const types = typesOf(override);
  const shown = allowed.length === 1 ? `"${allowed[0]}"` : JSON.stringify(allowed);
  if (types === undefined) {
    refuse(
      `${path}.type is missing: the canonical type is ${shown} and an override may only narrow it`,
      `${path}.type`,
    );
  }
  for (const type of types) {
    // Every integer is a number, so narrowing number to integer is fine; the reverse is not.
    if (!allowed.includes(type) && !(type === 'integer' && allowed.includes('number'))) {
      refuse(`${path}.type "${type}" is not allowed by the canonical type ${shown}`, `${path}.type`);
    }
  }
}

interface Bound {
  keyword: string;
  value: number;
  exclusive: boolean;
}

// The strongest of an inclusive and an exclusive bound, e.g. minimum 1 with exclusiveMinimum 1.
function boundOf(
  schema: JsonSchema,
  inclusive: string,
  exclusive: string | undefined,
  lower: boolean,
): Bound | undefined {
  const candidates: Bound[] = [];
  if (typeof schema[inclusive] === 'number') {
    candidates.push({ keyword: inclusive, value: schema[inclusive], exclusive: false });
  }
  if (exclusive !== undefined && typeof schema[exclusive] === 'number') {
    candidates.push({ keyword: exclusive, value: schema[exclusive], exclusive: true });
  }
  return candidates.reduce<Bound | undefined>((best, bound) => {
    if (best === undefined) return bound;
    if (bound.value !== best.value)
      return (lower ? bound.value > best.value : bound.value < best.value) ? bound : best;
    return bound.exclusive ? bound : best;
  }, undefined);
}

function checkLowerBound(
  canonical: JsonSchema,
  override: JsonSchema,
  path: string,
  inclusive: string,
  exclusive?: string,
) {
  checkBound(canonical, override, path, inclusive, exclusive, true);
}

function checkUpperBound(
  canonical: JsonSchema,
  override: JsonSchema,
  path: string,
  inclusive: string,
  exclusive?: string,
) {
  checkBound(canonical, override, path, inclusive, exclusive, false);
}

function checkBound(
  canonical: JsonSchema,
  override: JsonSchema,
  path: string,
  inclusive: string,
  exclusive: string | undefined,
  lower: boolean,
): void {
  const limit = boundOf(canonical, inclusive, exclusive, lower);
  if (limit === undefined) return;
  const bound = boundOf(override, inclusive, exclusive, lower);
  if (bound === undefined) {
    refuse(
      `${path}.${limit.keyword} is missing: the canonical ${limit.keyword} is ${limit.value} and an override may only keep or tighten it`,
      `${path}.${limit.keyword}`,
    );
  }
  const looser =
    (lower ? bound.value < limit.value : bound.value > limit.value) ||
    (bound.value === limit.value && limit.exclusive && !bound.exclusive);
  if (looser) {
    refuse(
      `${path}.${bound.keyword} ${bound.value} is looser than the canonical ${limit.keyword} ${limit.value}`,
      `${path}.${bound.keyword}`,
    );
  }
}

function checkMultipleOf(canonical: JsonSchema, override: JsonSchema, path: string): void {
  if (typeof canonical.multipleOf !== 'number') return;
  const ratio =
    typeof override.multipleOf === 'number' ? override.multipleOf / canonical.multipleOf : Number.NaN;
  if (!Number.isInteger(ratio)) {
    refuse(
      `${path}.multipleOf must be a multiple of the canonical multipleOf ${canonical.multipleOf}`,
      `${path}.multipleOf`,
    );
  }
}

function checkItems(canonical: JsonSchema, override: JsonSchema, path: string): void {
  const canonicalItems = isJsonObject(canonical.items) ? canonical.items : undefined;
  const items = isJsonObject(override.items) ? override.items : undefined;
  if (items === undefined) {
    if (canonicalItems !== undefined) {
      refuse(`${path}.items is missing: the canonical schema constrains the items`, `${path}.items`);
    }
    return;
  }
  compare(canonicalItems ?? {}, items, `${path}.items`);
}

function checkObject(canonical: JsonSchema, override: JsonSchema, path: string): void {
  const canonicalProperties = isJsonObject(canonical.properties) ? canonical.properties : {};
  const properties = isJsonObject(override.properties) ? override.properties : {};
  const canonicalRequired = stringList(canonical.required);
  const required = stringList(override.required);
  // An absent additionalProperties in an override is read as false: the engine refuses unknown
  // arguments against the canonical schema anyway, and it spares every override writer a line.
  const additional = override.additionalProperties ?? false;
  const canonicalAdditional = canonical.additionalProperties ?? true;

  for (const [name, property] of Object.entries(properties)) {
    const where = `${path}.properties.${name}`;
    if (!isJsonObject(property)) refuse(`${where} must be a schema object`, where);
    let counterpart: unknown = Object.hasOwn(canonicalProperties, name)
      ? canonicalProperties[name]
      : undefined;
    if (counterpart === undefined) {
      if (canonicalAdditional === false) {
        const known = Object.keys(canonicalProperties);
        refuse(
          `${where} is not a property of the canonical schema (it has: ${known.length > 0 ? known.join(', ') : 'none'})`,
          where,
        );
      }
      counterpart = isJsonObject(canonicalAdditional) ? canonicalAdditional : {};
    }
    compare(isJsonObject(counterpart) ? counterpart : {}, property, where, required.includes(name));
  }
  for (const name of canonicalRequired) {
    if (!Object.hasOwn(properties, name)) {
      refuse(
        `${path}.properties.${name} is required by the canonical schema and cannot be dropped`,
        `${path}.properties.${name}`,
      );
    }
    if (!required.includes(name)) {
      refuse(
        `${path}.required must include "${name}", which the canonical schema requires`,
        `${path}.required`,
      );
    }
  }
  for (const name of required) {
    if (!Object.hasOwn(properties, name) && additional === false) {
      refuse(`${path}.required lists "${name}", which is not among ${path}.properties`, `${path}.required`);
    }
  }
  if (additional !== false) {
    if (canonicalAdditional === false) {
      refuse(
        `${path}.additionalProperties must be false (or left out): the canonical schema accepts no other properties`,
        `${path}.additionalProperties`,
      );
    }
    if (isJsonObject(additional)) {
      compare(
        isJsonObject(canonicalAdditional) ? canonicalAdditional : {},
        additional,
        `${path}.additionalProperties`,
      );
    } else if (isJsonObject(canonicalAdditional)) {
      refuse(
        `${path}.additionalProperties must be false or a schema within the canonical one`,
        `${path}.additionalProperties`,
      );
    }
  }
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}
