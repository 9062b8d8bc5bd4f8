/**
 * Upstream MCP servers (`/api/v2/upstream-servers`): an owner's external MCP servers, whose tools
 * are synced into ADIs of kind `mcp` (mcp-kind.ts). Sync lists the upstream's tools (all
 * pages), creates an ADI for each new one, updates changed ones in place (bumping the AEIs that
 * bind them, so their clients hear tools/list_changed), marks vanished ones missing (their calls
 * fail naming the server and the tool; nothing disappears silently) and binds new tools into the
 * AEIs the whole server is attached to. `tools/list` never reaches an upstream: it is served from
 * these rows. Sync also keeps a snapshot of the upstream's resources and prompts, passed through to
 * the AEIs the server is attached to (upstream-catalog.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  UPSTREAM_CATALOG_LIMITS,
  UPSTREAM_LIMITS,
  findUnstorable,
  headerParamsOf,
  storableText,
  unstorableMessage,
  type CreateUpstreamServerBody,
  type UpdateUpstreamServerBody,
  type UpstreamOAuthSettings,
  type UpstreamServer as UpstreamServerBody,
  type UpstreamServerLogs,
} from '@bindery/contracts';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { compileToolSchema, type JsonSchema } from '@bindery/context-ops';
import picomatch from 'picomatch';
import type { Prisma, UpstreamServer as Row } from '../../generated/prisma/client.ts';
import { DomainError, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { UpstreamListing, UpstreamPool } from './pool.ts';
import type { UpstreamRegistry } from './registry.ts';
import { knownServer, oauthTarget, specOfRow, transportSecretNames } from './registry.ts';
import { NOT_CONNECTED } from './oauth/broker.ts';
import type { OAuthTarget } from './oauth/target.ts';
import {
  checkStdioCommand,
  checkUpstreamUrl,
  fingerprintOf,
  hasAuthorizationHeader,
  resolvedLimits,
  slugOf,
  type HttpSpec,
  type OAuthSpec,
  type TransportSpec,
  type UpstreamSpec,
} from './spec.ts';
import type { Db, DomainContext, Principal } from '../../domain/context.ts';
import { brokenOverrides, type OverrideTarget } from '../binding-overrides.ts';
import { mcpKind } from './mcp-kind.ts';
import { bumpForAdis, changeExposure } from '../../domain/config-versions.ts';
import { uniqueViolation } from '../../domain/prisma-errors.ts';
import {
  checkSecretReferenceSyntax,
  missingSecretError,
  isOnlyReference,
  missingSecretNames,
  resolveSecrets,
} from '../../secrets/secret-references.ts';
import { prefixedToolName, quoted, skippedWarnings } from './upstream-names.ts';
import {
  presentationOf,
  promptSnapshot,
  resourceSnapshot,
  resourceTemplateSnapshot,
  type PromptEntry,
  type ResourceEntry,
  type ResourceTemplateEntry,
} from './upstream-snapshot.ts';

export interface UpstreamDeps {
  registry: UpstreamRegistry;
}

function transportOf(id: string, body: CreateUpstreamServerBody): TransportSpec {
  if (body.transport === 'stdio') {
    return {
      transport: 'stdio',
      command: body.command,
      args: body.args ?? [],
      env: body.env ?? {},
      cwd: body.cwd ?? null,
    };
  }
  if (body.oauth !== undefined && body.auth !== 'oauth') throw oauthWithoutAuth();
  return {
    transport: 'http',
    url: body.url,
    headers: body.headers ?? {},
    ...(body.auth === 'oauth' && { oauth: oauthSpec(id, body.oauth) }),
  };
}

function oauthWithoutAuth(): DomainError {
  return new DomainError('VALIDATION_FAILED', 'oauth: settings apply only to a server with auth "oauth"', {
    field: 'oauth',
  });
}

function oauthSpec(id: string, settings: UpstreamOAuthSettings | null | undefined): OAuthSpec {
  return {
    server: id,
    clientId: settings?.client_id ?? null,
    clientSecret: settings?.client_secret ?? null,
    scope: settings?.scope ?? null,
  };
}

/** What a server that requires OAuth needs: a client secret only by reference, no header of its own. */
function checkOAuth(transport: TransportSpec): void {
  if (transport.transport !== 'http' || !transport.oauth) return;
  const { clientId, clientSecret } = transport.oauth;
  if (clientSecret !== null) {
    if (clientId === null) {
      throw new DomainError('VALIDATION_FAILED', 'oauth/client_secret: a client secret needs its client_id', {
        field: 'oauth/client_secret',
      });
    }
    if (!isOnlyReference(clientSecret)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        'oauth/client_secret: give the client secret as a secret reference, {{secret.NAME}} (it is never stored in the clear)',
        { field: 'oauth/client_secret' },
      );
    }
  }
  if (hasAuthorizationHeader(transport)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'headers/Authorization: a server that requires OAuth gets each person’s token; remove the Authorization header',
      { field: 'headers' },
    );
  }
}

