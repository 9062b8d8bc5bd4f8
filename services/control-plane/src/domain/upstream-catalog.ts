/**
 * Resources and prompts of upstream MCP servers, passed through to the AEIs they are attached to
 * (contracts: upstream-catalog.ts). A sync keeps a bounded snapshot of what each server lists
 * (`upstream_server.resources`, `.prompts`); config v2 carries each attached server's entries, in
 * attachment order, resources by their own URI and prompts as `{prefix}_{name}`. What is offered
 * twice goes to the first: the AEI's own resources (`bindery://`) and prompts always win, then the
 * server attached first. The others are hidden, shown by `GET /api/v2/aeis/{id}/upstream-catalog`
 * and logged once per config version. A gateway reads a resource or gets a prompt through
 * `POST /internal/aei/{aei_id}/upstream-request`: only an attached server, and only what its
 * snapshot lists, audited like a tool call.
 */
import {
  UPSTREAM_CATALOG_LIMITS,
  storableText,
  type ConfigUpstreamPrompt,
  type ConfigUpstreamResource,
  type ErrorCode,
  type UpstreamRequestAnswer,
  type UpstreamRequestBody,
} from '@bindery/contracts';
import type { Prompt, Resource } from '@modelcontextprotocol/sdk/types.js';
import { DomainError } from '../errors.ts';
import type { AuditStatus } from './audit.ts';
import type { Db, DomainContext, Principal } from './context.ts';
import type { ExecutorOptions } from './executor-options.ts';
import { findOwnAei } from './aeis.ts';
import { OWNER_STATUS } from './aeis.ts';
import type { SkippedEntry } from '../upstream/instance.ts';
import { prefixedToolName, skippedWarnings, TOOL_NAME_MAX } from './upstream-names.ts';

/** One resource of a server's snapshot (`upstream_server.resources`). */
export interface ResourceEntry {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mime_type?: string;
  size?: number;
}

export interface PromptArgumentEntry {
  name: string;
  description?: string;
  required?: boolean;
}

/** One prompt of a server's snapshot (`upstream_server.prompts`), by its upstream name. */
export interface PromptEntry {
  name: string;
  title?: string;
  description?: string;
  arguments: PromptArgumentEntry[];
}

/** The longest prompt name (and argument name) kept: what the internal route takes. */
const PROMPT_NAME_MAX = 256;
/** URIs of the AEI's own resources: an upstream's URI with this start is never served. */
const OWN_URI_PREFIX = 'bindery://';
/** Characters of a URI or prompt name written to the audit trail and log lines. */
const SHOWN_MAX = 200;

/**
 * Text as the snapshot stores it: NULs and unpaired surrogates (which a JSON column refuses) made
 * U+FFFD, cut to maxTextChars without splitting a pair.
 */
function cut(text: string): string {
  const max = UPSTREAM_CATALOG_LIMITS.maxTextChars;
  const clean = storableText(text);
  if (clean.length <= max) return clean;
  let end = max - 1;
  // Never end on the first half of a pair.
  if (/[\uD800-\uDBFF]/.test(clean.charAt(end - 1))) end -= 1;
  return `${clean.slice(0, end)}…`;
}

/** True when `text` can be stored and named as it is (a URI or a name: it cannot be rewritten). */
function storableAsIs(text: string): boolean {
  return storableText(text) === text;
}

