/**
 * How tools use secrets: a string (a header value, a URL, a body template) refers to one as
 * `{{secret.NAME}}`. At save, every name referred to must exist (`checkSecretsExist`); at call,
 * `resolveSecrets` decrypts exactly the named ones and gives back what fills them in and what
 * takes them out again: `redact` replaces any of their values in a text (an error message, a log
 * line, an upstream's answer) with `[secret NAME]`, so a value never travels further than the
 * request it was meant for.
 */
import { MIN_SECRET_VALUE_CHARS, SECRET_NAME_PATTERN, SECRET_NAME_RE } from '@bindery/contracts';
import { LRUCache } from 'lru-cache';
import { DomainError } from '../domain/errors.ts';
import type { Db, DomainContext } from '../domain/context.ts';
import { secretForms } from './secret-forms.ts';
import { requireKeyring } from './secret-keyring.ts';

/**
 * `{{secret.NAME}}`, spaces inside the braces allowed; NAME as secrets are named (contracts'
 * SECRET_NAME_PATTERN without its anchors). The one grammar of a reference: what is checked at save
 * is exactly what is filled at call.
 */
const REFERENCE = new RegExp(`\\{\\{\\s*secret\\.(${SECRET_NAME_PATTERN.slice(1, -1)})\\s*\\}\\}`, 'g');

/** What a text holds between `{{` and `}}`: well-formed references, and every other `{{`. */
export interface ParsedReferences {
  /** The secret names referred to, each once, in order of first appearance. */
  names: string[];
  /**
   * Each `{{` that does not open a well-formed reference, as an excerpt (up to its `}}`, or 40
   * characters): a typo such as `{{secrets.X}}` or an unclosed `{{secret.X` would otherwise be
   * sent as it is.
   */
  malformed: string[];
}

/** The one parser of `{{secret.NAME}}` references. */
export function parseSecretReferences(text: string): ParsedReferences {
  const names = new Set<string>();
  const wellFormed = new Set<number>();
  for (const match of text.matchAll(REFERENCE)) {
    names.add(match[1]!);
    wellFormed.add(match.index);
  }
  const malformed: string[] = [];
  for (let at = text.indexOf('{{'); at >= 0; at = text.indexOf('{{', at + 2)) {
    if (wellFormed.has(at)) continue;
    // `{{{secret.X}}`: the reference opens one brace later; the extra brace is not a reference.
    if (wellFormed.has(at + 1)) continue;
    const close = text.indexOf('}}', at + 2);
    malformed.push(close >= 0 && close - at <= 80 ? text.slice(at, close + 2) : text.slice(at, at + 40));
  }
  return { names: [...names], malformed };
}

/** Whether a text is one well-formed reference and nothing else (around it, spaces at most). */
export function isOnlyReference(text: string): boolean {
  const trimmed = text.trim();
  const match = new RegExp(REFERENCE.source).exec(trimmed);
  return match !== null && match.index === 0 && match[0].length === trimmed.length;
}

/** The names a text refers to, each once, in order of first appearance. */
export function secretReferences(text: string): string[] {
  return parseSecretReferences(text).names;
}

/** The names referred to anywhere in a JSON value's strings (keys included), each once. */
export function secretReferencesIn(value: unknown): string[] {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') for (const name of secretReferences(v)) names.add(name);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        visit(key);
        visit(item);
      }
    }
  };
  visit(value);
  return [...names];
}

/**
 * VALIDATION_FAILED naming `field` when the text holds a `{{` that is not a well-formed reference
 * (a bad name, no closing braces, another word than `secret`).
 */
export function checkSecretReferenceSyntax(text: string, field: string): void {
  const [first] = parseSecretReferences(text).malformed;
  if (first === undefined) return;
  throw new DomainError(
    'VALIDATION_FAILED',
    `${field}: "${first}" is not a secret reference; write {{secret.NAME}}, NAME matching ${SECRET_NAME_RE.source}`,
    { field },
  );
}

/** The names among `names` that `userId` has no secret for, in the order given. */
export async function missingSecretNames(
  db: Db,
  userId: string,
  names: readonly string[],
): Promise<string[]> {
  if (names.length === 0) return [];
  const found = await db.secret.findMany({
    where: { userId, name: { in: [...names] } },
    select: { name: true },
  });
  const have = new Set(found.map((s) => s.name));
  return names.filter((name) => !have.has(name));
}

/** VALIDATION_FAILED naming the first missing secret (and `field`, when given), details listing all. */
export function missingSecretError(missing: readonly string[], field?: string): DomainError {
  return new DomainError(
    'VALIDATION_FAILED',
    `${field ? `${field}: ` : ''}no secret named ${missing[0]}${missing.length > 1 ? ` (nor ${missing.slice(1).join(', ')})` : ''}; create it with POST /api/v2/secrets first`,
    { missing, ...(field !== undefined && { field }) },
  );
}

