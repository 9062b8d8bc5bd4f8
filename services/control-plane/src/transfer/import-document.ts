/**
 * Import: an export document recreated for the caller, all or nothing, with new ids (references
 * remapped) and new api keys (shown once, in the answer). Names are kept: ADI and tool names
 * always, since they are what agents see; a project, a table outside projects or an AEI whose name
 * the caller already uses is imported as "name (2)" (the first free number; a project's slug gets
 * "-2"), and reported as a clash. Secrets travel by name only: the answer lists the ones the
 * caller lacks (`secrets_to_create`). A dry run checks and plans the same way and writes nothing.
 *
 * Every fault of the document is a VALIDATION_FAILED naming its place (`body/adis/3/json_path`),
 * found before anything is written.
 */
import {
  DEFAULT_ADI_KIND,
  MAX_JSON_DEPTH,
  PROMPT_LIMITS,
  type ExportDocument,
  type ImportClash,
  type ImportResult,
} from '@bindery/contracts';
import { OpError, checkValueArgument, type JsonValue } from '@bindery/context-ops';
import { Prisma } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { newCredential, newIds } from '../domain/ids.ts';
import { checkOutputOverride, checkOverride } from '../kinds/binding-overrides.ts';
import { checkTemplate, promptChars } from '../exposure/prompts.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { changeExposure } from '../domain/config-versions.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';
import { dataBytes, firstSnapshot } from '../context/table-data.ts';
import { checkTableBytes, DEFAULT_TABLE_LIMITS, type TableLimits } from '../context/table-limits.ts';
import { checkDataKeepsRules, compileRules, storableRules } from '../context/table-rules.ts';
import type { SourceChecker } from '../domain/context.ts';
import { checkColumns, offeredKind, type KindColumns, type RegisteredKind } from '../kinds/registry.ts';

const NAME_MAX = 200;
const SLUG_MAX = 64;

/** A fault of the document at `pointer` (RFC 6901, from the body's root). */
function fault(pointer: string, message: string, details?: Record<string, unknown>): DomainError {
  return new DomainError('VALIDATION_FAILED', `body${pointer}: ${message}`, {
    ...details,
    location: 'body',
    pointer,
  });
}

/** Runs a domain or engine check, reporting its failure at `pointer`. */
function at<T>(pointer: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof OpError || error instanceof DomainError) {
      // "input_schema: ..." at /bindings/0/input_schema: the pointer already names the field.
      const field = `${pointer.slice(pointer.lastIndexOf('/') + 1)}: `;
      const message = error.message.startsWith(field) ? error.message.slice(field.length) : error.message;
      throw fault(pointer, message, error.details);
    }
    throw error;
  }
}

/**
 * Runs a check of a whole item at `base` (an ADI), reporting its failure at the field it names
 * (`/adis/3/json_path`), or at the item when it names none.
 */
async function atField<T>(base: string, check: () => T | Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    if (error instanceof OpError || error instanceof DomainError) {
      const field = error.details?.field;
      return at(typeof field === 'string' ? `${base}/${field}` : base, () => {
        throw error;
      });
    }
    throw error;
  }
}

/** Ids must be unique within their list, so references are unambiguous. */
function indexIds<T extends { id: string }>(items: T[], list: string): Map<string, T> {
  const byId = new Map<string, T>();
  items.forEach((item, i) => {
    if (byId.has(item.id)) throw fault(`/${list}/${i}/id`, `id "${item.id}" appears twice in ${list}`);
    byId.set(item.id, item);
  });
  return byId;
}

function reference(ids: Map<string, unknown>, id: string, pointer: string, what: string): void {
  if (!ids.has(id)) throw fault(pointer, `no ${what} with id "${id}" in this document`);
}

/**
 * Everything that can be wrong with the document itself: duplicate ids, dangling references, kinds
 * this server does not offer, bad pointers and configs, overrides wider than their ADI's schema
 * allows, tool names used twice in one AEI, data nested too deep. The route's schema has already
 * checked shapes and types. Answers each ADI's kind and columns as they will be stored.
 */
