/** Projects: `/api/v2/projects`. */
import { CreateProjectBody, IdParams, Page, PageQuery, Project, UpdateProjectBody } from '@bindery/contracts';
import { Type } from 'typebox';
import {
  createProject,
  deleteProject,
  findOwnProject,
  listProjects,
  projectBody,
  updateProject,
} from '../context/projects.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function projectRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['projects'];
  app.post(
    '/projects',
    {
      schema: {
        tags,
        summary: 'Create a project (slug given, or derived from the name)',
        security: adminSecurity,
        body: CreateProjectBody,
        response: { 201: Project, ...errorResponses(409) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createProject(db, request.principal, request.body)),
  );
  app.get(
    '/projects',
    {
      schema: {
        tags,
        summary: 'List your projects',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(Project), ...errorResponses() },
      },
    },
    async (request) => listProjects(db, request.principal, request.query),
  );
  app.get(
    '/projects/:id',
    {
      schema: {
        tags,
        summary: 'Get a project',
        security: adminSecurity,
        params: IdParams,
        response: { 200: Project, ...errorResponses(404) },
      },
    },
    async (request) => projectBody(await findOwnProject(db, request.principal, request.params.id)),
  );
  app.patch(
    '/projects/:id',
    {
      schema: {
        tags,
        summary: 'Rename a project or change its slug',
        security: adminSecurity,
        params: IdParams,
        body: UpdateProjectBody,
        response: { 200: Project, ...errorResponses(404, 409) },
      },
    },
    async (request) => updateProject(ctx, request.principal, request.params.id, request.body),
  );
  app.delete(
    '/projects/:id',
    {
      schema: {
        tags,
        summary:
          'Delete a project without tables (refused while it holds any); its tools without a table move to no project',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await deleteProject(ctx, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
