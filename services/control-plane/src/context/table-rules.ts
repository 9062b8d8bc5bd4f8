/**
 * A table's rules: what every write of its data must keep, whoever makes it (a tool through an
 * exposure, an agent or a person in the sidebar). Four kinds:
 * - `protect`: under a JSON Pointer prefix nothing may change (`write`) or nothing may be removed
 *   (`delete`: a removed key, fewer array items, a container replaced by what lacks its members);
 * - `schema`: the data (or the subtree at `schema_path`) must still satisfy a JSON Schema, read in
 *   the dialect its `$schema` names;
 * - `max_items_per_change`: one write may add, remove or replace at most this many members/items;
 * - `person_only`: paths only a person may change.
 *
 * Rules are checked on what a write changed (context-ops' DataChange list, paths from the table's
 * root) with the context node before and after it, so a write that does not reach a rule's path
 * costs one comparison of paths per change. The schema is checked only when a change reaches its
 * subtree, on the subtree after the change.
 */
import {
  compileToolSchema,
  describeSchemaError,
  formatPointer,
  MAX_CHANGES,
  nodeAtTokens,
  OpError,
  parsePointer,
  PatternRefused,
  type DataChange,
  type JsonSchema,
  type JsonValue,
  type SchemaValidator,
} from '@bindery/context-ops';
import type { RuleDenial, RuleVerdict, TableRules } from '@bindery/contracts';
import { DomainError } from '../domain/errors.ts';

/** Who makes a write: rules treat a person (the console, the admin API) apart from the rest. */
export type Writer = 'tool' | 'agent' | 'person';

interface RulePath {
  pointer: string;
  tokens: string[];
}

export interface CompiledRules {
  protect: (RulePath & { deny: ReadonlySet<RuleDenial> })[];
  schema: (RulePath & { validate: SchemaValidator }) | undefined;
  maxItems: number | undefined;
  personOnly: RulePath[];
}

// An array index as the data's own paths write it; other integer spellings ("-1", "01", "+1")
// reach the same item through PostgreSQL but would not compare equal to it.
const INTEGER_LIKE = /^[\s+-]*[0-9]+\s*$/;
const CANONICAL_INDEX = /^(0|[1-9][0-9]*)$/;

/** Whether `token` spells an array index another way than the data's own paths do. */
export function oddIndex(token: string): boolean {
  return INTEGER_LIKE.test(token) && !CANONICAL_INDEX.test(token);
}

/** The index `token` reaches in `parent` as PostgreSQL's `#>` reads it ("-1": the last item). */
function canonicalToken(token: string, parent: JsonValue | undefined): string {
  if (!Array.isArray(parent) || !oddIndex(token)) return token;
  const index = Number.parseInt(token.trim(), 10);
  return String(index < 0 ? parent.length + index : index);
}

/**
 * `tokens` with every array index spelt as the data's own paths spell it, reading the parents of
 * the odd ones with `read`: `tokens` itself, with no read, when none is odd (the common case).
 */
export async function canonicalPath(
  tokens: string[],
  read: (prefix: string[]) => Promise<JsonValue | undefined>,
): Promise<string[]> {
  if (!tokens.some(oddIndex)) return tokens;
  const out: string[] = [];
  for (const token of tokens) out.push(canonicalToken(token, oddIndex(token) ? await read(out) : undefined));
  return out;
}

function rulePath(pointer: string, field: string): RulePath {
  try {
    const tokens = parsePointer(pointer);
    const odd = tokens.find(oddIndex);
    if (odd !== undefined) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `${field}: "${odd}" in "${pointer}": write array indexes as 0, 1, 2… (rules compare paths as the data writes them)`,
        { field, pointer },
      );
    }
    return { pointer, tokens };
  } catch (error) {
    if (error instanceof DomainError) throw error;
    const reason = error instanceof OpError ? error.message : String(error);
    throw new DomainError('VALIDATION_FAILED', `${field}: "${pointer}" is not a JSON Pointer (${reason})`, {
      field,
      pointer,
    });
  }
}