async function checkDocument(
  doc: ExportDocument,
  caller: Principal,
  db: Db,
  sandbox: SourceChecker | undefined,
  /** Collects the secrets the ADIs reference that the caller lacks (reported, not refused). */
  missingSecrets: Set<string>,
): Promise<Map<string, { module: RegisteredKind; columns: KindColumns }>> {
  const projects = indexIds(doc.projects, 'projects');
  const tables = indexIds(doc.tables, 'tables');
  const adis = indexIds(doc.adis, 'adis');
  const aeis = indexIds(doc.aeis, 'aeis');
  const slugs = new Map<string, number>();
  doc.projects.forEach((project, i) => {
    const first = slugs.get(project.slug);
    if (first !== undefined) {
      throw fault(`/projects/${i}/slug`, `slug "${project.slug}" is also the slug of /projects/${first}`);
    }
    slugs.set(project.slug, i);
  });
  doc.tables.forEach((table, i) => {
    if (table.project_id !== null)
      reference(projects, table.project_id, `/tables/${i}/project_id`, 'project');
    at(`/tables/${i}/data`, () => checkValueArgument(table.data, 'data', MAX_JSON_DEPTH));
    // Rules that would refuse the data they come with are refused here, as PUT /rules refuses them.
    if (table.rules !== undefined) {
      const rules = table.rules;
      at(`/tables/${i}/rules`, () => checkDataKeepsRules(compileRules(rules), table.data as JsonValue));
    }
  });
  const checked = new Map<string, { module: RegisteredKind; columns: KindColumns }>();
  for (const [i, adi] of doc.adis.entries()) {
    // Documents written before tool kinds have none: their ADIs are context ADIs.
    const module = at(`/adis/${i}/kind`, () => offeredKind(adi.kind ?? DEFAULT_ADI_KIND));
    if (adi.table_id !== null) reference(tables, adi.table_id, `/adis/${i}/table_id`, 'table');
    if (adi.project_id != null) {
      reference(projects, adi.project_id, `/adis/${i}/project_id`, 'project');
      if (adi.table_id !== null) {
        throw fault(`/adis/${i}/project_id`, 'an ADI with a table belongs to its table’s project');
      }
    }
    const columns = await atField(`/adis/${i}`, () =>
      checkColumns(
        module,
        {
          tableId: adi.table_id,
          jsonPath: adi.json_path,
          operationType: adi.operation_type,
          config: adi.config,
        },
        { db, caller, sandbox, missingSecrets },
      ),
    );
    checked.set(adi.id, { module, columns });
  }
  checkPrompts(doc, aeis);
  const toolNames = new Map<string, number>();
  const bound = new Map<string, number>();
  doc.bindings.forEach((binding, i) => {
    reference(aeis, binding.aei_id, `/bindings/${i}/aei_id`, 'AEI');
    reference(adis, binding.adi_id, `/bindings/${i}/adi_id`, 'ADI');
    const adi = adis.get(binding.adi_id)!;
    const pair = `${binding.aei_id}\u0000${binding.adi_id}`;
    const twice = bound.get(pair);
    if (twice !== undefined) {
      throw fault(
        `/bindings/${i}/adi_id`,
        `ADI "${adi.id}" is bound to AEI "${binding.aei_id}" by /bindings/${twice} too`,
      );
    }
    bound.set(pair, i);
    const name = binding.tool_name ?? adi.name;
    const key = `${binding.aei_id}\u0000${name}`;
    const taken = toolNames.get(key);
    if (taken !== undefined) {
      throw fault(
        `/bindings/${i}/tool_name`,
        `tool name "${name}" is used twice in AEI "${binding.aei_id}" (also by /bindings/${taken})`,
      );
    }
    toolNames.set(key, i);
    if (binding.input_schema) {
      const target = checked.get(adi.id)!;
      at(`/bindings/${i}/input_schema`, () => checkOverride(target, binding.input_schema!, 'input_schema'));
    }
    if (binding.output_schema) {
      const target = checked.get(adi.id)!;
      at(`/bindings/${i}/output_schema`, () =>
        checkOutputOverride(target, binding.output_schema!, 'output_schema'),
      );
    }
  });
  return checked;
}