/** Checks a spec before it is stored: allow-list, URL, secret references (syntax and existence). */
async function checkSpec(db: Db, caller: Principal, spec: UpstreamSpec, deps: UpstreamDeps): Promise<void> {
  const transport = spec.transport;
  if (transport.transport === 'stdio')
    checkStdioCommand(transport.command, deps.registry.options.stdioCommands);
  else checkUpstreamUrl(transport.url);
  checkOAuth(transport);
  const values = transport.transport === 'stdio' ? transport.env : transport.headers;
  const part = transport.transport === 'stdio' ? 'env' : 'headers';
  for (const [key, value] of Object.entries(values)) checkSecretReferenceSyntax(value, `${part}/${key}`);
  if (transport.transport === 'http' && transport.oauth?.clientSecret) {
    checkSecretReferenceSyntax(transport.oauth.clientSecret, 'oauth/client_secret');
  }
  const missing = await missingSecretNames(db, caller.userId, transportSecretNames(transport));
  if (missing.length > 0) throw missingSecretError(missing, part);
}

function storedSpec(transport: TransportSpec): Prisma.InputJsonObject {
  const { transport: _kind, ...rest } = transport;
  return rest as unknown as Prisma.InputJsonObject;
}

async function findOwnServer(db: Db, caller: Principal, id: string): Promise<Row> {
  const row = await db.upstreamServer.findFirst({ where: { id, userId: caller.userId } });
  if (!row) throw notFound('upstream server', id);
  return row;
}