/**
 * At save: every name must be one of the user's secrets; the first missing one is
 * VALIDATION_FAILED naming it (and `field`, when given), details listing all missing.
 */
export async function checkSecretsExist(
  db: Db,
  userId: string,
  names: readonly string[],
  field?: string,
): Promise<void> {
  const missing = await missingSecretNames(db, userId, names);
  if (missing.length > 0) throw missingSecretError(missing, field);
}

/** How often one secret's last_used_at is written at most (per process): no write per call. */
export const LAST_USED_EVERY_MS = 60_000;
/** Entries kept in the last-written memory before old ones are dropped. */
const LAST_USED_MEMORY = 10_000;

/** Secret id -> when this process last wrote its last_used_at. */
const lastUsedWritten = new Map<string, number>();

/**
 * Writes last_used_at of the secrets not written within the last minute. Not awaited by callers:
 * it must not hold a tool's call (nor wait for the transaction it may run in: on the embedded
 * database that would wait forever). last_used_at is advisory: a failed write is tried again at
 * the next use.
 */
function touchLastUsed(ctx: Pick<DomainContext, 'prisma'>, ids: readonly string[], now: number): void {
  const due = ids.filter((id) => now - (lastUsedWritten.get(id) ?? -Infinity) >= LAST_USED_EVERY_MS);
  if (due.length === 0) return;
  if (lastUsedWritten.size > LAST_USED_MEMORY) {
    for (const [id, at] of lastUsedWritten) if (now - at >= LAST_USED_EVERY_MS) lastUsedWritten.delete(id);
  }
  for (const id of due) lastUsedWritten.set(id, now);
  // Raw SQL: an update through Prisma would move updated_at, which says when the value changed.
  ctx.prisma
    .$executeRaw`UPDATE "secret" SET "last_used_at" = ${new Date(now)} WHERE "id" = ANY(${due})`.catch(() => {
    for (const id of due) lastUsedWritten.delete(id);
  });
}

/**
 * How long the secrets a call decrypted serve later calls of the same user and names without a
 * read. A change on this control plane drops them before it is answered; one on another reaches
 * this one over Redis (and, should that message be lost, within this long).
 */
export const SECRETS_REUSE_MS = 5_000;

/** Characters of decrypted values (in every form a redaction looks for) kept at most. */
const SECRETS_REUSE_MAX_CHARS = 16 * 1024 * 1024;

interface Reusable {
  resolved: ResolvedSecrets;
  ids: string[];
  chars: number;
}

/** `{user}\u0000{names}` -> the resolved secrets and their rows' ids. */
const resolvedCache = new LRUCache<string, Reusable>({
  max: 10_000,
  maxSize: SECRETS_REUSE_MAX_CHARS,
  sizeCalculation: (entry) => Math.max(1, entry.chars),
  ttl: SECRETS_REUSE_MS,
  // Plaintext leaves memory when its time is up, not when the entry is next looked at.
  ttlAutopurge: true,
});

/**
 * Changes seen, per user and in all: a read that started before a change must not keep what it
 * read (it may be the old value), so it keeps it only when no change came while it read.
 */
const generations = new Map<string, number>();
let everyGeneration = 0;
const generationOf = (userId: string) => `${everyGeneration}.${generations.get(userId) ?? 0}`;

/** A user's secrets changed (or may have): no call reuses what was decrypted before. */
export function forgetSecrets(userId: string): void {
  generations.set(userId, (generations.get(userId) ?? 0) + 1);
  // Bounded: clearing them all moves every user's generation at once (nothing kept survives it).
  if (generations.size > 100_000) {
    generations.clear();
    everyGeneration += 1;
  }
  const prefix = `${userId}\u0000`;
  for (const key of [...resolvedCache.keys()]) if (key.startsWith(prefix)) resolvedCache.delete(key);
}

/** Every user's (Redis was away: changes may have been missed). */
export function forgetAllSecrets(): void {
  everyGeneration += 1;
  resolvedCache.clear();
}

/** The decrypted secrets of one call, and what fills them in and takes them out again. */
export class ResolvedSecrets {
  /** Each value's forms as they may appear in text (secret-forms.ts), longest first. */
  private readonly forms: { form: string; name: string }[];
  /** The shortest form's length: a shorter text holds none (most strings of a JSON answer). */
  private readonly shortest: number;

  constructor(private readonly values: ReadonlyMap<string, string>) {
    const forms = new Map<string, string>();
    for (const [name, value] of values) {
      for (const form of secretForms(value)) if (!forms.has(form)) forms.set(form, name);
    }
    // Longest first: a value that contains another is replaced whole.
    this.forms = [...forms]
      .map(([form, name]) => ({ form, name }))
      .sort((a, b) => b.form.length - a.form.length);
    this.shortest = this.forms.at(-1)?.form.length ?? Infinity;
  }

