/**
 * What a gateway needs to serve an api_key: config v2 of an AEI (DESIGN.md §4) or, for keys of
 * legacy instances, the v1 config. Looked up by the key's SHA-256, never by the key itself. The
 * exposures of a disabled user are served as disabled, whatever their own status.
 */
import {
  PLAYGROUND_KEY_PREFIX,
  isWellFormedPlaygroundKey,
  type ConfigV2,
  type KeyFlavor,
  type LegacyConfig,
} from '@bindery/contracts';
import type { Aei } from '../generated/prisma/client.ts';
import { notFound } from '../domain/errors.ts';
import { hashSecret } from '../domain/ids.ts';
import type { Db } from '../domain/context.ts';
import { contextKind } from '../kinds/context/context-kind.ts';
import { legacyColumns, legacyTools } from '../kinds/context/legacy-tools.ts';
import { configPromptsOf } from './prompts.ts';
import { resolveTools } from './tools.ts';
import { attachedCatalogs, upstreamCatalog, type ClashLog } from './upstream-catalog.ts';
import { OWNER_STATUS, type WithOwner } from '../accounts/users.ts';

/** The app of a tool whose table has no project (DESIGN.md §7). */
export const DEFAULT_APP = 'default';

/** The AEI's id and config_version for an api_key, or undefined: the cheap check behind ETags. */
export async function configVersionOf(db: Db, apiKey: string): Promise<number | undefined> {
  const aei = await db.aei.findUnique({
    where: { apiKeyHash: hashSecret(apiKey) },
    select: { configVersion: true },
  });
  return aei?.configVersion;
}

/**
 * Config v2 for an AEI api_key: enabled bindings of an enabled AEI. NOT_FOUND for unknown keys.
 * `clashes`: where what attached upstream servers hide from each other is logged (once a version).
 */
export async function configForApiKey(db: Db, apiKey: string, clashes?: ClashLog): Promise<ConfigV2> {
  const aei = await db.aei.findUnique({ where: { apiKeyHash: hashSecret(apiKey) }, include: OWNER_STATUS });
  if (!aei) throw notFound('AEI for api_key', `${apiKey.slice(0, 12)}…`);
  return configOf(db, aei, clashes);
}

/**
 * Config v2 of an AEI read with its owner's status (OWNER_STATUS): the one builder behind every
 * lookup, by api_key here and by personal key and caller in callers.ts.
 */
export async function configOf(db: Db, aei: Aei & WithOwner, clashes?: ClashLog): Promise<ConfigV2> {
  const enabled = aei.status === 'enabled' && aei.user.disabledAt === null;
  const [tools, prompts, attached] = enabled
    ? await Promise.all([resolveTools(db, aei.id), configPromptsOf(db, aei.id), attachedCatalogs(db, aei.id)])
    : [[], [], []];
  // Resources and prompts of the attached upstream servers; the AEI's own prompts win a name.
  const upstream = enabled
    ? upstreamCatalog(
        attached,
        prompts.map((p) => p.name),
      )
    : undefined;
  if (upstream) clashes?.report(aei.id, aei.configVersion, upstream.clashes);
  return {
    aei: {
      id: aei.id,
      name: aei.name,
      user_id: aei.userId,
      status: enabled ? 'enabled' : 'disabled',
      exposure_mode: aei.exposureMode === 'progressive' ? 'progressive' : 'direct',
      catalog_search: aei.catalogSearch,
      config_version: aei.configVersion,
      legacy_instance_id: aei.legacyInstanceId,
    },
    bindings: tools.map((tool) => ({
      binding_id: tool.bindingId,
      tool_name: tool.name,
      tool_description: tool.description,
      // As tools/list shows it (toolPreview): an upstream tool's title and annotations as declared.
      ...(tool.title !== undefined && { title: tool.title }),
      input_schema: tool.inputSchema,
      output_schema: tool.outputSchema,
      ...(tool.annotations !== undefined && { annotations: tool.annotations }),
      ...(tool.meta !== undefined && { meta: tool.meta }),
      ...(tool.icons !== undefined && { icons: tool.icons }),
      enabled: true,
      ...(tool.resource && { resource: true }),
      app: tool.adi.project?.slug ?? DEFAULT_APP,
      app_id: tool.adi.project?.id ?? DEFAULT_APP,
      app_name: tool.adi.project?.name ?? 'Default',
      // A tool without a context (and without a category) is listed under its kind.
      category: tool.adi.category ?? tool.adi.tableName ?? tool.adi.kind,
      adi_ref: tool.adiRef,
      adi_name: tool.adi.name,
    })),
    prompts,
    ...(upstream && upstream.resources.length > 0 && { upstream_resources: upstream.resources }),
    ...(upstream &&
      upstream.resource_templates.length > 0 && { upstream_resource_templates: upstream.resource_templates }),
    ...(upstream && upstream.prompts.length > 0 && { upstream_prompts: upstream.prompts }),
  };
}