/** Checks and compiles rules as the admin API received them; VALIDATION_FAILED naming the field. */
export function compileRules(rules: TableRules): CompiledRules {
  const protect = (rules.protect ?? []).map((p, i) => ({
    ...rulePath(p.path, `protect[${i}].path`),
    deny: new Set(p.deny),
  }));
  const personOnly = (rules.person_only ?? []).map((p, i) => rulePath(p, `person_only[${i}]`));
  let schema: CompiledRules['schema'];
  if (rules.schema !== undefined) {
    const at = rulePath(rules.schema_path ?? '', 'schema_path');
    let validate: SchemaValidator;
    try {
      validate = compileToolSchema(rules.schema as JsonSchema);
    } catch (error) {
      if (error instanceof PatternRefused || error instanceof OpError) {
        throw new DomainError('VALIDATION_FAILED', `schema: ${error.message}`, { field: 'schema' });
      }
      throw new DomainError(
        'VALIDATION_FAILED',
        `schema is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`,
        { field: 'schema' },
      );
    }
    schema = { ...at, validate };
  } else if (rules.schema_path !== undefined) {
    throw new DomainError('VALIDATION_FAILED', 'schema_path needs a schema', { field: 'schema_path' });
  }
  return { protect, schema, maxItems: rules.max_items_per_change, personOnly };
}

/** Rules as stored: null for none (`{}`, or only empty lists). */
export function storableRules(rules: TableRules): TableRules | null {
  const empty = Object.values(rules).every((v) => v === undefined || (Array.isArray(v) && v.length === 0));
  return empty ? null : rules;
}

/**
 * Refuses rules whose schema the data does not satisfy already (VALIDATION_FAILED saying where):
 * from then on every write would be refused. A pattern past its budget is the schema's fault.
 */
export function checkDataKeepsRules(rules: CompiledRules, data: JsonValue): void {
  const schema = rules.schema;
  if (schema === undefined) return;
  const subtree = nodeAtTokens(data, schema.tokens);
  let passed: boolean;
  try {
    passed = subtree !== undefined && schema.validate(subtree);
  } catch (error) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `the schema could not be checked on the data: ${error instanceof Error ? error.message : String(error)}`,
      { field: 'schema' },
    );
  }
  if (passed) return;
  const first = schema.validate.errors?.[0];
  throw new DomainError(
    'VALIDATION_FAILED',
    subtree === undefined
      ? `schema_path "${schema.pointer}": the data has nothing there`
      : `the data does not satisfy the schema now${first ? ` (${first.instancePath || '/'} ${first.message ?? first.keyword})` : ''}; fix the data first`,
    { field: 'schema' },
  );
}

// Compiled rules by their stored JSON text: a table's rules are compiled once, not per write.
const compiled = new Map<string, CompiledRules>();
const MAX_COMPILED = 256;

/** The compiled rules stored as `text` (the `rules` column's JSON), or undefined when none. */
export function storedRules(text: string | null | undefined): CompiledRules | undefined {
  if (text === null || text === undefined) return undefined;
  const hit = compiled.get(text);
  if (hit !== undefined) return hit;
  const rules = compileRules(JSON.parse(text) as TableRules);
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value as string);
  compiled.set(text, rules);
  return rules;
}

/** One write as the rules see it: the context it ran on, before and after, and its edits. */
export interface CheckedWrite {
  /** The context's path from the table's root; every edit's path starts with it. */
  at: readonly string[];
  before: JsonValue;
  after: JsonValue;
  changes: readonly DataChange[];
  by: Writer;
}

/**
 * Every rule's verdict on `write` (ok or not). `schemaNode`, when the schema's subtree is not
 * inside the context, gives the subtree after the write (the caller holds the ancestor).
 */
export function ruleVerdicts(
  rules: CompiledRules,
  write: CheckedWrite,
  schemaNode?: () => JsonValue | undefined,
): RuleVerdict[] {
  const out: RuleVerdict[] = [];
  for (const p of rules.protect) {
    if (p.deny.has('write')) out.push(protectWrite(p, write));
    if (p.deny.has('delete') && !p.deny.has('write')) out.push(protectDelete(p, write));
  }
  if (rules.schema !== undefined) out.push(schemaVerdict(rules.schema, write, schemaNode));
  if (rules.maxItems !== undefined) {
    const touched = itemsTouched(write);
    out.push({
      rule: 'max_items_per_change',
      ok: touched <= rules.maxItems,
      message:
        touched <= rules.maxItems
          ? `touches ${touched} of at most ${rules.maxItems} items`
          : `touches ${touched > MAX_CHANGES ? `more than ${MAX_CHANGES}` : touched} items; one change may touch at most ${rules.maxItems}`,
    });
  }
  for (const p of rules.personOnly) out.push(personOnly(p, write));
  return out;
}