/** The document's prompts: each in an AEI of it, named once per AEI, a sound template, within limits. */
function checkPrompts(doc: ExportDocument, aeis: Map<string, unknown>): void {
  const names = new Map<string, number>();
  const sizes = new Map<string, { count: number; chars: number }>();
  (doc.prompts ?? []).forEach((prompt, i) => {
    reference(aeis, prompt.aei_id, `/prompts/${i}/aei_id`, 'AEI');
    const key = `${prompt.aei_id}\u0000${prompt.name}`;
    const taken = names.get(key);
    if (taken !== undefined) {
      throw fault(
        `/prompts/${i}/name`,
        `prompt name "${prompt.name}" is used twice in AEI "${prompt.aei_id}" (also by /prompts/${taken})`,
      );
    }
    names.set(key, i);
    at(`/prompts/${i}`, () => checkTemplate(prompt.arguments, prompt.messages));
    const size = sizes.get(prompt.aei_id) ?? { count: 0, chars: 0 };
    size.count += 1;
    size.chars += promptChars(prompt);
    sizes.set(prompt.aei_id, size);
    if (size.count > PROMPT_LIMITS.maxPrompts || size.chars > PROMPT_LIMITS.maxTotalChars) {
      throw fault(
        `/prompts/${i}`,
        `AEI "${prompt.aei_id}" would have more than ${PROMPT_LIMITS.maxPrompts} prompts or ${PROMPT_LIMITS.maxTotalChars} characters of them`,
      );
    }
  });
}

/** `base`, or `form(base, n)` for the first n >= 2 that `free` accepts. */
function firstFree(
  base: string,
  free: (candidate: string, n: number) => boolean,
  form: (n: number) => string,
) {
  for (let n = 2; ; n++) {
    const candidate = form(n);
    if (free(candidate, n)) return { name: candidate, n };
  }
}

/** "name (n)" within the name limit. */
function numberedName(name: string, n: number): string {
  const suffix = ` (${n})`;
  return name.slice(0, NAME_MAX - suffix.length) + suffix;
}

/** "slug-n" within the slug limit and pattern (no dash before the number's dash). */
function numberedSlug(slug: string, n: number): string {
  const suffix = `-${n}`;
  return slug.slice(0, SLUG_MAX - suffix.length).replace(/-+$/, '') + suffix;
}

interface Plan {
  /** Imported names (and slugs) by document id, where they differ from the document's. */
  renamed: Map<string, { name: string; slug?: string }>;
  clashes: ImportClash[];
}

/**
 * Decides the names of what clashes with what the caller already has: projects (by name or slug),
 * tables outside projects (by name; tables inside an imported project cannot clash, the project is
 * new) and AEIs (by name). A new name avoids the caller's names and every name of the document.
 */
async function planNames(db: Db, caller: Principal, doc: ExportDocument): Promise<Plan> {
  // One after the other: `db` may be a transaction, which runs one query at a time anyway.
  const projects = await db.project.findMany({
    where: { userId: caller.userId },
    select: { name: true, slug: true },
  });
  const looseTables = await db.table.findMany({
    where: { userId: caller.userId, projectId: null },
    select: { name: true },
  });
  const aeis = await db.aei.findMany({ where: { userId: caller.userId }, select: { name: true } });
  const renamed = new Map<string, { name: string; slug?: string }>();
  const clashes: ImportClash[] = [];

  const projectNames = new Set(projects.map((p) => p.name));
  const projectSlugs = new Set(projects.map((p) => p.slug));
  const takenNames = new Set([...projectNames, ...doc.projects.map((p) => p.name)]);
  const takenSlugs = new Set([...projectSlugs, ...doc.projects.map((p) => p.slug)]);
  for (const project of doc.projects) {
    if (!projectNames.has(project.name) && !projectSlugs.has(project.slug)) continue;
    const { name, n } = firstFree(
      project.name,
      (candidate, k) => !takenNames.has(candidate) && !takenSlugs.has(numberedSlug(project.slug, k)),
      (k) => numberedName(project.name, k),
    );
    const slug = numberedSlug(project.slug, n);
    takenNames.add(name);
    takenSlugs.add(slug);
    renamed.set(project.id, { name, slug });
    clashes.push({
      kind: 'project',
      source_id: project.id,
      name: project.name,
      imported_name: name,
      slug: project.slug,
      imported_slug: slug,
    });
  }

  const rename = (kind: 'table' | 'aei', items: { id: string; name: string }[], existing: Set<string>) => {
    const taken = new Set([...existing, ...items.map((i) => i.name)]);
    for (const item of items) {
      if (!existing.has(item.name)) continue;
      const { name } = firstFree(
        item.name,
        (candidate) => !taken.has(candidate),
        (k) => numberedName(item.name, k),
      );
      taken.add(name);
      renamed.set(item.id, { name });
      clashes.push({ kind, source_id: item.id, name: item.name, imported_name: name });
    }
  };
  rename(
    'table',
    doc.tables.filter((t) => t.project_id === null),
    new Set(looseTables.map((t) => t.name)),
  );
  rename('aei', doc.aeis, new Set(aeis.map((a) => a.name)));
  return { renamed, clashes };
}

