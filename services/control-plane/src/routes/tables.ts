/** Tables: `/api/v2/tables`, with the data behind an ETag (the version) and If-Match writes. */
import {
  CreateTableBody,
  ForceQuery,
  IdParams,
  JsonValue,
  Page,
  Table,
  TableListQuery,
  TableRules,
  TableSummary,
  UpdateTableBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import {
  createTable,
  deleteTable,
  getTable,
  getTableRules,
  listTables,
  putTableRules,
  replaceTableData,
  updateTable,
} from '../context/tables.ts';
import { DomainError } from '../domain/errors.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

const etag = (version: number) => `"${version}"`;

/** The version an If-Match header asks for: `"3"`, `W/"3"` or `3`; `*` means any. */
function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!match?.[1]) {
    throw new DomainError('VALIDATION_FAILED', `If-Match must be a table version such as "3", got ${header}`);
  }
  return Number(match[1]);
}

export async function tableRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['tables'];
  app.post(
    '/tables',
    {
      schema: {
        tags,
        summary: 'Create a table (data defaults to {})',
        security: adminSecurity,
        body: CreateTableBody,
        response: { 201: TableSummary, ...errorResponses(404, 413) },
      },
    },
    async (request, reply) => {
      const table = await createTable(db, request.principal, request.body, ctx.tableLimits);
      return reply.status(201).header('etag', etag(table.version)).send(table);
    },
  );
  app.get(
    '/tables',
    {
      schema: {
        tags,
        summary: 'List your tables (without their data)',
        security: adminSecurity,
        querystring: TableListQuery,
        response: { 200: Page(TableSummary), ...errorResponses() },
      },
    },
    async (request) => listTables(db, request.principal, request.query),
  );
  app.get(
    '/tables/:id',
    {
      schema: {
        tags,
        summary: 'Get a table with its data; ETag is its version',
        security: adminSecurity,
        params: IdParams,
        response: { 200: Table, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const table = await getTable(db, request.principal, request.params.id);
      return reply.header('etag', etag(table.version)).send(table);
    },
  );
  app.put(
    '/tables/:id/data',
    {
      schema: {
        tags,
        summary: 'Replace the data (body = the new JSON); If-Match: "<version>" makes it conditional (412)',
        security: adminSecurity,
        params: IdParams,
        headers: Type.Object({ 'if-match': Type.Optional(Type.String()) }),
        body: JsonValue,
        response: { 200: TableSummary, ...errorResponses(404, 412, 413, 422) },
      },
    },
    async (request, reply) => {
      const expected = parseIfMatch(request.headers['if-match']);
      const table = await replaceTableData(ctx, request.principal, request.params.id, request.body, expected);
      return reply.header('etag', etag(table.version)).send(table);
    },
  );
  app.get(
    '/tables/:id/rules',
    {
      schema: {
        tags,
        summary: "The table's rules: protected paths, a schema, a cap on items per change, person-only paths",
        security: adminSecurity,
        params: IdParams,
        response: { 200: TableRules, ...errorResponses(404) },
      },
    },
    async (request) => getTableRules(db, request.principal, request.params.id),
  );
  app.put(
    '/tables/:id/rules',
    {
      schema: {
        tags,
        summary: 'Set the rules every write of the data must keep, whoever makes it ({} clears them)',
        security: adminSecurity,
        params: IdParams,
        body: TableRules,
        response: { 200: TableRules, ...errorResponses(404) },
      },
    },
    async (request) => putTableRules(db, request.principal, request.params.id, request.body),
  );
  app.patch(
    '/tables/:id',
    {
      schema: {
        tags,
        summary: 'Rename a table or move it to another project',
        security: adminSecurity,
        params: IdParams,
        body: UpdateTableBody,
        response: { 200: TableSummary, ...errorResponses(404) },
      },
    },
    async (request) => updateTable(ctx, request.principal, request.params.id, request.body),
  );
  app.delete(
    '/tables/:id',
    {
      schema: {
        tags,
        summary: 'Delete a table and its ADIs (409 while any is bound, unless ?force=true)',
        security: adminSecurity,
        params: IdParams,
        querystring: ForceQuery,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await deleteTable(ctx, request.principal, request.params.id, request.query.force ?? false);
      return reply.status(204).send(null);
    },
  );
}
