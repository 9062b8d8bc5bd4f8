/**
 * `POST /api/v2/openapi-imports`: an OpenAPI document (or its URL) becomes one HTTP ADI per
 * operation in a project of the caller. The tools remember where they came from
 * (`config.source`: the document's title and the operation), so importing the same document into
 * the same project again updates them in place: new operations are added, changed ones updated,
 * and tools whose operation the document no longer has are deleted with their bindings. One
 * transaction; a dry run reports the same and writes nothing.
 *
 * The conversion (http/openapi/) knows no storage; this step stores its tools, renaming and
 * checking their bindings as an ADI update does (adis.ts), so it sits beside adis.ts, above the
 * kind folders.
 */
import { isDeepStrictEqual } from 'node:util';
import { HttpToolSource, type OpenApiImportBody, type OpenApiImportResult } from '@bindery/contracts';
import type { Dispatcher } from 'undici';
import type { Adi, Prisma } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import type { OpenApiConverter } from './http/openapi/openapi-conversion.ts';
import { fetchGuarded } from '../outbound/outbound-fetch.ts';
import { httpKind } from './http/http-kind.ts';
import { newIds } from '../domain/ids.ts';
import { renameInheritingBindings } from './adis.ts';
import { brokenOverrides, type BrokenOverride } from './binding-overrides.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpForAdis, changeExposure } from '../domain/config-versions.ts';
import type { ImportedHttpTool, OpenApiConversion } from './http/openapi/index.ts';
import { findOwnProject } from '../context/projects.ts';
import { missingSecretNames } from '../secrets/secret-references.ts';

export interface OpenApiImportDeps {
  /** Converts documents off the event loop, bounded in time and memory. */
  converter: Pick<OpenApiConverter, 'convert'>;
  /** The guarded dispatcher outgoing requests go through (a document fetched by URL). */
  outbound: Dispatcher;
  /** OPENAPI_IMPORT_MAX_BYTES: the largest document fetched from a URL. */
  maxDocumentBytes: number;
  /** How long fetching a document may take, redirects included. */
  fetchTimeoutMs?: number;
}

const FETCH_TIMEOUT_MS = 30_000;
/** ADIs written per INSERT. */
const INSERT_SLICE = 500;
/**
 * The import's transaction may take this long: thousands of tools with schemas of their own are
 * minutes of writing on a slow machine, not the seconds other admin changes take.
 */
const IMPORT_TRANSACTION_MS = 300_000;
// The bounds of HttpToolSource (contracts), which a stored config must fit.
const API_MAX = (HttpToolSource.properties.api as { maxLength?: number }).maxLength ?? 200;
const OPERATION_ID_MAX = (HttpToolSource.properties.operation_id as { maxLength?: number }).maxLength ?? 4096;

type Operation = OpenApiImportResult['added'][number];

/** What a tool of the import is stored as (name, description, category and config). */
interface Planned {
  tool: ImportedHttpTool;
  row: { name: string; description: string | null; category: string | null; config: Record<string, unknown> };
}

type StoredAdi = Pick<Adi, 'id' | 'name' | 'description' | 'category' | 'config'>;

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `${field}: ${message}`, { field, ...extra });
}

/** The document's text from `url`, fetched through the guard; errors name the field `url`. */
async function fetchDocument(url: string, deps: OpenApiImportDeps): Promise<string> {
  let response;
  try {
    response = await fetchGuarded(
      deps.outbound,
      url,
      { headers: { accept: 'application/json, application/yaml;q=0.9, text/yaml;q=0.9, */*;q=0.5' } },
      {
        timeoutMs: deps.fetchTimeoutMs ?? FETCH_TIMEOUT_MS,
        maxBodyBytes: deps.maxDocumentBytes,
        maxRedirects: 5,
      },
    );
  } catch (error) {
    if (error instanceof DomainError) {
      const message =
        error.code === 'LIMIT_EXCEEDED' ? `${error.message} (OPENAPI_IMPORT_MAX_BYTES)` : error.message;
      throw new DomainError(error.code, `url: ${message}`, { ...error.details, field: 'url' });
    }
    throw error;
  }
  if (response.status < 200 || response.status > 299) {
    throw new DomainError(
      'UPSTREAM_FAILED',
      `url: ${new URL(response.url).origin} answered HTTP ${response.status} instead of the document`,
      { field: 'url', status: response.status },
    );
  }
  return response.body.toString('utf8');
}

/** The document the body gives (inline, or fetched by URL); exactly one of the two. */
async function documentOf(body: OpenApiImportBody, deps: OpenApiImportDeps): Promise<unknown> {
  if (body.document !== undefined && body.url !== undefined) {
    throw invalid('url', 'give either document or url, not both');
  }
  if (body.url !== undefined) return fetchDocument(body.url, deps);
  if (body.document === undefined) {
    throw invalid('document', 'give the OpenAPI document (an object, or JSON or YAML text) or its url');
  }
  return body.document;
}