function counts(doc: ExportDocument): ImportResult['created'] {
  return {
    projects: doc.projects.length,
    tables: doc.tables.length,
    adis: doc.adis.length,
    aeis: doc.aeis.length,
    bindings: doc.bindings.length,
    prompts: doc.prompts?.length ?? 0,
  };
}

/** Recreates the document's contents for the caller (or, with `dryRun`, reports what it would). */
export async function importDocument(
  ctx: DomainContext,
  caller: Principal,
  doc: ExportDocument,
  dryRun: boolean,
): Promise<ImportResult> {
  const referenced = new Set<string>();
  const adis = await checkDocument(doc, caller, ctx.prisma, ctx.sandbox, referenced);
  const sizes = measureTables(doc, ctx.tableLimits ?? DEFAULT_TABLE_LIMITS);
  const secretsToCreate = [...new Set([...(await missingSecrets(ctx.prisma, caller, doc)), ...referenced])];
  if (dryRun) {
    const plan = await planNames(ctx.prisma, caller, doc);
    return {
      dry_run: true,
      created: counts(doc),
      id_map: {},
      clashes: plan.clashes,
      aeis: doc.aeis.map((aei) => ({
        source_id: aei.id,
        id: null,
        name: plan.renamed.get(aei.id)?.name ?? aei.name,
        api_key_prefix: null,
      })),
      secrets_to_create: secretsToCreate,
    };
  }
  const imported = changeExposure(ctx, (tx) => applyImport(tx, caller, doc, adis, sizes)).catch(
    (error: unknown) => {
      if (uniqueViolation(error)) {
        throw new DomainError(
          'CONFLICT',
          'a name this import chose was taken by another request meanwhile; nothing was imported, run it again',
        );
      }
      throw error;
    },
  );
  return { ...(await imported), secrets_to_create: secretsToCreate };
}

/**
 * The document's secret names the caller has no secret for, in document order (the ones its ADIs
 * reference are added by the caller).
 */
async function missingSecrets(db: Db, caller: Principal, doc: ExportDocument): Promise<string[]> {
  const names = [...new Set((doc.secrets ?? []).map((s) => s.name))];
  if (names.length === 0) return [];
  const have = await db.secret.findMany({
    where: { userId: caller.userId, name: { in: names } },
    select: { name: true },
  });
  const owned = new Set(have.map((s) => s.name));
  return names.filter((name) => !owned.has(name));
}

/**
 * Each table's data as JSON text and its size, by source id; PAYLOAD_TOO_LARGE (naming the table's
 * pointer in the document) for data over the table cap, as a create of it would be.
 */
function measureTables(
  doc: ExportDocument,
  limits: TableLimits,
): Map<string, { text: string; bytes: number }> {
  const sizes = new Map<string, { text: string; bytes: number }>();
  doc.tables.forEach((table, i) => {
    const text = JSON.stringify(table.data);
    const bytes = dataBytes(text);
    try {
      checkTableBytes(limits, bytes);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      throw new DomainError(error.code, `body/tables/${i}/data: ${error.message}`, {
        ...error.details,
        location: 'body',
        pointer: `/tables/${i}/data`,
      });
    }
    sizes.set(table.id, { text, bytes });
  });
  return sizes;
}