/** The v1 config of a legacy instance's api_key. NOT_FOUND for unknown keys. */
export async function legacyConfigForApiKey(db: Db, apiKey: string): Promise<LegacyConfig> {
  const config = await legacyConfigOf(db, hashSecret(apiKey));
  if (!config) throw notFound('MCP instance for api_key', `${apiKey.slice(0, 12)}…`);
  return config;
}

async function legacyConfigOf(db: Db, apiKeyHash: string): Promise<LegacyConfig | undefined> {
  const instance = await db.mcpInstance.findUnique({
    where: { apiKeyHash },
    include: { table: { select: { name: true } }, ...OWNER_STATUS },
  });
  if (!instance) return undefined;
  const enabled = instance.status !== 'disabled' && instance.user.disabledAt === null;
  const tools = legacyTools(instance);
  return {
    instance: {
      id: instance.id,
      user_id: instance.userId,
      status: enabled ? 'enabled' : 'disabled',
      table_id: instance.tableId,
      json_path: instance.jsonPath,
      preview_keys: instance.previewKeys,
    },
    tools: tools.map((t) => {
      // A v1 tool is a context tool without an ADI row: the context kind describes it.
      const columns = legacyColumns(instance, t.operation_type, {});
      const place = { tableName: instance.table.name };
      const annotations = contextKind.annotations(columns, place);
      const output = contextKind.outputSchema(columns);
      return {
        name: t.name,
        ...(annotations.title !== undefined && { title: annotations.title }),
        operation_type: t.operation_type,
        description: t.description ?? contextKind.defaultDescription(columns, place),
        input_schema: contextKind.inputSchema(columns),
        // The same as the tool it becomes in an AEI once migrated: clients see no difference.
        ...(output !== null && { output_schema: output }),
        annotations,
      };
    }),
  };
}

export type KeyLookup =
  /** `playground`: the key is a playground key of the AEI, serving until `expires_at`. */
  | { kind: 'aei'; config: ConfigV2; playground?: { expires_at: string } }
  /** The AEI's config is still the one the caller holds (its ETag matched): no config was built. */
  | { kind: 'aei-unchanged'; configVersion: number }
  | { kind: 'legacy'; config: LegacyConfig }
  | { kind: 'unknown' };

/** An AEI's answer to a key lookup: unchanged for the caller's ETag, else its config (and the playground marker). */
async function aeiAnswer(
  db: Db,
  aei: Parameters<typeof configOf>[1],
  unchanged: (configVersion: number) => boolean,
  clashes: ClashLog | undefined,
  playground?: { expires_at: string },
): Promise<KeyLookup> {
  if (unchanged(aei.configVersion)) return { kind: 'aei-unchanged', configVersion: aei.configVersion };
  return { kind: 'aei', config: await configOf(db, aei, clashes), ...(playground && { playground }) };
}

/**
 * What an api_key exposes on a URL of this flavour, in one call: an AEI's config v2 (`unchanged`
 * says whether the caller's ETag still names its version), else a legacy instance's v1 config,
 * else unknown. A v1 URL serves an AEI only when it was migrated from a legacy instance (the
 * instance's old URL keeps working). The key is hashed once; the AEI's bindings are only read when
 * the caller's copy is out of date. A live playground key (`bnd_pg_`, v2 URLs only) answers as its
 * AEI's own key would, with the same ETag, marked `playground`; an expired one is unknown, whatever
 * ETag the caller holds (so never `aei-unchanged`).
 */
export async function lookupApiKey(
  db: Db,
  apiKey: string,
  flavor: KeyFlavor,
  unchanged: (configVersion: number) => boolean = () => false,
  clashes?: ClashLog,
): Promise<KeyLookup> {
  if (apiKey.startsWith(PLAYGROUND_KEY_PREFIX)) {
    // A string that could never have been issued costs no query.
    if (flavor !== 'v2' || !isWellFormedPlaygroundKey(apiKey)) return { kind: 'unknown' };
    const key = await db.aeiPlaygroundKey.findUnique({
      where: { keyHash: hashSecret(apiKey) },
      include: { aei: { include: OWNER_STATUS } },
    });
    if (!key || key.expiresAt.getTime() <= Date.now()) return { kind: 'unknown' };
    return aeiAnswer(db, key.aei, unchanged, clashes, { expires_at: key.expiresAt.toISOString() });
  }
  const apiKeyHash = hashSecret(apiKey);
  const aei = await db.aei.findUnique({ where: { apiKeyHash }, include: OWNER_STATUS });
  if (aei) {
    // An AEI's key belongs to no legacy instance (a migration moves the hash, never copies it).
    if (flavor === 'v1' && aei.legacyInstanceId === null) return { kind: 'unknown' };
    return aeiAnswer(db, aei, unchanged, clashes);
  }
  const legacy = await legacyConfigOf(db, apiKeyHash);
  return legacy ? { kind: 'legacy', config: legacy } : { kind: 'unknown' };
}