/** The first broken rule as the error a tool's write answers (RULE_VIOLATED, nothing written). */
export function checkRules(
  rules: CompiledRules | undefined,
  write: CheckedWrite,
  tableId: string,
  schemaNode?: () => JsonValue | undefined,
): void {
  if (rules === undefined) return;
  const broken = ruleVerdicts(rules, write, schemaNode).find((v) => !v.ok);
  if (broken !== undefined) throw ruleViolated(broken, tableId);
}

export function ruleViolated(verdict: RuleVerdict, tableId: string): DomainError {
  return new DomainError(
    'RULE_VIOLATED',
    `table ${tableId}: rule ${verdict.rule} refuses this write: ${verdict.message}`,
    {
      rule: verdict.rule,
      ...(verdict.path !== undefined && { path: verdict.path }),
      table_id: tableId,
    },
  );
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  if (prefix.length > path.length) return false;
  for (let i = 0; i < prefix.length; i += 1) if (path[i] !== prefix[i]) return false;
  return true;
}

/** The node at the absolute `tokens` in the context `node` (at `at`); undefined when outside it or absent. */
function within(node: JsonValue, at: readonly string[], tokens: readonly string[]): JsonValue | undefined {
  if (!startsWith(tokens, at)) return undefined;
  return nodeAtTokens(node, tokens.slice(at.length));
}

/** Whether the write changed the value at `p` (an edit inside it, or one above that altered it). */
function changesAt(p: RulePath, write: CheckedWrite): boolean {
  for (const change of write.changes) {
    if (startsWith(change.path, p.tokens)) return true;
    if (startsWith(p.tokens, change.path)) {
      // An edit above the path: it changed the path's value only if that value differs.
      if (!deepEqual(within(write.before, write.at, p.tokens), within(write.after, write.at, p.tokens)))
        return true;
    }
  }
  return false;
}

function protectWrite(p: RulePath, write: CheckedWrite): RuleVerdict {
  const ok = !changesAt(p, write);
  return {
    rule: 'protect',
    ok,
    path: p.pointer,
    message: ok
      ? `nothing under "${p.pointer}" changes`
      : `"${p.pointer}" is protected: nothing under it may change`,
  };
}

function protectDelete(p: RulePath, write: CheckedWrite): RuleVerdict {
  const removed = removedUnder(p, write);
  return {
    rule: 'protect',
    ok: removed === undefined,
    path: p.pointer,
    message:
      removed === undefined
        ? `nothing under "${p.pointer}" is removed`
        : `"${p.pointer}" is protected from deletion: the change removes "${removed}"`,
  };
}

/** Where the write removes something at or under `p`, or undefined when it removes nothing there. */
function removedUnder(p: RulePath, write: CheckedWrite): string | undefined {
  const reached = write.changes.some((c) => startsWith(c.path, p.tokens) || startsWith(p.tokens, c.path));
  if (!reached) return undefined;
  // Judged on the whole subtree (the context, when it lies inside it): the edits alone cannot tell
  // an item removed from one moved (a reorder is written as edits of each place).
  const [at, before, after] = startsWith(write.at, p.tokens)
    ? [write.at, write.before, write.after]
    : [p.tokens, within(write.before, write.at, p.tokens), within(write.after, write.at, p.tokens)];
  if (before === undefined) return undefined;
  const lost = lostAt(before, after, [...at]);
  return lost === undefined ? undefined : formatPointer(lost);
}

/**
 * Where `after` lacks something `before` had (`path` is where they are): a key (at any depth), the
 * value itself, or an array item that is neither kept at its place (with all it had) nor found,
 * unchanged, at another place (a move or a reorder keeps it; each item of `after` stands for one
 * item of `before` only). Undefined when nothing is lost. Subtrees a write did not touch are shared
 * by reference, so only what changed is compared.
 */