/** The row each converted tool becomes; its source ties it to the document and operation. */
function plan(conversion: OpenApiConversion, api: string, warn: (id: string, message: string) => void) {
  const planned: Planned[] = [];
  for (const tool of conversion.tools) {
    if (tool.operation_id.length > OPERATION_ID_MAX) {
      warn(
        tool.operation_id.slice(0, 200),
        `not imported: its operation id is over ${OPERATION_ID_MAX} characters`,
      );
      continue;
    }
    planned.push({
      tool,
      row: {
        name: tool.name,
        description: tool.description,
        category: tool.category,
        config: { ...tool.config, source: { api, operation_id: tool.operation_id } },
      },
    });
  }
  return planned;
}

/** JSON as stored: keys with undefined values dropped, so a comparison sees what a read gives. */
function asStored<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function sameRow(stored: StoredAdi, row: Planned['row']): boolean {
  return isDeepStrictEqual(
    asStored({
      name: stored.name,
      description: stored.description,
      category: stored.category,
      config: stored.config,
    }),
    asStored(row),
  );
}

/** The operation id an ADI was imported from when it came from the document `api`, else undefined. */
function sourceOf(adi: StoredAdi, api: string): string | undefined {
  const source = (adi.config as { source?: { api?: unknown; operation_id?: unknown } } | null)?.source;
  return source?.api === api && typeof source.operation_id === 'string' ? source.operation_id : undefined;
}

/**
 * The HTTP ADIs an earlier import of the document `api` made in the project (or outside projects),
 * by operation id; the oldest wins when a user copied one by hand.
 */
async function earlierImport(
  db: Db,
  caller: Principal,
  projectId: string | null,
  api: string,
): Promise<Map<string, StoredAdi>> {
  const rows = await db.adi.findMany({
    where: { userId: caller.userId, kind: 'http', tableId: null, projectId },
    select: { id: true, name: true, description: true, category: true, config: true },
    orderBy: { id: 'asc' },
  });
  const byOperation = new Map<string, StoredAdi>();
  for (const row of rows) {
    const operationId = sourceOf(row, api);
    if (operationId !== undefined && !byOperation.has(operationId)) byOperation.set(operationId, row);
  }
  return byOperation;
}

interface Diff {
  added: Planned[];
  changed: { planned: Planned; stored: StoredAdi }[];
  unchanged: { planned: Planned; stored: StoredAdi }[];
  removed: { operationId: string; stored: StoredAdi }[];
}

/**
 * Compares the tools with the earlier import. An operation still in the document but left out by
 * the filters (or not importable this time, with a warning) keeps its tool as it is: only an
 * operation gone from the document removes one.
 */
function compare(planned: Planned[], earlier: Map<string, StoredAdi>, allOperations: Set<string>): Diff {
  const diff: Diff = { added: [], changed: [], unchanged: [], removed: [] };
  for (const item of planned) {
    const stored = earlier.get(item.tool.operation_id);
    if (stored === undefined) diff.added.push(item);
    else if (sameRow(stored, item.row)) diff.unchanged.push({ planned: item, stored });
    else diff.changed.push({ planned: item, stored });
  }
  for (const [operationId, stored] of earlier) {
    if (!allOperations.has(operationId)) diff.removed.push({ operationId, stored });
  }
  return diff;
}

/**
 * The bindings of changed tools whose input-schema override the changed tool no longer accepts.
 * The import disables them rather than refusing the whole document (one tool's override must not
 * block the others' update) or dropping the override (it may be what keeps an agent from sending
 * something; without it the binding would accept more than its owner allowed).
 */
async function overridesToDisable(db: Db, diff: Diff): Promise<BrokenOverride[]> {
  return brokenOverrides(
    db,
    diff.changed.map(({ planned, stored }) => ({
      id: stored.id,
      module: httpKind,
      columns: { tableId: null, jsonPath: null, operationType: null, config: planned.row.config },
    })),
  );
}

