/** Bindings of an AEI: `/api/v2/aeis/{id}/bindings`. */
import {
  Binding,
  BindingParams,
  CreateBindingsBody,
  IdParams,
  Page,
  PageQuery,
  UpdateBindingBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import {
  bindingBody,
  createBindings,
  deleteBinding,
  getBinding,
  listBindings,
  updateBinding,
} from '../exposure/bindings.ts';
import { attachUpstreamServer } from '../kinds/mcp/upstream-servers.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function bindingRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['bindings'];
  app.post(
    '/aeis/:id/bindings',
    {
      schema: {
        tags,
        summary:
          'Bind one ADI (object body) or many (array body, all or nothing) to the exposure, or attach a whole ' +
          'upstream server ({"upstream_server_id", "prefix"}): its tools, now and after each sync, as {prefix}_{tool}',
        security: adminSecurity,
        params: IdParams,
        body: CreateBindingsBody,
        response: {
          201: Type.Union([
            Binding,
            Type.Object({
              attachment: Type.Object({
                id: Type.String(),
                aei_id: Type.String(),
                upstream_server_id: Type.String(),
                prefix: Type.String(),
              }),
              items: Type.Array(Binding),
            }),
            Type.Object({ items: Type.Array(Binding) }),
          ]),
          ...errorResponses(404, 409),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (!Array.isArray(body) && 'upstream_server_id' in body) {
        const attached = await attachUpstreamServer(ctx, request.principal, request.params.id, body);
        return reply
          .status(201)
          .send({ attachment: attached.attachment, items: attached.items.map(bindingBody) });
      }
      const many = Array.isArray(body);
      const items = Array.isArray(body) ? body : [body];
      const created = await createBindings(ctx, request.principal, request.params.id, items);
      // One object in, one binding out; an array in, {items} out.
      return reply.status(201).send(many ? { items: created } : (created[0] as Binding));
    },
  );
  app.get(
    '/aeis/:id/bindings',
    {
      schema: {
        tags,
        summary: 'List the bindings of an exposure',
        security: adminSecurity,
        params: IdParams,
        querystring: PageQuery,
        response: { 200: Page(Binding), ...errorResponses(404) },
      },
    },
    async (request) => listBindings(db, request.principal, request.params.id, request.query),
  );
  app.get(
    '/aeis/:id/bindings/:bid',
    {
      schema: {
        tags,
        summary: 'Get a binding',
        security: adminSecurity,
        params: BindingParams,
        response: { 200: Binding, ...errorResponses(404) },
      },
    },
    async (request) => getBinding(db, request.principal, request.params.id, request.params.bid),
  );
  app.patch(
    '/aeis/:id/bindings/:bid',
    {
      schema: {
        tags,
        summary: 'Rename, describe, narrow the input schema, or switch a binding on/off (null clears)',
        security: adminSecurity,
        params: BindingParams,
        body: UpdateBindingBody,
        response: { 200: Binding, ...errorResponses(404, 409) },
      },
    },
    async (request) =>
      updateBinding(ctx, request.principal, request.params.id, request.params.bid, request.body),
  );
  app.delete(
    '/aeis/:id/bindings/:bid',
    {
      schema: {
        tags,
        summary: 'Remove a binding',
        security: adminSecurity,
        params: BindingParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteBinding(ctx, request.principal, request.params.id, request.params.bid);
      return reply.status(204).send(null);
    },
  );
}