function lostAt(before: JsonValue, after: JsonValue | undefined, path: string[]): string[] | undefined {
  if (before === after) return undefined;
  if (after === undefined) return path;
  if (Array.isArray(before)) {
    if (!Array.isArray(after)) return path;
    // Kept as they were, at their place (the common case: shared by reference) or at another one.
    const consumed = new Set<number>();
    const rest: number[] = [];
    before.forEach((item, i) => {
      if (i < after.length && item === after[i]) consumed.add(i);
      else rest.push(i);
    });
    if (rest.length === 0) return undefined;
    const places = new Map<string, number[]>();
    after.forEach((item, j) => {
      if (consumed.has(j)) return;
      const text = JSON.stringify(item);
      places.set(text, [...(places.get(text) ?? []), j]);
    });
    const changed: number[] = [];
    for (const i of rest) {
      const found = places.get(JSON.stringify(before[i]));
      const j = found?.includes(i) ? i : found?.find((k) => !consumed.has(k));
      if (j === undefined || consumed.has(j)) changed.push(i);
      else consumed.add(j);
    }
    // Then edited in place: still there, with all it had.
    for (const i of changed) {
      if (i >= after.length || consumed.has(i)) return [...path, String(i)];
      const lost = lostAt(before[i] as JsonValue, after[i], [...path, String(i)]);
      if (lost !== undefined) return lost;
      consumed.add(i);
    }
    return undefined;
  }
  if (before !== null && typeof before === 'object') {
    if (after === null || typeof after !== 'object' || Array.isArray(after)) return path;
    for (const key of Object.keys(before)) {
      if (!Object.hasOwn(after, key)) return [...path, key];
      const lost = lostAt(before[key] as JsonValue, after[key], [...path, key]);
      if (lost !== undefined) return lost;
    }
  }
  return undefined;
}

function personOnly(p: RulePath, write: CheckedWrite): RuleVerdict {
  const ok = write.by === 'person' || !changesAt(p, write);
  return {
    rule: 'person_only',
    ok,
    path: p.pointer,
    message: ok
      ? `"${p.pointer}" is not changed by anyone but a person`
      : `only a person may change "${p.pointer}" (this write is by ${write.by === 'agent' ? 'an agent session' : 'a tool'})`,
  };
}

function schemaVerdict(
  schema: NonNullable<CompiledRules['schema']>,
  write: CheckedWrite,
  schemaNode: (() => JsonValue | undefined) | undefined,
): RuleVerdict {
  const reached = write.changes.some(
    (c) => startsWith(c.path, schema.tokens) || startsWith(schema.tokens, c.path),
  );
  const at = schema.pointer === '' ? 'the data' : `"${schema.pointer}"`;
  if (!reached) return { rule: 'schema', ok: true, path: schema.pointer, message: `${at} is not changed` };
  const value = startsWith(schema.tokens, write.at)
    ? within(write.after, write.at, schema.tokens)
    : schemaNode?.();
  let passed: boolean;
  try {
    passed = schema.validate(value);
  } catch (error) {
    // A pattern past its budget on this data: the write cannot be shown to keep the schema.
    return {
      rule: 'schema',
      ok: false,
      path: schema.pointer,
      message: `${at} could not be checked: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (passed)
    return { rule: 'schema', ok: true, path: schema.pointer, message: `${at} still satisfies the schema` };
  const first = schema.validate.errors?.[0];
  const why =
    first === undefined
      ? 'it does not satisfy the schema'
      : describeSchemaError(
          {
            instancePath: first.instancePath,
            keyword: first.keyword,
            params: { ...first.params },
            message: first.message ?? first.keyword,
          },
          schema.pointer === '' ? 'data' : schema.pointer,
        );
  return { rule: 'schema', ok: false, path: schema.pointer, message: `after the change, ${why}` };
}

/** How many members or items the write adds, removes or replaces (past MAX_CHANGES: more than that). */
export function itemsTouched(write: Pick<CheckedWrite, 'at' | 'before' | 'after' | 'changes'>): number {
  const only = write.changes.length === 1 ? write.changes[0] : undefined;
  if (
    only?.op === 'set' &&
    only.path.length === write.at.length &&
    sameContainerKind(write.before, write.after)
  ) {
    // diffChanges stores a change of more than MAX_CHANGES edits as one set of the whole context.
    return MAX_CHANGES + 1;
  }
  let touched = 0;
  for (const change of write.changes) {
    if (change.op === 'splice') touched += Math.max(change.remove, change.insert.length);
    // Removing a container removes its members (a whole array of customers is not one item).
    else if (change.op === 'remove')
      touched += Math.max(1, membersOf(within(write.before, write.at, change.path)));
    else touched += 1;
  }
  return touched;
}

function membersOf(value: JsonValue | undefined): number {
  if (Array.isArray(value)) return value.length;
  return value !== null && typeof value === 'object' ? Object.keys(value).length : 0;
}

function sameContainerKind(a: JsonValue, b: JsonValue): boolean {
  if (Array.isArray(a)) return Array.isArray(b);
  return a !== null && typeof a === 'object' && b !== null && typeof b === 'object' && !Array.isArray(b);
}

function deepEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && deepEqual(a[key], b[key]));
}