  /** Characters this holds: every form of every value (what keeping it costs). */
  get chars(): number {
    return this.forms.reduce((sum, { form }) => sum + form.length, 0);
  }

  /** The names resolved. */
  get names(): string[] {
    return [...this.values.keys()];
  }

  /** A secret's value (for host code that hands it on, e.g. a sandbox's `ctx.secrets`). */
  value(name: string): string {
    const value = this.values.get(name);
    if (value === undefined)
      throw new DomainError('INTERNAL', `secret ${name} was not resolved for this call`);
    return value;
  }

  /** The text with each `{{secret.NAME}}` replaced by its value. */
  fill(text: string): string {
    return text.replace(REFERENCE, (_match, name: string) => this.value(name));
  }

  /** The text with every resolved value, in any of its forms, as `[secret NAME]`. */
  redact(text: string): string {
    if (text.length < this.shortest) return text;
    let out = text;
    for (const { form, name } of this.forms) {
      if (out.includes(form)) out = out.split(form).join(`[secret ${name}]`);
    }
    return out;
  }

  /** A JSON value with `redact` applied to every string in it, keys included. */
  redactJson<T>(value: T): T {
    if (this.forms.length === 0) return value;
    const visit = (v: unknown): unknown => {
      if (typeof v === 'string') return this.redact(v);
      if (Array.isArray(v)) return v.map(visit);
      if (v !== null && typeof v === 'object') {
        return Object.fromEntries(Object.entries(v).map(([k, item]) => [this.redact(k), visit(item)]));
      }
      return v;
    };
    return visit(value) as T;
  }
}

/**
 * A value stored before values had a minimum is not used: taken out of answers it would garble
 * them and show itself (every "a" of an answer replaced), left in them it would leak. The call
 * fails naming the secret until its owner replaces the value; nothing else (start-up, listing,
 * deleting) reads values, so nothing else fails.
 */
function tooShort(name: string): DomainError {
  return new DomainError(
    'VALIDATION_FAILED',
    `this tool uses secret ${name}, whose value is shorter than the ${MIN_SECRET_VALUE_CHARS} characters a secret needs to be kept out of answers, so it is not used; its owner replaces it with PUT /api/v2/secrets/${name}`,
    { secret: name, rule: 'min_length', min_length: MIN_SECRET_VALUE_CHARS },
  );
}

/**
 * At call: decrypts the named secrets of `userId` (read through `db`, the call's transaction if it
 * has one). A name the user has no secret for is NOT_FOUND naming it (it was deleted after the
 * tool was saved); no key is NOT_CONFIGURED. Marks them used (at most once a minute each).
 * What it decrypted serves the same user's calls of the same names for SECRETS_REUSE_MS.
 */
export async function resolveSecrets(
  ctx: Pick<DomainContext, 'prisma' | 'keyring'>,
  userId: string,
  names: readonly string[],
  db: Db = ctx.prisma,
): Promise<ResolvedSecrets> {
  if (names.length === 0) return new ResolvedSecrets(new Map());
  const keyring = requireKeyring(ctx);
  // Reused only outside a transaction: a call's own transaction reads what it sees.
  const key = db === ctx.prisma ? `${userId}\u0000${names.join('\u0000')}` : undefined;
  const kept = key === undefined ? undefined : resolvedCache.get(key);
  if (kept) {
    touchLastUsed(ctx, kept.ids, Date.now());
    return kept.resolved;
  }
  const before = generationOf(userId);
  const rows = await db.secret.findMany({ where: { userId, name: { in: [...names] } } });
  const byName = new Map(rows.map((row) => [row.name, row]));
  const missing = names.filter((name) => !byName.has(name));
  if (missing.length > 0) {
    throw new DomainError(
      'NOT_FOUND',
      `this tool uses secret ${missing[0]}, which no longer exists; its owner creates it again with POST /api/v2/secrets`,
      { missing },
    );
  }
  const values = new Map(names.map((name) => [name, keyring.open(byName.get(name)!, { userId, name })]));
  for (const [name, value] of values) if (valueChars(value) < MIN_SECRET_VALUE_CHARS) throw tooShort(name);
  const ids = rows.map((row) => row.id);
  touchLastUsed(ctx, ids, Date.now());
  const resolved = new ResolvedSecrets(values);
  // A change while this read ran may have come after it: what it read is used once, not kept.
  if (key !== undefined && generationOf(userId) === before) {
    resolvedCache.set(key, { resolved, ids, chars: resolved.chars });
  }
  return resolved;
}

/** Characters of a value as a person counts them (code points, as the schema's bounds count). */
export function valueChars(value: string): number {
  return [...value].length;
}