/** Writes the diff in the open transaction; answers the new ADIs' ids and the AEIs to bump. */
async function apply(
  tx: Db,
  caller: Principal,
  projectId: string | null,
  diff: Diff,
): Promise<{ addedIds: string[]; changedAeis: string[] }> {
  const addedIds = newIds('adi', diff.added.length);
  // In slices: one statement's bind parameters are bounded (65,535 on PostgreSQL).
  for (let start = 0; start < diff.added.length; start += INSERT_SLICE) {
    await tx.adi.createMany({
      data: diff.added.slice(start, start + INSERT_SLICE).map((item, i) => ({
        id: addedIds[start + i]!,
        userId: caller.userId,
        kind: 'http',
        projectId,
        ...item.row,
        config: item.row.config as Prisma.InputJsonObject,
      })),
    });
  }
  // Before anything is deleted: the bindings of removed tools still point at them here.
  const changedAeis = await bumpForAdis(tx, [
    ...diff.changed.map((c) => c.stored.id),
    ...diff.removed.map((r) => r.stored.id),
  ]);
  for (const { planned, stored } of diff.changed) {
    if (planned.row.name !== stored.name) await renameInheritingBindings(tx, stored.id, planned.row.name);
    await tx.adi.update({
      where: { id: stored.id },
      data: { ...planned.row, config: planned.row.config as Prisma.InputJsonObject },
    });
  }
  if (diff.removed.length > 0) {
    // Their bindings go with them (the foreign key cascades).
    await tx.adi.deleteMany({ where: { id: { in: diff.removed.map((r) => r.stored.id) } } });
  }
  return { addedIds, changedAeis };
}

/**
 * Imports an OpenAPI document for the caller (see the module comment). VALIDATION_FAILED naming the
 * field for bad input (`document`, `url`, `base_url`, `methods`, ...), NOT_FOUND for a project that
 * is not the caller's, UPSTREAM_FAILED / FORBIDDEN / TIMEOUT / LIMIT_EXCEEDED for a URL that cannot
 * be fetched, CONFLICT when a renamed tool's new name is taken in one of its exposures.
 */
export async function importOpenApi(
  ctx: DomainContext,
  caller: Principal,
  body: OpenApiImportBody,
  deps: OpenApiImportDeps,
): Promise<OpenApiImportResult> {
  const projectId = body.project_id ?? null;
  if (projectId !== null) await findOwnProject(ctx.prisma, caller, projectId);
  const document = await documentOf(body, deps);
  const conversion = await deps.converter.convert(document, {
    ...(body.base_url !== undefined && { base_url: body.base_url }),
    ...(body.tags !== undefined && { tags: body.tags }),
    ...(body.paths !== undefined && { paths: body.paths }),
    ...(body.methods !== undefined && { methods: body.methods }),
  });
  const api = conversion.api.slice(0, API_MAX);
  const warnings = [...conversion.warnings];
  const planned = plan(conversion, api, (operationId, message) =>
    warnings.push({ operation_id: operationId, message }),
  );
  const dryRun = body.dry_run ?? false;
  const allOperations = new Set(conversion.operation_ids);

  const run = async (db: Db, write: boolean) => {
    // One import of a user at a time: two at once would both find no earlier import and both
    // add the tools. The user's row is the lock (a project may be absent).
    if (write) await db.$queryRaw`SELECT 1 FROM "user" WHERE id = ${caller.userId} FOR UPDATE`;
    const diff = compare(planned, await earlierImport(db, caller, projectId, api), allOperations);
    const disabled = await overridesToDisable(db, diff);
    const written = write ? await apply(db, caller, projectId, diff) : { addedIds: [], changedAeis: [] };
    if (write && disabled.length > 0) {
      // Their AEIs were bumped with the changed tools.
      await db.aeiBinding.updateMany({
        where: { id: { in: disabled.map((b) => b.binding_id) } },
        data: { enabled: false },
      });
    }
    const missing = await missingSecretNames(
      db,
      caller.userId,
      conversion.secrets.map((s) => s.name),
    );
    const ids = new Map<string, string | null>();
    diff.added.forEach((item, i) => ids.set(item.tool.operation_id, written.addedIds[i] ?? null));
    for (const { planned: item, stored } of [...diff.changed, ...diff.unchanged]) {
      ids.set(item.tool.operation_id, stored.id);
    }
    const operation = (item: Planned): Operation => ({
      operation_id: item.tool.operation_id,
      name: item.row.name,
      id: ids.get(item.tool.operation_id) ?? null,
    });
    const result: OpenApiImportResult = {
      dry_run: !write,
      project_id: projectId,
      api,
      added: diff.added.map(operation),
      changed: diff.changed.map((c) => operation(c.planned)),
      removed: diff.removed.map((r) => ({
        operation_id: r.operationId,
        name: r.stored.name,
        id: r.stored.id,
      })),
      unchanged: diff.unchanged.length,
      adis: planned.map((item) => {
        const { operation_id, name, id } = operation(item);
        return { id, name, operation_id };
      }),
      warnings,
      secrets_to_create: conversion.secrets.filter((s) => missing.includes(s.name)),
      bindings_disabled: disabled,
    };
    return { result, changedAeis: written.changedAeis };
  };

  if (dryRun) return (await run(ctx.prisma, false)).result;
  return changeExposure(ctx, (tx) => run(tx, true), IMPORT_TRANSACTION_MS);
}
