/** Prompt templates of an AEI: `/api/v2/aeis/{id}/prompts`. */
import {
  CreatePromptBody,
  IdParams,
  Page,
  PageQuery,
  Prompt,
  PromptParams,
  UpdatePromptBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { createPrompt, deletePrompt, getPrompt, listPrompts, updatePrompt } from '../exposure/prompts.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function promptRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['prompts'];
  app.post(
    '/aeis/:id/prompts',
    {
      schema: {
        tags,
        summary:
          'Add a prompt template to the exposure: messages whose {{argument}} placeholders prompts/get fills in',
        security: adminSecurity,
        params: IdParams,
        body: CreatePromptBody,
        response: { 201: Prompt, ...errorResponses(404, 409, 422) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createPrompt(ctx, request.principal, request.params.id, request.body)),
  );
  app.get(
    '/aeis/:id/prompts',
    {
      schema: {
        tags,
        summary: 'List the prompt templates of an exposure',
        security: adminSecurity,
        params: IdParams,
        querystring: PageQuery,
        response: { 200: Page(Prompt), ...errorResponses(404) },
      },
    },
    async (request) => listPrompts(db, request.principal, request.params.id, request.query),
  );
  app.get(
    '/aeis/:id/prompts/:pid',
    {
      schema: {
        tags,
        summary: 'Get a prompt template',
        security: adminSecurity,
        params: PromptParams,
        response: { 200: Prompt, ...errorResponses(404) },
      },
    },
    async (request) => getPrompt(db, request.principal, request.params.id, request.params.pid),
  );
  app.patch(
    '/aeis/:id/prompts/:pid',
    {
      schema: {
        tags,
        summary:
          'Change a prompt template (the whole template is checked again; null clears title or description)',
        security: adminSecurity,
        params: PromptParams,
        body: UpdatePromptBody,
        response: { 200: Prompt, ...errorResponses(404, 409, 422) },
      },
    },
    async (request) =>
      updatePrompt(ctx, request.principal, request.params.id, request.params.pid, request.body),
  );
  app.delete(
    '/aeis/:id/prompts/:pid',
    {
      schema: {
        tags,
        summary: 'Remove a prompt template',
        security: adminSecurity,
        params: PromptParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deletePrompt(ctx, request.principal, request.params.id, request.params.pid);
      return reply.status(204).send(null);
    },
  );
}
