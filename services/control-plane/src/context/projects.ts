/**
 * Projects group tables (and so tools) of one user; a project is an "app" in progressive catalogs.
 * Slugs are unique per user, given or derived from the name ("CRM Main" -> "crm-main").
 */
import type {
  CreateProjectBody,
  PageQuery,
  Project as ProjectBody,
  UpdateProjectBody,
} from '@bindery/contracts';
import type { Project } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpForAdis, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';

/**
 * The ADIs a project holds: those of its tables, and those without a table placed in it (an HTTP
 * tool's `project_id`).
 */
function inProject(id: string) {
  return { OR: [{ table: { projectId: id } }, { tableId: null, projectId: id }] };
}

/** "CRM Main!" -> "crm-main"; an empty result becomes "project". */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug || 'project';
}

export function projectBody(p: Project): ProjectBody {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

/** The caller's project, or NOT_FOUND (also for other users' projects: their ids are not revealed). */
export async function findOwnProject(db: Db, caller: Principal, id: string): Promise<Project> {
  const project = await db.project.findFirst({ where: { id, userId: caller.userId } });
  if (!project) throw notFound('project', id);
  return project;
}

function slugConflict(slug: string) {
  return new DomainError('CONFLICT', `you already have a project with slug "${slug}"; choose another slug`, {
    slug,
  });
}

export async function createProject(
  db: Db,
  caller: Principal,
  input: CreateProjectBody,
): Promise<ProjectBody> {
  const slug = input.slug ?? slugify(input.name);
  try {
    const project = await db.project.create({
      data: {
        id: newId('prj'),
        userId: caller.userId,
        name: input.name,
        slug,
        description: input.description ?? null,
      },
    });
    return projectBody(project);
  } catch (error) {
    if (uniqueViolation(error)) throw slugConflict(slug);
    throw error;
  }
}

export async function listProjects(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.project.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, projectBody);
}

/** Renames or re-slugs a project; AEIs exposing its tools get a new config_version (apps changed). */
export async function updateProject(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateProjectBody,
): Promise<ProjectBody> {
  return changeExposure(ctx, async (tx) => {
    await findOwnProject(tx, caller, id);
    let project: Project;
    try {
      project = await tx.project.update({
        where: { id },
        data: {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.slug !== undefined && { slug: input.slug }),
          ...(input.description !== undefined && { description: input.description }),
        },
      });
    } catch (error) {
      if (uniqueViolation(error)) throw slugConflict(input.slug ?? '');
      throw error;
    }
    const adis = await tx.adi.findMany({ where: inProject(id), select: { id: true } });
    const changedAeis = await bumpForAdis(
      tx,
      adis.map((a) => a.id),
    );
    return { result: projectBody(project), changedAeis };
  });
}

/**
 * Deletes a project without tables; one that still holds tables is refused, so no data goes with
 * it. Tools placed in it without a table move to no project (the default app): the exposures that
 * list them get a new config_version.
 */
export async function deleteProject(ctx: DomainContext, caller: Principal, id: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnProject(tx, caller, id);
    const tables = await tx.table.count({ where: { projectId: id } });
    if (tables > 0) {
      throw new DomainError(
        'CONFLICT',
        `project ${id} still holds ${tables} table(s); move or delete them first`,
        {
          tables,
        },
      );
    }
    const adis = await tx.adi.findMany({ where: { projectId: id }, select: { id: true } });
    const changedAeis = await bumpForAdis(
      tx,
      adis.map((a) => a.id),
    );
    // The foreign key sets their project_id to null.
    await tx.project.delete({ where: { id } });
    return { result: undefined, changedAeis };
  });
}