/** A slug unique among the caller's servers: the name's, then `_2`, `_3`... */
async function freeSlug(db: Db, userId: string, name: string): Promise<string> {
  const base = slugOf(name);
  const taken = new Set(
    (
      await db.upstreamServer.findMany({
        where: { userId, slug: { startsWith: base } },
        select: { slug: true },
      })
    ).map((r) => r.slug),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** The viewer's connection to a server that requires OAuth (its owner's: servers are their owner's). */
async function connectionOf(deps: UpstreamDeps, row: Row, url: string, viewer: string | undefined) {
  const oauth = deps.registry.oauth;
  if (!oauth) return NOT_CONNECTED;
  return oauth.view({ serverId: row.id, userId: viewer ?? row.userId, url });
}

export async function serverBody(
  db: Db,
  row: Row,
  deps: UpstreamDeps,
  viewer?: string,
): Promise<UpstreamServerBody> {
  const spec = specOfRow(row);
  const adis = await db.adi.findMany({
    where: { upstreamServerId: row.id },
    select: { id: true, name: true, config: true },
    orderBy: { id: 'asc' },
  });
  const pool = deps.registry.pool(row.fingerprint);
  const shared = await db.upstreamServer.findMany({
    where: { fingerprint: row.fingerprint, userId: row.userId, id: { not: row.id } },
    select: { id: true },
  });
  const transport = spec.transport;
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    transport: transport.transport,
    ...(transport.transport === 'stdio'
      ? { command: transport.command, args: transport.args, env: transport.env, cwd: transport.cwd }
      : {
          url: transport.url,
          headers: transport.headers,
          auth: transport.oauth ? 'oauth' : 'none',
          ...(transport.oauth && {
            oauth: {
              ...(transport.oauth.clientId !== null && { client_id: transport.oauth.clientId }),
              ...(transport.oauth.clientSecret !== null && { client_secret: transport.oauth.clientSecret }),
              ...(transport.oauth.scope !== null && { scope: transport.oauth.scope }),
            },
            connection: await connectionOf(deps, row, transport.url, viewer),
          }),
        }),
    expose_tools: row.exposeTools,
    session_mode: spec.sessionMode,
    limits: {
      max_instances: spec.limits.maxInstances,
      concurrent_calls: spec.limits.concurrentCalls,
      call_timeout_ms: spec.limits.callTimeoutMs,
      idle_timeout_ms: spec.limits.idleTimeoutMs,
    },
    fingerprint: row.fingerprint,
    shared_with: shared.map((s) => s.id),
    status: row.status as UpstreamServerBody['status'],
    // Learned by this control plane's pool when an instance starts, not stored: see decision 066.
    protocol_era: pool?.protocol.era ?? null,
    protocol_version: pool?.protocol.version ?? null,
    last_error: row.lastError,
    last_sync_at: row.lastSyncAt?.toISOString() ?? null,
    tool_count: adis.filter((a) => !(a.config as { missing?: boolean }).missing).length,
    tools: adis.map((a) => {
      const config = a.config as { tool?: string; missing?: boolean };
      return {
        adi_id: a.id,
        name: a.name,
        upstream_name: config.tool ?? a.name,
        missing: config.missing === true,
      };
    }),
    pool: {
      instances: pool?.instanceCount ?? 0,
      in_flight: pool?.inFlight ?? 0,
      restarts: pool?.restarts ?? 0,
    },
    warnings: row.warnings,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/**
 * Creates a server and runs its first sync; the answer carries its tools, or its status and
 * last_error say why there are none yet (the server is kept: a later sync may succeed).
 */
export async function createUpstreamServer(
  ctx: DomainContext,
  caller: Principal,
  body: CreateUpstreamServerBody,
  deps: UpstreamDeps,
): Promise<UpstreamServerBody> {
  const id = newId('ups');
  const spec: UpstreamSpec = {
    transport: transportOf(id, body),
    exposeTools: body.expose_tools ?? [],
    sessionMode: body.session_mode ?? 'shared',
    limits: resolvedLimits(body.limits),
  };
  await checkSpec(ctx.prisma, caller, spec, deps);
  const fingerprint = fingerprintOf(caller.userId, spec);
  let row: Row | undefined;
  for (let attempt = 0; !row; attempt++) {
    try {
      row = await ctx.prisma.upstreamServer.create({
        data: {
          id,
          userId: caller.userId,
          name: body.name,
          slug: await freeSlug(ctx.prisma, caller.userId, body.name),
          transport: spec.transport.transport,
          spec: storedSpec(spec.transport),
          exposeTools: spec.exposeTools,
          sessionMode: spec.sessionMode,
          limits: (body.limits ?? {}) as Prisma.InputJsonObject,
          fingerprint,
        },
      });
    } catch (error) {
      // Two servers of one name created at once: the slug of the second moves on.
      if (!uniqueViolation(error) || attempt >= 3) throw error;
    }
  }
  deps.registry.remember(knownServer(row));
  await syncOrRecord(ctx, row.id, deps, 'create');
  await oauthIfAsked(ctx, row.id, deps);
  return serverBody(
    ctx.prisma,
    await ctx.prisma.upstreamServer.findUniqueOrThrow({ where: { id: row.id } }),
    deps,
  );
}

export async function getUpstreamServer(db: Db, caller: Principal, id: string, deps: UpstreamDeps) {
  return serverBody(db, await findOwnServer(db, caller, id), deps);
}

export async function listUpstreamServers(db: Db, caller: Principal, deps: UpstreamDeps) {
  const rows = await db.upstreamServer.findMany({ where: { userId: caller.userId }, orderBy: { id: 'asc' } });
  return { items: await Promise.all(rows.map((r) => serverBody(db, r, deps))), next_cursor: null };
}

/** A PATCH's auth and oauth fields over the server's: `oauth` changes settings, `auth` turns OAuth on or off. */
function nextOAuth(
  id: string,
  transport: HttpSpec,
  body: UpdateUpstreamServerBody,
): { oauth: OAuthSpec | undefined } {
  const on = body.auth === undefined ? transport.oauth !== undefined : body.auth === 'oauth';
  if (!on) {
    if (body.oauth) throw oauthWithoutAuth();
    return { oauth: undefined };
  }
  if (body.oauth === undefined) return { oauth: transport.oauth ?? oauthSpec(id, undefined) };
  return { oauth: oauthSpec(id, body.oauth) };
}

/**
 * Changes a server. A change of its spec gives it a new fingerprint: its old pool stops once no
 * other server shares it (its children killed), and its tools are synced again.
 */
export async function updateUpstreamServer(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  body: UpdateUpstreamServerBody,
  deps: UpstreamDeps,
): Promise<UpstreamServerBody> {
  const row = await findOwnServer(ctx.prisma, caller, id);
  const spec = specOfRow(row);
  const transport = spec.transport;
  const fields =
    transport.transport === 'stdio' ? ['command', 'args', 'env', 'cwd'] : ['url', 'headers', 'auth', 'oauth'];
  for (const field of ['command', 'args', 'env', 'cwd', 'url', 'headers', 'auth', 'oauth']) {
    if (field in body && !fields.includes(field)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `${field} does not apply to a ${transport.transport} server`,
        { field },
      );
    }
  }
  const next: UpstreamSpec = {
    transport:
      transport.transport === 'stdio'
        ? {
            ...transport,
            ...(body.command !== undefined && { command: body.command }),
            ...(body.args !== undefined && { args: body.args }),
            ...(body.env !== undefined && { env: body.env }),
            ...(body.cwd !== undefined && { cwd: body.cwd }),
          }
        : {
            ...transport,
            ...(body.url !== undefined && { url: body.url }),
            ...(body.headers !== undefined && { headers: body.headers }),
            ...nextOAuth(id, transport, body),
          },
    exposeTools: body.expose_tools === undefined ? spec.exposeTools : (body.expose_tools ?? []),
    sessionMode: body.session_mode ?? spec.sessionMode,
    limits: body.limits === undefined ? spec.limits : resolvedLimits(body.limits),
  };
  await checkSpec(ctx.prisma, caller, next, deps);
  // Tokens were got for the server as it was: another URL, client or scope, or no OAuth, ends them.
  if (transport.transport === 'http' && transport.oauth) {
    const after = next.transport.transport === 'http' ? next.transport : undefined;
    const same = after?.url === transport.url && isDeepStrictEqual(after.oauth, transport.oauth);
    if (!same) await forgetConnections(ctx, row, deps);
  }
  const fingerprint = fingerprintOf(caller.userId, next);
  const updated = await ctx.prisma.upstreamServer.update({
    where: { id },
    data: {
      ...(body.name !== undefined && { name: body.name }),
      spec: storedSpec(next.transport),
      exposeTools: next.exposeTools,
      sessionMode: next.sessionMode,
      ...(body.limits !== undefined && { limits: body.limits as Prisma.InputJsonObject }),
      fingerprint,
    },
  });
  deps.registry.remember(knownServer(updated));
  if (fingerprint !== row.fingerprint) {
    await syncOrRecord(ctx, id, deps, 'spec change');
    if (body.auth === undefined) await oauthIfAsked(ctx, id, deps);
  }
  return serverBody(ctx.prisma, await ctx.prisma.upstreamServer.findUniqueOrThrow({ where: { id } }), deps);
}

/** A server's OAuth connections end (revoked, deleted) with the spec they were got for. */
async function forgetConnections(ctx: DomainContext, row: Row, deps: UpstreamDeps): Promise<void> {
  const oauth = deps.registry.oauth;
  const transport = specOfRow(row).transport;
  if (!oauth || transport.transport !== 'http' || !transport.oauth) return;
  await oauth.forgetServer(await upstreamOAuthTarget(ctx, row.id, row.userId));
}

/**
 * Deletes a server: its pool stops once no other server shares it (children killed and waited
 * for); its tools and all their bindings stay, unlinked, and their calls fail with a clear error
 * until unbound. Its people's OAuth tokens are revoked and deleted.
 */
export async function deleteUpstreamServer(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  deps: UpstreamDeps,
): Promise<void> {
  await forgetConnections(ctx, await findOwnServer(ctx.prisma, caller, id), deps);
  await changeExposure(ctx, async (tx) => {
    await findOwnServer(tx, caller, id);
    const adis = await tx.adi.findMany({ where: { upstreamServerId: id }, select: { id: true } });
    const bumped = await bumpForAdis(
      tx,
      adis.map((a) => a.id),
    );
    // The AEIs it is attached to lose its resources and prompts, bound tools or not.
    const attached = (
      await tx.aeiAttachment.findMany({ where: { upstreamServerId: id }, select: { aeiId: true } })
    )
      .map((a) => a.aeiId)
      .filter((aeiId) => !bumped.includes(aeiId));
    if (attached.length > 0) {
      await tx.aei.updateMany({ where: { id: { in: attached } }, data: { configVersion: { increment: 1 } } });
    }
    const changedAeis = [...bumped, ...attached];
    // Every binding of its tools stays, attached ones included (their attachment goes): an agent
    // gets a clear error naming the deleted server rather than a tool that silently vanished.
    await tx.aeiBinding.updateMany({
      where: { attachment: { upstreamServerId: id } },
      data: { attachmentId: null },
    });
    await tx.upstreamServer.delete({ where: { id } });
    return { result: undefined, changedAeis };
  });
  await deps.registry.forget(id);
}

export async function upstreamServerLogs(
  db: Db,
  caller: Principal,
  id: string,
  deps: UpstreamDeps,
): Promise<UpstreamServerLogs> {
  const row = await findOwnServer(db, caller, id);
  const pool = deps.registry.pool(row.fingerprint);
  return { lines: pool?.stderr.snapshot() ?? [], dropped: pool?.stderr.dropped ?? 0 };
}

/**
 * Syncs after a create or a spec change; a failure to reach the upstream is not the request's: it
 * is recorded on the server (status, last_error), which the answer shows.
 */
/**
 * A server added without OAuth whose first sync failed: when it answers 401 with a Bearer
 * challenge, it requires OAuth, and is switched to it (its owner then connects their account).
 * One with an Authorization header of its own is left alone (the header may be wrong).
 */
async function oauthIfAsked(ctx: DomainContext, id: string, deps: UpstreamDeps): Promise<void> {
  const oauth = deps.registry.oauth;
  const row = await ctx.prisma.upstreamServer.findUniqueOrThrow({ where: { id } });
  const spec = specOfRow(row);
  const transport = spec.transport;
  if (!oauth || row.status === 'ok' || transport.transport !== 'http' || transport.oauth) return;
  // Only a refusal for want of credentials is worth asking about (an unreachable or hanging server
  // would only be waited for again).
  if (!/\b401\b|unauthori[sz]ed/i.test(row.lastError ?? '')) return;
  if (hasAuthorizationHeader(transport)) return;
  if (!(await oauth.requiresOAuth(transport.url))) return;
  const next: UpstreamSpec = { ...spec, transport: { ...transport, oauth: oauthSpec(id, undefined) } };
  const updated = await ctx.prisma.upstreamServer.update({
    where: { id },
    data: {
      spec: storedSpec(next.transport),
      fingerprint: fingerprintOf(row.userId, next),
      status: 'needs_connection',
      lastError: `upstream server "${row.name}" requires OAuth (it answered 401 with a Bearer challenge): its owner connects their account in the console`,
    },
  });
  deps.registry.remember(knownServer(updated));
}

async function syncOrRecord(
  ctx: DomainContext,
  id: string,
  deps: UpstreamDeps,
  reason: string,
): Promise<void> {
  try {
    await syncUpstreamServer(ctx, id, deps, reason);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
  }
}

/** What an upstream tool's ADI config holds (McpToolConfig). */
function toolConfig(serverId: string, tool: Tool): Record<string, unknown> {
  return {
    upstream_server_id: serverId,
    tool: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    ...(tool.description !== undefined && { description: tool.description }),
    input_schema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { output_schema: tool.outputSchema }),
    ...(tool.annotations !== undefined && { annotations: tool.annotations }),
    // What takenTools kept of them (presentationOf).
    ...(tool._meta !== undefined && { meta: tool._meta }),
    ...(tool.icons !== undefined && { icons: tool.icons }),
  };
}

/**
 * The tool as it can be stored, or why it cannot (see takenTools): its title and description are
 * the upstream's prose, so text a database cannot store is replaced there (said in `warnings`);
 * its annotations are hints, left out when they hold such text; its name and schemas are how it is
 * called, so they are never rewritten.
 */
function storableTool(tool: Tool, warnings: string[]): Tool | string {
  const name = findUnstorable(tool.name);
  if (name) return unstorableMessage('its name', name);
  for (const [part, schema] of [
    ['input_schema', tool.inputSchema],
    ['output_schema', tool.outputSchema],
  ] as const) {
    const found = findUnstorable(schema);
    if (found) return unstorableMessage(`its ${part}`, found);
  }
  let stored = tool;
  for (const field of ['title', 'description'] as const) {
    const text = stored[field];
    const found = text === undefined ? undefined : findUnstorable(text);
    if (text === undefined || !found) continue;
    warnings.push(
      `tool ${quoted(tool.name)}: ${unstorableMessage(`its ${field}`, found)}; it is stored with U+FFFD in its place`,
    );
    stored = { ...stored, [field]: storableText(text) };
  }
  const annotations = stored.annotations === undefined ? undefined : findUnstorable(stored.annotations);
  if (annotations) {
    warnings.push(
      `tool ${quoted(tool.name)}: ${unstorableMessage('its annotations', annotations)}; they were left out`,
    );
    const { annotations: _left, ...rest } = stored;
    stored = rest;
  }
  return stored;
}

/**
 * The tools to take: expose_tools filters by name or glob; tools MCP does not allow, bad names,
 * names or schemas a database cannot store and schemas too large are skipped and reported.
 */
function takenTools(listed: UpstreamListing<Tool>, exposeTools: string[], warnings: string[]): Tool[] {
  const wanted = exposeTools.length > 0 ? picomatch(exposeTools, { nobrace: true, dot: true }) : () => true;
  skippedWarnings('tool', listed, warnings);
  const seen = new Set<string>();
  const taken: Tool[] = [];
  for (const listedTool of listed.items) {
    if (listedTool.name === '' || listedTool.name.length > 128) {
      warnings.push(`a tool with a name that is empty or over 128 characters was skipped`);
      continue;
    }
    if (!wanted(listedTool.name)) continue;
    const tool = storableTool(listedTool, warnings);
    if (typeof tool === 'string') {
      warnings.push(`tool ${quoted(listedTool.name)} was skipped: ${tool}`);
      continue;
    }
    if (seen.has(tool.name)) {
      warnings.push(`tool "${tool.name}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(tool.name);
    if (Buffer.byteLength(JSON.stringify(tool.inputSchema ?? {})) > UPSTREAM_LIMITS.maxSchemaBytes) {
      warnings.push(
        `tool "${tool.name}": its input schema is over ${UPSTREAM_LIMITS.maxSchemaBytes} bytes; skipped`,
      );
      continue;
    }
    // A tool whose x-mcp-header marks break the rules is left out, as a client of the modern era
    // over HTTP leaves it out (SEP-2243): Bindery is one, and its own clients would be the next.
    const marks = headerParamsOf(tool.inputSchema);
    if (!marks.ok) {
      warnings.push(`tool ${quoted(tool.name)} was skipped: ${marks.reason}`);
      continue;
    }
    unusableSchemaWarnings(tool, warnings);
    const { _meta: _listedMeta, icons: _listedIcons, ...rest } = tool;
    const { meta, icons } = presentationOf(tool, `tool ${quoted(tool.name)}`, warnings);
    taken.push({
      ...rest,
      ...(meta !== undefined && { _meta: meta }),
      ...(icons !== undefined && { icons: icons as Tool['icons'] }),
    });
  }
  return taken;
}

/**
 * A schema Bindery cannot read (a dialect it does not know, a `$ref` to another document, a pattern
 * RE2 cannot run) is said at sync; the tool is kept as the server lists it, and a call to it answers
 * PRECONDITION_FAILED with the same reason (arguments.ts) until the server changes it.
 */
function unusableSchemaWarnings(tool: Tool, warnings: string[]): void {
  for (const [which, schema] of [
    ['input', tool.inputSchema],
    ['output', tool.outputSchema],
  ] as const) {
    if (schema === undefined) continue;
    try {
      compileToolSchema(schema as JsonSchema);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      warnings.push(
        `tool ${quoted(tool.name)}: its ${which} schema cannot be used, so calls to it fail until the server changes it: ${reason}`,
      );
    }
  }
}

export interface SyncReport {
  added: string[];
  updated: string[];
  missing: string[];
  warnings: string[];
}

/** JSON-RPC's code for a method a server does not have. */
const METHOD_NOT_FOUND = -32601;

/** What a sync lists besides tools (each undefined when listing it failed). */
interface Catalog {
  resources?: ResourceEntry[];
  resourceTemplates?: ResourceTemplateEntry[];
  prompts?: PromptEntry[];
}

/**
 * The upstream's resources, resource templates and prompts, as its snapshots keep them (upstream-catalog.ts); each is
 * undefined when listing it failed (the stored snapshot stays; a warning says why), and empty when
 * the server does not declare the capability.
 */
async function listCatalog(pool: UpstreamPool, server: string, warnings: string[]): Promise<Catalog> {
  const failed = (what: string, error: unknown) =>
    warnings.push(
      `${what} failed; the ${what === 'resources/templates/list' ? 'resource templates' : what.split('/')[0]} listed before are kept: ${error instanceof Error ? error.message : String(error)}`,
    );
  const catalog: Catalog = {};
  try {
    const listed = await pool.listResources(server, UPSTREAM_CATALOG_LIMITS.maxResources);
    catalog.resources = listed ? resourceSnapshot(listed, warnings) : [];
  } catch (error) {
    failed('resources/list', error);
  }
  try {
    const listed = await pool.listResourceTemplates(server, UPSTREAM_CATALOG_LIMITS.maxResourceTemplates);
    catalog.resourceTemplates = listed ? resourceTemplateSnapshot(listed, warnings) : [];
  } catch (error) {
    // Templates are optional within the resources capability: a server without the method has none.
    if (error instanceof DomainError && error.details?.rpc_code === METHOD_NOT_FOUND)
      catalog.resourceTemplates = [];
    else failed('resources/templates/list', error);
  }
  try {
    const listed = await pool.listPrompts(server, UPSTREAM_CATALOG_LIMITS.maxPrompts);
    catalog.prompts = listed ? promptSnapshot(listed, warnings) : [];
  } catch (error) {
    failed('prompts/list', error);
  }
  return catalog;
}

/**
 * Lists the upstream's tools and stores them (see the file's comment). A failure to reach the
 * upstream is recorded on the server (status, last_error) and thrown; stored tools stay as they were.
 */
export async function syncUpstreamServer(
  ctx: DomainContext,
  serverId: string,
  deps: UpstreamDeps,
  reason: string,
): Promise<SyncReport> {
  // One at a time per server, in the order asked for.
  return deps.registry.serialized(serverId, () => syncNow(ctx, serverId, deps, reason));
}

async function syncNow(
  ctx: DomainContext,
  serverId: string,
  deps: UpstreamDeps,
  reason: string,
): Promise<SyncReport> {
  const server = await deps.registry.known(serverId);
  const row = await ctx.prisma.upstreamServer.findUnique({ where: { id: serverId } });
  if (!row) throw notFound('upstream server', serverId);
  const pool = deps.registry.remember(knownServer(row));
  let listed: UpstreamListing<Tool>;
  try {
    listed = await pool.listTools(server.name, UPSTREAM_LIMITS.maxTools);
  } catch (error) {
    await deps.registry.statusWritten();
    // What the pool recorded (the same text its own state change writes), else the error's. A
    // malformed answer is not recorded by the pool (the server is up): its own words say what happened.
    const { state, lastError } = pool.status;
    const malformed = error instanceof DomainError && error.details?.malformed === true;
    const message =
      (malformed ? null : lastError) ?? (error instanceof Error ? error.message : String(error));
    // A server that requires OAuth and has no connection is not failing: it waits for its owner.
    const unconnected = error instanceof DomainError && error.code === 'UPSTREAM_AUTH_REQUIRED';
    await ctx.prisma.upstreamServer.update({
      where: { id: serverId },
      data: {
        status: unconnected ? 'needs_connection' : state === 'circuit_open' ? 'circuit_open' : 'failing',
        lastError: unconnected ? error.message : message,
      },
    });
    throw error;
  }
  const warnings: string[] = [];
  if (listed.truncated)
    warnings.push(`the server lists more than ${UPSTREAM_LIMITS.maxTools} tools; the rest were skipped`);
  if (listed.withheld > 0)
    warnings.push(`${listed.withheld} tool(s) whose name holds one of the server's secrets were left out`);
  const tools = takenTools(listed, row.exposeTools, warnings);
  const catalog = await listCatalog(pool, server.name, warnings);
  await deps.registry.statusWritten();
  const report: SyncReport = { added: [], updated: [], missing: [], warnings };
  let catalogChanged = false;
  await changeExposure(
    ctx,
    async (tx) => {
      const existing = await tx.adi.findMany({
        where: { upstreamServerId: serverId },
        select: { id: true, config: true },
      });
      const byTool = new Map(existing.map((a) => [(a.config as { tool?: string }).tool ?? '', a]));
      const changed: string[] = [];
      const updatedColumns: OverrideTarget[] = [];
      const added: { id: string; tool: string }[] = [];
      for (const tool of tools) {
        const config = toolConfig(serverId, tool);
        const current = byTool.get(tool.name);
        byTool.delete(tool.name);
        if (current) {
          if (!isDeepStrictEqual(current.config, config)) {
            await tx.adi.update({
              where: { id: current.id },
              data: { config: config as Prisma.InputJsonObject },
            });
            changed.push(current.id);
            updatedColumns.push({
              id: current.id,
              module: mcpKind,
              columns: { tableId: null, jsonPath: null, operationType: null, config },
            });
            report.updated.push(tool.name);
          }
          continue;
        }
        const id = newId('adi');
        await tx.adi.create({
          data: {
            id,
            userId: row.userId,
            kind: 'mcp',
            upstreamServerId: serverId,
            name: prefixedToolName('', tool.name),
            config: config as Prisma.InputJsonObject,
          },
        });
        added.push({ id, tool: tool.name });
        report.added.push(tool.name);
      }
      for (const [tool, adi] of byTool) {
        const config = adi.config as Record<string, unknown>;
        if (config.missing === true) continue;
        await tx.adi.update({
          where: { id: adi.id },
          data: { config: { ...config, missing: true } as Prisma.InputJsonObject },
        });
        changed.push(adi.id);
        report.missing.push(tool);
      }
      // A tool whose schemas changed upstream may no longer fit a binding's narrowing: such a
      // binding is switched off (and said so), never left promising what the tool no longer does.
      for (const broken of await brokenOverrides(tx, updatedColumns)) {
        await tx.aeiBinding.update({ where: { id: broken.binding_id }, data: { enabled: false } });
        warnings.push(
          `binding ${broken.binding_id} ("${broken.tool_name}" in AEI ${broken.aei_id}) was disabled: ${broken.reason}`,
        );
      }
      const attachedAeis = await bindAttached(tx, serverId, added, warnings);
      // The snapshots as stored now (another sync may have written them since this one read the row).
      const stored = await tx.upstreamServer.findUniqueOrThrow({
        where: { id: serverId },
        select: { resources: true, prompts: true, resourceTemplates: true },
      });
      const resourcesChanged =
        catalog.resources !== undefined && !isDeepStrictEqual(stored.resources, catalog.resources);
      const templatesChanged =
        catalog.resourceTemplates !== undefined &&
        !isDeepStrictEqual(stored.resourceTemplates, catalog.resourceTemplates);
      const promptsChanged =
        catalog.prompts !== undefined && !isDeepStrictEqual(stored.prompts, catalog.prompts);
      catalogChanged = resourcesChanged || templatesChanged || promptsChanged;
      await tx.upstreamServer.update({
        where: { id: serverId },
        data: {
          status: 'ok',
          lastError: null,
          lastSyncAt: new Date(),
          warnings: warnings.slice(0, 50),
          ...(resourcesChanged && { resources: catalog.resources as unknown as Prisma.InputJsonArray }),
          ...(promptsChanged && { prompts: catalog.prompts as unknown as Prisma.InputJsonArray }),
          ...(templatesChanged && {
            resourceTemplates: catalog.resourceTemplates as unknown as Prisma.InputJsonArray,
          }),
        },
      });
      // A changed snapshot changes the config of every AEI the server is attached to.
      const catalogAeis = catalogChanged
        ? (
            await tx.aeiAttachment.findMany({
              where: { upstreamServerId: serverId },
              select: { aeiId: true },
            })
          ).map((a) => a.aeiId)
        : [];
      const bumped = await bumpForAdis(tx, changed);
      const more = [...new Set([...attachedAeis, ...catalogAeis])].filter((id) => !bumped.includes(id));
      if (more.length > 0) {
        await tx.aei.updateMany({ where: { id: { in: more } }, data: { configVersion: { increment: 1 } } });
      }
      return { result: undefined, changedAeis: [...bumped, ...more] };
    },
    60_000,
  );
  if (report.added.length + report.updated.length + report.missing.length > 0) {
    deps.registry.options.log.info(
      {
        upstream_server_id: serverId,
        reason,
        added: report.added.length,
        updated: report.updated.length,
        missing: report.missing.length,
      },
      'upstream tools synced',
    );
  }
  if (catalogChanged) {
    deps.registry.options.log.info(
      {
        upstream_server_id: serverId,
        reason,
        resources: catalog.resources?.length,
        resource_templates: catalog.resourceTemplates?.length,
        prompts: catalog.prompts?.length,
      },
      'upstream resources and prompts synced',
    );
  }
  return report;
}

/**
 * Binds new tools into the AEIs the server is attached to, as `{prefix}_{tool}`. A name already
 * taken there is not bound and is reported (never renamed silently). Returns the AEIs changed.
 */
async function bindAttached(
  tx: Db,
  serverId: string,
  added: { id: string; tool: string }[],
  warnings: string[],
): Promise<string[]> {
  if (added.length === 0) return [];
  const attachments = await tx.aeiAttachment.findMany({ where: { upstreamServerId: serverId } });
  const changed = new Set<string>();
  for (const attachment of attachments) {
    const names = added.map((a) => ({ ...a, name: prefixedToolName(attachment.prefix, a.tool) }));
    const taken = new Set(
      (
        await tx.aeiBinding.findMany({
          where: { aeiId: attachment.aeiId, toolName: { in: names.map((n) => n.name) } },
          select: { toolName: true },
        })
      ).map((b) => b.toolName),
    );
    for (const entry of names) {
      if (taken.has(entry.name)) {
        warnings.push(
          `tool "${entry.tool}" is not bound in AEI ${attachment.aeiId}: the name "${entry.name}" is taken there`,
        );
        continue;
      }
      await tx.aeiBinding.create({
        data: {
          id: newId('bnd'),
          aeiId: attachment.aeiId,
          adiId: entry.id,
          toolName: entry.name,
          toolNameInherited: false,
          attachmentId: attachment.id,
        },
      });
      taken.add(entry.name);
      changed.add(attachment.aeiId);
    }
  }
  return [...changed];
}

/** True when the AEI has nothing yet: no binding, attachment or prompt of its own. */
async function onlySource(tx: Db, aeiId: string): Promise<boolean> {
  const [bindings, attachments, prompts] = await Promise.all([
    tx.aeiBinding.count({ where: { aeiId } }),
    tx.aeiAttachment.count({ where: { aeiId } }),
    tx.aeiPrompt.count({ where: { aeiId } }),
  ]);
  return bindings + attachments + prompts === 0;
}

/**
 * Attaches a whole server to an AEI: each of its current tools is bound as `{prefix}_{tool}`, and
 * later syncs bind new ones. Without a prefix given, a server that becomes the AEI's only source (no
 * bindings, attachments or prompts yet) keeps its own names, so the exposure reads as the server
 * itself; otherwise the prefix is the server's slug. A name already taken in the
 * AEI, or a tool of the server already bound there, refuses the whole attach (CONFLICT listing them).
 */
export async function attachUpstreamServer(
  ctx: DomainContext,
  caller: Principal,
  aeiId: string,
  body: { upstream_server_id: string; prefix?: string | undefined },
) {
  return changeExposure(ctx, async (tx) => {
    const aei = await tx.aei.findFirst({ where: { id: aeiId, userId: caller.userId }, select: { id: true } });
    if (!aei) throw notFound('AEI', aeiId);
    const server = await findOwnServer(tx, caller, body.upstream_server_id);
    const prefix = body.prefix ?? ((await onlySource(tx, aeiId)) ? '' : server.slug);
    const existing = await tx.aeiAttachment.findFirst({ where: { aeiId, upstreamServerId: server.id } });
    if (existing) {
      throw new DomainError('CONFLICT', `upstream server "${server.name}" is already attached to this AEI`, {
        attachment_id: existing.id,
      });
    }
    const adis = await tx.adi.findMany({
      where: { upstreamServerId: server.id },
      select: { id: true, config: true },
      orderBy: { id: 'asc' },
    });
    const wanted = adis
      .filter((a) => (a.config as { missing?: boolean }).missing !== true)
      .map((a) => {
        const tool = (a.config as { tool?: string }).tool ?? a.id;
        return { adiId: a.id, tool, name: prefixedToolName(prefix, tool) };
      });
    const clashes = await tx.aeiBinding.findMany({
      where: {
        aeiId,
        OR: [{ toolName: { in: wanted.map((w) => w.name) } }, { adiId: { in: wanted.map((w) => w.adiId) } }],
      },
      select: { id: true, toolName: true, adiId: true },
    });
    const names = new Map<string, string>();
    for (const w of wanted) {
      const twice = names.get(w.name);
      if (twice !== undefined) clashes.push({ id: '', toolName: w.name, adiId: w.adiId });
      names.set(w.name, w.adiId);
    }
    if (clashes.length > 0) {
      throw new DomainError(
        'CONFLICT',
        `attaching "${server.name}" with prefix "${prefix}" would clash with ${clashes.length} tool(s) of this AEI ` +
          `(${clashes
            .slice(0, 5)
            .map((c) => `"${c.toolName}"`)
            .join(', ')}); choose another prefix or unbind them`,
        {
          prefix,
          clashes: clashes.map((c) => ({ tool_name: c.toolName, binding_id: c.id || null, adi_id: c.adiId })),
        },
      );
    }
    const attachment = await tx.aeiAttachment.create({
      data: { id: newId('att'), aeiId, upstreamServerId: server.id, prefix },
    });
    const items = [];
    for (const w of wanted) {
      items.push(
        await tx.aeiBinding.create({
          data: {
            id: newId('bnd'),
            aeiId,
            adiId: w.adiId,
            toolName: w.name,
            toolNameInherited: false,
            attachmentId: attachment.id,
          },
        }),
      );
    }
    await tx.aei.update({ where: { id: aeiId }, data: { configVersion: { increment: 1 } } });
    return {
      result: {
        attachment: { id: attachment.id, aei_id: aeiId, upstream_server_id: server.id, prefix },
        items,
      },
      changedAeis: [aeiId],
    };
  });
}

/**
 * What the OAuth broker needs of a server that requires OAuth, for the person whose it is (its
 * client secret filled in); a server without OAuth is a 409 saying so.
 */
export async function upstreamOAuthTarget(
  ctx: DomainContext,
  serverId: string,
  userId: string,
): Promise<OAuthTarget> {
  const row = await ctx.prisma.upstreamServer.findFirst({ where: { id: serverId, userId } });
  if (!row) throw notFound('upstream server', serverId);
  const server = knownServer(row);
  const transport = server.spec.transport;
  if (transport.transport !== 'http' || !transport.oauth) {
    throw new DomainError(
      'CONFLICT',
      `upstream server "${row.name}" does not require OAuth (auth "none"): set auth "oauth" to connect accounts to it`,
      { field: 'auth' },
    );
  }
  const secrets = await resolveSecrets(ctx, userId, transportSecretNames(transport));
  return oauthTarget(server, transport.oauth, (value) => secrets.fill(value));
}
