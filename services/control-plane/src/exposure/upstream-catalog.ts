/**
 * Resources and prompts of upstream MCP servers, passed through to the AEIs they are attached to
 * (contracts: upstream-catalog.ts), from the snapshot a sync keeps of each server
 * (kinds/mcp/upstream-snapshot.ts). Config v2 carries each attached server's entries, in
 * attachment order, resources by their own URI and prompts as `{prefix}_{name}`. What is offered
 * twice goes to the first: the AEI's own resources (`bindery://`) and prompts always win, then the
 * server attached first. The others are hidden, shown by `GET /api/v2/aeis/{id}/upstream-catalog`
 * and logged once per config version. A gateway reads a resource or gets a prompt through
 * `POST /internal/aei/{aei_id}/upstream-request`: only an attached server, and only what its
 * snapshot lists, audited like a tool call.
 */
import {
  type ConfigUpstreamPrompt,
  type ConfigUpstreamResource,
  type ConfigUpstreamResourceTemplate,
} from '@bindery/contracts';
import type { Db, Principal } from '../domain/context.ts';
import { findOwnAei } from './aeis.ts';
import { prefixedToolName, TOOL_NAME_MAX } from '../kinds/mcp/upstream-names.ts';
import {
  shown,
  storedEntries,
  type PromptEntry,
  type ResourceEntry,
  type ResourceTemplateEntry,
} from '../kinds/mcp/upstream-snapshot.ts';

/** URIs of the AEI's own resources: an upstream's URI with this start is never served. */
const OWN_URI_PREFIX = 'bindery://';

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
  /** Resource templates in attachment order, one per template text (the first attached wins). */
  resource_templates: ConfigUpstreamResourceTemplate[];
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
    select: {
      prefix: true,
      upstreamServer: { select: { id: true, resources: true, resourceTemplates: true, prompts: true } },
    },
  });
  return rows.map((r) => ({ prefix: r.prefix, server: r.upstreamServer }));
}

export interface AttachedCatalog {
  prefix: string;
  server: { id: string; resources: unknown; resourceTemplates?: unknown; prompts: unknown };
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
  const templates: ConfigUpstreamResourceTemplate[] = [];
  const templateOwner = new Set<string>();
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
    for (const entry of storedEntries<ResourceTemplateEntry>(server.resourceTemplates)) {
      // The same template from two servers: the first attached serves it (a URI matching two
      // different templates goes to the first listed, see the gateway's resources.ts).
      if (templateOwner.has(entry.uri_template) || templates.length >= MAX_AEI_UPSTREAM_RESOURCES) continue;
      templateOwner.add(entry.uri_template);
      templates.push({ upstream_server_id: server.id, ...entry });
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
  return { resources, resource_templates: templates, prompts, clashes: listed, left_out: leftOut };
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