function shown(text: string): string {
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX - 1)}…` : text;
}

/** A listing of the pool's (upstream/pool.ts), as far as a snapshot needs it. */
interface Listed<T> {
  items: T[];
  truncated: boolean;
  withheld?: number;
  skipped?: SkippedEntry[];
  moreSkipped?: number;
}

const optionalText = (key: string, value: unknown) =>
  typeof value === 'string' ? { [key]: cut(value) } : {};

/**
 * A server's resources as the snapshot keeps them: URIs over maxUriChars or listed twice skipped,
 * names, titles and descriptions cut to maxTextChars; what was left out is said in `warnings`.
 */
export function resourceSnapshot(listed: Listed<Resource>, warnings: string[]): ResourceEntry[] {
  const { maxResources, maxUriChars } = UPSTREAM_CATALOG_LIMITS;
  skippedWarnings('resource', listed, warnings);
  if (listed.truncated)
    warnings.push(`the server lists more than ${maxResources} resources; the rest were skipped`);
  if (listed.withheld)
    warnings.push(`${listed.withheld} resource(s) whose URI holds one of the server's secrets were left out`);
  const seen = new Set<string>();
  const entries: ResourceEntry[] = [];
  const budget = new SnapshotBudget('resources', warnings);
  let long = 0;
  for (const resource of listed.items) {
    const uri = resource.uri;
    if (typeof uri !== 'string' || uri === '' || uri.length > maxUriChars || !storableAsIs(uri)) {
      long += 1;
      continue;
    }
    if (seen.has(uri)) {
      warnings.push(`resource "${shown(uri)}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(uri);
    const size = resource.size;
    const entry = {
      uri,
      name: cut(typeof resource.name === 'string' ? resource.name : uri),
      ...optionalText('title', resource.title),
      ...optionalText('description', resource.description),
      ...optionalText('mime_type', resource.mimeType),
      ...(typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 && { size }),
    } as ResourceEntry;
    if (!budget.takes(entry)) break;
    entries.push(entry);
  }
  if (long > 0)
    warnings.push(
      `${long} resource(s) with an empty URI, one over ${maxUriChars} characters or one with a NUL or a broken character were skipped`,
    );
  return entries;
}

/**
 * Characters of one server's resources (or prompts) as stored, at most: the snapshot travels in the
 * config of every AEI the server is attached to, so its size is bounded whatever the counts allow.
 */
export const SNAPSHOT_MAX_CHARS = 1_048_576;

/** Counts what a snapshot holds; past SNAPSHOT_MAX_CHARS the rest is skipped, with a warning. */
class SnapshotBudget {
  #left = SNAPSHOT_MAX_CHARS;

  constructor(
    private readonly list: string,
    private readonly warnings: string[],
  ) {}

  /** Whether `entry` fits; when it does not, the warning says the rest was skipped. */
  takes(entry: unknown): boolean {
    this.#left -= JSON.stringify(entry).length;
    if (this.#left >= 0) return true;
    this.warnings.push(
      `the server's ${this.list} are more than ${SNAPSHOT_MAX_CHARS} characters; the rest were skipped`,
    );
    return false;
  }
}

/**
 * A server's prompts as the snapshot keeps them: names empty, over 256 characters or listed twice
 * skipped, at most maxPromptArguments arguments each, texts cut; what was left out is in `warnings`.
 */