/** Plans the names and writes everything in one transaction; the answer carries the new keys. */
async function applyImport(
  tx: Db,
  caller: Principal,
  doc: ExportDocument,
  checked: Map<string, { module: RegisteredKind; columns: KindColumns }>,
  sizes: Map<string, { text: string; bytes: number }>,
): Promise<{ result: Omit<ImportResult, 'secrets_to_create'>; changedAeis: string[] }> {
  // Planned inside the transaction, so the names it picks are still free when written (a slug
  // taken meanwhile by a concurrent request fails the whole import on its unique index).
  const plan = await planNames(tx, caller, doc);
  const idMap = new Map<string, string>();
  const remap = (items: { id: string }[], prefix: string) => {
    // Ascending ids in document order: lists (and each AEI's tools) keep the exported order.
    const ids = newIds(prefix, items.length);
    items.forEach((item, i) => idMap.set(item.id, ids[i]!));
  };
  remap(doc.projects, 'prj');
  remap(doc.tables, 'tbl');
  remap(doc.adis, 'adi');
  remap(doc.aeis, 'aei');
  const id = (sourceId: string) => idMap.get(sourceId)!;
  const userId = caller.userId;

  await tx.project.createMany({
    data: doc.projects.map((p) => ({
      id: id(p.id),
      userId,
      name: plan.renamed.get(p.id)?.name ?? p.name,
      slug: plan.renamed.get(p.id)?.slug ?? p.slug,
      description: p.description,
    })),
  });
  await tx.table.createMany({
    data: doc.tables.map((t) => ({
      id: id(t.id),
      userId,
      projectId: t.project_id === null ? null : id(t.project_id),
      name: plan.renamed.get(t.id)?.name ?? t.name,
      bytes: sizes.get(t.id)?.bytes ?? null,
      ...(t.rules !== undefined &&
        storableRules(t.rules) !== null && { rules: t.rules as Prisma.InputJsonValue }),
    })),
  });
  await tx.tableSnapshot.createMany({
    data: doc.tables.map((t) => ({ tableId: id(t.id), ...firstSnapshot(t.data, sizes.get(t.id)?.text) })),
  });
  await tx.adi.createMany({
    data: doc.adis.map((a) => {
      const { module, columns } = checked.get(a.id)!;
      return {
        id: id(a.id),
        userId,
        kind: module.kind,
        tableId: columns.tableId === null ? null : id(columns.tableId),
        projectId: a.project_id == null ? null : id(a.project_id),
        jsonPath: columns.jsonPath,
        operationType: columns.operationType,
        name: a.name,
        description: a.description,
        category: a.category,
        config: columns.config as Prisma.InputJsonObject,
      };
    }),
  });
  const keys = doc.aeis.map(() => newCredential('key'));
  await tx.aei.createMany({
    data: doc.aeis.map((a, i) => ({
      id: id(a.id),
      userId,
      type: a.type,
      name: plan.renamed.get(a.id)?.name ?? a.name,
      apiKeyHash: keys[i]!.hash,
      apiKeyPrefix: keys[i]!.prefix,
      status: a.status,
      exposureMode: a.exposure_mode,
      catalogSearch: a.catalog_search,
    })),
  });
  const adiNames = new Map(doc.adis.map((a) => [a.id, a.name]));
  const bindingIds = newIds('bnd', doc.bindings.length);
  await tx.aeiBinding.createMany({
    data: doc.bindings.map((b, i) => ({
      id: bindingIds[i]!,
      aeiId: id(b.aei_id),
      adiId: id(b.adi_id),
      toolName: b.tool_name ?? adiNames.get(b.adi_id)!,
      toolNameInherited: b.tool_name === null,
      toolDescription: b.tool_description,
      inputSchema: b.input_schema === null ? Prisma.DbNull : (b.input_schema as Prisma.InputJsonObject),
      outputSchema: b.output_schema ? (b.output_schema as Prisma.InputJsonObject) : Prisma.DbNull,
      enabled: b.enabled,
    })),
  });
  const prompts = doc.prompts ?? [];
  const promptIds = newIds('pmt', prompts.length);
  await tx.aeiPrompt.createMany({
    data: prompts.map((p, i) => ({
      id: promptIds[i]!,
      aeiId: id(p.aei_id),
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: p.arguments as Prisma.InputJsonValue,
      messages: p.messages as Prisma.InputJsonValue,
    })),
  });
  const result: Omit<ImportResult, 'secrets_to_create'> = {
    dry_run: false,
    created: counts(doc),
    id_map: Object.fromEntries(idMap),
    clashes: plan.clashes,
    aeis: doc.aeis.map((aei, i) => ({
      source_id: aei.id,
      id: id(aei.id),
      name: plan.renamed.get(aei.id)?.name ?? aei.name,
      api_key: keys[i]!.secret,
      api_key_prefix: keys[i]!.prefix,
    })),
  };
  // Nothing to announce: every AEI is new, so no gateway holds any of them.
  return { result, changedAeis: [] };
}