export function promptSnapshot(listed: Listed<Prompt>, warnings: string[]): PromptEntry[] {
  const { maxPrompts, maxPromptArguments } = UPSTREAM_CATALOG_LIMITS;
  skippedWarnings('prompt', listed, warnings);
  if (listed.truncated)
    warnings.push(`the server lists more than ${maxPrompts} prompts; the rest were skipped`);
  if (listed.withheld)
    warnings.push(`${listed.withheld} prompt(s) whose name holds one of the server's secrets were left out`);
  const seen = new Set<string>();
  const entries: PromptEntry[] = [];
  const budget = new SnapshotBudget('prompts', warnings);
  for (const prompt of listed.items) {
    const name = prompt.name;
    if (typeof name !== 'string' || name === '' || name.length > PROMPT_NAME_MAX || !storableAsIs(name)) {
      warnings.push(
        `a prompt with a name that is empty, over ${PROMPT_NAME_MAX} characters or holds a NUL or a broken character was skipped`,
      );
      continue;
    }
    if (seen.has(name)) {
      warnings.push(`prompt "${shown(name)}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(name);
    const args: PromptArgumentEntry[] = [];
    let dropped = 0;
    let requiredDropped = false;
    for (const arg of prompt.arguments ?? []) {
      const usable =
        typeof arg.name === 'string' &&
        arg.name !== '' &&
        arg.name.length <= PROMPT_NAME_MAX &&
        storableAsIs(arg.name) &&
        !args.some((a) => a.name === arg.name) &&
        args.length < maxPromptArguments;
      if (!usable) {
        dropped += 1;
        if (arg.required === true) requiredDropped = true;
        continue;
      }
      args.push({
        name: arg.name,
        ...optionalText('description', arg.description),
        ...(typeof arg.required === 'boolean' && { required: arg.required }),
      });
    }
    // A required argument no client could send would make the prompt unusable: it is not served.
    if (requiredDropped) {
      warnings.push(
        `prompt "${shown(storableText(name))}" was skipped: a required argument of it is unnamed, named twice, over ${PROMPT_NAME_MAX} characters or past the first ${maxPromptArguments}`,
      );
      continue;
    }
    if (dropped > 0) {
      warnings.push(
        `prompt "${shown(name)}": ${dropped} optional argument(s) unnamed, named twice, over ${PROMPT_NAME_MAX} characters or past the first ${maxPromptArguments} were left out`,
      );
    }
    const entry: PromptEntry = {
      name,
      ...optionalText('title', prompt.title),
      ...optionalText('description', prompt.description),
      arguments: args,
    };
    if (!budget.takes(entry)) break;
    entries.push(entry);
  }
  return entries;
}

/** A stored snapshot, as read back (anything else than an array reads as empty). */
export function storedEntries<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

/** Something an attached server offers that the AEI does not serve, because another offers it. */
export interface UpstreamClash {
  kind: 'resource' | 'prompt';
  /** The resource's URI, or the prompt's name as the AEI would serve it. */
  name: string;
  /** Who serves it: the AEI itself (`bindery` resources, `aei_prompt` prompts) or a server's id. */
  used: string;
  /** The servers whose entry is hidden, in attachment order. */
  hidden: string[];
}

export interface UpstreamCatalog {
  resources: ConfigUpstreamResource[];
  prompts: ConfigUpstreamPrompt[];
  clashes: UpstreamClash[];
  /** Entries past the per-AEI limits (MAX_AEI_UPSTREAM_*), in attachment order: not served. */
  left_out: { resources: number; prompts: number };
}

/**
 * Upstream resources and prompts one AEI serves at most, whatever number of servers is attached:
 * they travel in its config to every gateway (each server's snapshot is bounded on its own too).
 */
export const MAX_AEI_UPSTREAM_RESOURCES = 2_000;
export const MAX_AEI_UPSTREAM_PROMPTS = 1_000;

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The servers attached to an AEI with their snapshots, in attachment order (createdAt, then id). */
export async function attachedCatalogs(db: Db, aeiId: string): Promise<AttachedCatalog[]> {
  const rows = await db.aeiAttachment.findMany({
    where: { aeiId },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { prefix: true, upstreamServer: { select: { id: true, resources: true, prompts: true } } },
  });
  return rows.map((r) => ({ prefix: r.prefix, server: r.upstreamServer }));
}

export interface AttachedCatalog {
  prefix: string;
  server: { id: string; resources: unknown; prompts: unknown };
}

/** What the AEI's attached servers add to it: attachedCatalogs, then upstreamCatalog. */
export async function upstreamCatalogOf(
  db: Db,
  aeiId: string,
  ownPrompts: Iterable<string>,
): Promise<UpstreamCatalog> {
  return upstreamCatalog(await attachedCatalogs(db, aeiId), ownPrompts);
}

/**
 * What the attached servers add to an AEI (see the file's comment): resources in attachment order,
 * then each server's listed order; prompts by name; clashes by kind and name. `ownPrompts`: the
 * names of the AEI's own prompts.
 */
export function upstreamCatalog(
  attachments: readonly AttachedCatalog[],
  ownPrompts: Iterable<string>,
): UpstreamCatalog {
  const clashes = new Map<string, UpstreamClash>();
  const clash = (kind: UpstreamClash['kind'], name: string, used: string, hidden: string) => {
    const key = `${kind}\u0000${name}`;
    const known = clashes.get(key) ?? { kind, name, used, hidden: [] };
    if (!known.hidden.includes(hidden)) known.hidden.push(hidden);
    clashes.set(key, known);
  };
  const resources: ConfigUpstreamResource[] = [];
  const resourceOwner = new Map<string, string>();
  const prompts: ConfigUpstreamPrompt[] = [];
  const promptOwner = new Map<string, string>([...ownPrompts].map((name) => [name, 'aei_prompt']));
  const leftOut = { resources: 0, prompts: 0 };
  for (const { prefix, server } of attachments) {
    for (const entry of storedEntries<ResourceEntry>(server.resources)) {
      const used = entry.uri.startsWith(OWN_URI_PREFIX) ? 'bindery' : resourceOwner.get(entry.uri);
      if (used !== undefined) {
        clash('resource', entry.uri, used, server.id);
        continue;
      }
      if (resources.length >= MAX_AEI_UPSTREAM_RESOURCES) {
        leftOut.resources += 1;
        continue;
      }
      resourceOwner.set(entry.uri, server.id);
      resources.push({ upstream_server_id: server.id, ...entry });
    }
    for (const entry of storedEntries<PromptEntry>(server.prompts)) {
      const name = prefixedToolName(prefix, entry.name);
      // prefixedToolName shortens long names with a hash; anything longer is not served.
      if (name.length > TOOL_NAME_MAX) continue;
      const used = promptOwner.get(name);
      if (used !== undefined) {
        clash('prompt', name, used, server.id);
        continue;
      }
      if (prompts.length >= MAX_AEI_UPSTREAM_PROMPTS) {
        leftOut.prompts += 1;
        continue;
      }
      promptOwner.set(name, server.id);
      const { name: upstreamName, ...rest } = entry;
      prompts.push({ upstream_server_id: server.id, name, upstream_name: upstreamName, ...rest });
    }
  }
  prompts.sort((a, b) => byCodePoint(a.name, b.name));
  const listed = [...clashes.values()].sort(
    (a, b) => byCodePoint(a.kind, b.kind) || byCodePoint(a.name, b.name),
  );
  return { resources, prompts, clashes: listed, left_out: leftOut };
}

/** The AEI's upstream resources and prompts and what was hidden (the admin API), as served when enabled. */
export async function aeiUpstreamCatalog(db: Db, caller: Principal, aeiId: string): Promise<UpstreamCatalog> {
  const aei = await findOwnAei(db, caller, aeiId);
  const own = await db.aeiPrompt.findMany({ where: { aeiId: aei.id }, select: { name: true } });
  return upstreamCatalogOf(
    db,
    aei.id,
    own.map((p) => p.name),
  );
}

interface ClashLogger {
  info(details: object, message: string): void;
}

/** AEIs whose last logged config version is remembered (the least recently logged go first). */
const CLASH_LOG_AEIS = 1000;

/**
 * Logs the clashes of an AEI's config once per config version (configs are built for every
 * gateway that reads them; the clashes only change with the version).
 */
export class ClashLog {
  private readonly logged = new Map<string, number>();

  constructor(private readonly log: ClashLogger) {}

  report(aeiId: string, configVersion: number, clashes: readonly UpstreamClash[]): void {
    if (clashes.length === 0 || this.logged.get(aeiId) === configVersion) return;
    this.logged.delete(aeiId);
    this.logged.set(aeiId, configVersion);
    if (this.logged.size > CLASH_LOG_AEIS) {
      const oldest = this.logged.keys().next().value;
      if (oldest !== undefined) this.logged.delete(oldest);
    }
    this.log.info(
      {
        aei_id: aeiId,
        config_version: configVersion,
        clashes: clashes.slice(0, 20).map((c) => ({ ...c, name: shown(c.name) })),
        clash_count: clashes.length,
      },
      'upstream resources or prompts hidden: another offers the same URI or name',
    );
  }
}

// ---- the internal route ---------------------------------------------------------------------

/** A refusal before the upstream was asked: audited as `refused`. */
class Refused extends DomainError {}

/** JSON-RPC codes an upstream answers with, as MCP uses them. */
const INVALID_PARAMS = -32602;
const RESOURCE_NOT_FOUND = -32002;

/** An upstream's JSON-RPC refusal in Bindery's terms (the pool reports it as UPSTREAM_FAILED). */
function mapped(error: DomainError, kind: 'resource' | 'prompt'): DomainError {
  const rpc = error.details?.rpc_code;
  if (error.code !== 'UPSTREAM_FAILED' || typeof rpc !== 'number') return error;
  if (rpc === RESOURCE_NOT_FOUND || (kind === 'resource' && rpc === INVALID_PARAMS))
    return new DomainError('NOT_FOUND', error.message, error.details);
  if (kind === 'prompt' && rpc === INVALID_PARAMS)
    return new DomainError('VALIDATION_FAILED', error.message, error.details);
  return error;
}

/**
 * One resources/read or prompts/get of an upstream server attached to the AEI, for a gateway:
 * checked (AEI enabled, owner enabled, server attached, URI or prompt in its snapshot), asked
 * through the server's pool, audited and metered. Failures are answers (`error`), not throws.
 */
export async function upstreamRequest(
  ctx: DomainContext,
  aeiId: string,
  body: UpstreamRequestBody,
  options: ExecutorOptions,
  signal?: AbortSignal,
): Promise<UpstreamRequestAnswer> {
  const read = body.read_resource;
  const get = body.get_prompt;
  if ((read === undefined) === (get === undefined)) {
    throw new DomainError('VALIDATION_FAILED', 'give exactly one of read_resource and get_prompt', {
      field: read === undefined ? 'read_resource' : 'get_prompt',
    });
  }
  const aei = await ctx.prisma.aei.findUnique({ where: { id: aeiId }, include: OWNER_STATUS });
  // Without an AEI there is no owner to audit for: answer without a trail.
  if (!aei) return { error: { code: 'NOT_FOUND', message: `AEI ${aeiId} not found` } };
  const attachment = await ctx.prisma.aeiAttachment.findFirst({
    where: { aeiId, upstreamServerId: body.upstream_server_id },
    select: { prefix: true, upstreamServer: { select: { resources: true, prompts: true } } },
  });
  const kind = read ? 'resource' : 'prompt';
  const args = read ? { uri: read.uri } : { name: get!.name, arguments: get!.arguments ?? {} };
  const subject = read ? read.uri : attachment ? prefixedToolName(attachment.prefix, get!.name) : get!.name;
  const operation = read ? 'read' : 'get';
  const meter = options.metrics.execution('mcp', operation);
  const started = performance.now();
  const finish = async (status: AuditStatus, errorCode: ErrorCode | null) => {
    const durationMs = performance.now() - started;
    meter[status].observe(durationMs / 1000);
    await options.audit.record({
      userId: aei.userId,
      action: read ? 'upstream.resource.read' : 'upstream.prompt.get',
      aeiId,
      toolName: shown(subject),
      operation,
      args,
      status,
      errorCode,
      durationMs,
      requestId: body.request_id ?? null,
      caller: body.caller ?? null,
    });
  };
  try {
    if (aei.status !== 'enabled' || aei.user.disabledAt !== null)
      throw new Refused('FORBIDDEN', `exposure "${aei.name}" is disabled`);
    if (!attachment) {
      throw new Refused(
        'NOT_FOUND',
        `upstream server ${body.upstream_server_id} is not attached to exposure "${aei.name}"`,
        { upstream_server_id: body.upstream_server_id },
      );
    }
    const server = attachment.upstreamServer;
    if (read && !storedEntries<ResourceEntry>(server.resources).some((r) => r.uri === read.uri)) {
      throw new Refused('NOT_FOUND', `the upstream server lists no resource "${shown(read.uri)}"`, {
        upstream_server_id: body.upstream_server_id,
      });
    }
    if (get && !storedEntries<PromptEntry>(server.prompts).some((p) => p.name === get.name)) {
      throw new Refused('NOT_FOUND', `the upstream server lists no prompt "${shown(get.name)}"`, {
        upstream_server_id: body.upstream_server_id,
      });
    }
    const upstreams = options.upstreams;
    if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
    const call = {
      signal,
      // The MCP session's own instance in per_session mode, the one its tool calls use.
      session: body.session_id === undefined ? undefined : `${aeiId}:${body.session_id}`,
    };
    let result: Record<string, unknown>;
    try {
      result = read
        ? await upstreams.readResource(body.upstream_server_id, read.uri, call)
        : await upstreams.getPrompt(body.upstream_server_id, get!.name, get!.arguments ?? {}, call);
    } catch (error) {
      throw error instanceof DomainError ? mapped(error, kind) : error;
    }
    const limit = options.limits.maxResultBytes;
    const size = Buffer.byteLength(JSON.stringify(result));
    if (size > limit) {
      throw new DomainError(
        'RESULT_TOO_LARGE',
        `the upstream's answer takes ${size} bytes of JSON, more than the ${limit} allowed`,
        { limit_bytes: limit },
      );
    }
    await finish('ok', null);
    return { result };
  } catch (error) {
    if (!(error instanceof DomainError)) {
      meter.error.observe((performance.now() - started) / 1000);
      throw error;
    }
    await finish(error instanceof Refused ? 'refused' : 'error', error.code);
    return {
      error: {
        code: error.code,
        message: error.message,
        ...(error.details !== undefined && { details: error.details }),
      },
    };
  }
}
