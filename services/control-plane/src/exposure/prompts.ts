/**
 * Prompt templates of an AEI (`/api/v2/aeis/{id}/prompts`), served to MCP clients by the gateway
 * from config v2. Checked at save: argument names unique, every `{{placeholder}}` naming a
 * declared argument, the prompt's name unique in its AEI. Every change bumps the AEI's
 * config_version, so gateways drop the cached config and announce prompts/list_changed.
 */
import {
  PROMPT_LIMITS,
  placeholdersOf,
  type ConfigPrompt,
  type CreatePromptBody,
  type PageQuery,
  type Prompt as PromptBody,
  type PromptArgument,
  type PromptMessage,
  type UpdatePromptBody,
} from '@bindery/contracts';
import type { AeiPrompt, Prisma } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { findOwnAei } from './aeis.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpConfigVersions, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';

/** A stored prompt's template, as the admin API and export documents show it. */
export function promptTemplate(p: AeiPrompt) {
  return {
    aei_id: p.aeiId,
    name: p.name,
    title: p.title,
    description: p.description,
    arguments: p.arguments as PromptArgument[],
    messages: p.messages as PromptMessage[],
  };
}

export function promptBody(p: AeiPrompt): PromptBody {
  return {
    id: p.id,
    ...promptTemplate(p),
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

/** A stored prompt as config v2 carries it (null title and description left out). */
export function configPrompt(p: AeiPrompt): ConfigPrompt {
  return {
    name: p.name,
    ...(p.title !== null && { title: p.title }),
    ...(p.description !== null && { description: p.description }),
    arguments: p.arguments as PromptArgument[],
    messages: p.messages as PromptMessage[],
  };
}

/**
 * The AEI's prompts for config v2, by name in code-point order (the order prompts/list pages them
 * in; sorted here, as a database's collation may order names otherwise).
 */
export async function configPromptsOf(db: Db, aeiId: string): Promise<ConfigPrompt[]> {
  const rows = await db.aeiPrompt.findMany({ where: { aeiId } });
  rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return rows.map(configPrompt);
}

/**
 * Refuses arguments named twice and placeholders naming no argument (VALIDATION_FAILED, with the
 * field at fault), so what a client fills in is exactly what the template uses.
 */
export function checkTemplate(args: readonly PromptArgument[], messages: readonly PromptMessage[]): void {
  const declared = new Set<string>();
  for (const [index, arg] of args.entries()) {
    if (declared.has(arg.name)) {
      throw new DomainError('VALIDATION_FAILED', `argument "${arg.name}" is declared twice`, {
        field: `arguments[${index}].name`,
        argument: arg.name,
      });
    }
    declared.add(arg.name);
  }
  for (const [index, message] of messages.entries()) {
    for (const name of placeholdersOf(message.text)) {
      if (declared.has(name)) continue;
      const known = declared.size > 0 ? `declared: ${[...declared].join(', ')}` : 'the prompt declares none';
      throw new DomainError(
        'VALIDATION_FAILED',
        `messages[${index}].text uses the placeholder {{${name}}}, which names no argument (${known})`,
        { field: `messages[${index}].text`, placeholder: name },
      );
    }
  }
}

/** The characters a prompt adds to its AEI's config, as JSON. */
export function promptChars(p: {
  name: string;
  title: string | null;
  description: string | null;
  arguments: unknown;
  messages: unknown;
}): number {
  return JSON.stringify([p.name, p.title, p.description, p.arguments, p.messages]).length;
}

/**
 * Refuses a change that would make the AEI's prompts more than PROMPT_LIMITS.maxTotalChars
 * (LIMIT_EXCEEDED): they all travel in its config to every gateway. `replacing`: the id of the
 * prompt being changed, counted with its new content instead.
 */
async function checkTotal(
  tx: Db,
  aeiId: string,
  next: Parameters<typeof promptChars>[0],
  replacing?: string,
): Promise<void> {
  const others = await tx.aeiPrompt.findMany({
    where: { aeiId, ...(replacing !== undefined && { id: { not: replacing } }) },
    select: { name: true, title: true, description: true, arguments: true, messages: true },
  });
  if (others.length + 1 > PROMPT_LIMITS.maxPrompts) {
    throw new DomainError(
      'LIMIT_EXCEEDED',
      `AEI ${aeiId} already has ${others.length} prompts, the most one AEI may have`,
      { limit: PROMPT_LIMITS.maxPrompts },
    );
  }
  const total = others.reduce((sum, p) => sum + promptChars(p), promptChars(next));
  if (total > PROMPT_LIMITS.maxTotalChars) {
    throw new DomainError(
      'LIMIT_EXCEEDED',
      `the prompts of AEI ${aeiId} would take ${total} characters, more than the ${PROMPT_LIMITS.maxTotalChars} allowed`,
      { limit: PROMPT_LIMITS.maxTotalChars, total },
    );
  }
}

function nameTaken(name: string, aeiId: string) {
  return new DomainError('CONFLICT', `a prompt named "${name}" already exists in AEI ${aeiId}`, {
    name,
    aei_id: aeiId,
    field: 'name',
  });
}

async function findOwnPrompt(db: Db, caller: Principal, aeiId: string, id: string): Promise<AeiPrompt> {
  await findOwnAei(db, caller, aeiId);
  const prompt = await db.aeiPrompt.findFirst({ where: { id, aeiId } });
  if (!prompt) throw notFound('prompt', id);
  return prompt;
}

export async function createPrompt(
  ctx: DomainContext,
  caller: Principal,
  aeiId: string,
  input: CreatePromptBody,
): Promise<PromptBody> {
  const args = input.arguments ?? [];
  checkTemplate(args, input.messages);
  return changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, aeiId);
    // Bumping first locks the AEI's row until commit: concurrent changes to its prompts take
    // turns, so the limits below hold for all of them.
    const changedAeis = await bumpConfigVersions(tx, [aeiId]);
    const data = {
      name: input.name,
      title: input.title ?? null,
      description: input.description ?? null,
      arguments: args as Prisma.InputJsonValue,
      messages: input.messages as Prisma.InputJsonValue,
    };
    await checkTotal(tx, aeiId, data);
    let created: AeiPrompt;
    try {
      created = await tx.aeiPrompt.create({ data: { id: newId('pmt'), aeiId, ...data } });
    } catch (error) {
      if (uniqueViolation(error)) throw nameTaken(input.name, aeiId);
      throw error;
    }
    return { result: promptBody(created), changedAeis };
  });
}

export async function listPrompts(db: Db, caller: Principal, aeiId: string, query: PageQuery) {
  await findOwnAei(db, caller, aeiId);
  const w = pageWindow(query);
  const rows = await db.aeiPrompt.findMany({
    where: { aeiId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, promptBody);
}

export async function getPrompt(db: Db, caller: Principal, aeiId: string, id: string): Promise<PromptBody> {
  return promptBody(await findOwnPrompt(db, caller, aeiId, id));
}

export async function updatePrompt(
  ctx: DomainContext,
  caller: Principal,
  aeiId: string,
  id: string,
  input: UpdatePromptBody,
): Promise<PromptBody> {
  return changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, aeiId);
    // Locks the AEI's row first, as a create does, then reads the prompt: a concurrent change to it
    // has committed by then, and this one builds on it.
    const changedAeis = await bumpConfigVersions(tx, [aeiId]);
    const before = await findOwnPrompt(tx, caller, aeiId, id);
    const args = input.arguments ?? (before.arguments as PromptArgument[]);
    const messages = input.messages ?? (before.messages as PromptMessage[]);
    // The whole template as it will be: a new argument list must still cover the old messages.
    checkTemplate(args, messages);
    await checkTotal(
      tx,
      aeiId,
      {
        name: input.name ?? before.name,
        title: input.title !== undefined ? input.title : before.title,
        description: input.description !== undefined ? input.description : before.description,
        arguments: args,
        messages,
      },
      id,
    );
    let updated: AeiPrompt;
    try {
      updated = await tx.aeiPrompt.update({
        where: { id },
        data: {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.title !== undefined && { title: input.title }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.arguments !== undefined && { arguments: input.arguments as Prisma.InputJsonValue }),
          ...(input.messages !== undefined && { messages: input.messages as Prisma.InputJsonValue }),
        },
      });
    } catch (error) {
      if (uniqueViolation(error)) throw nameTaken(input.name ?? before.name, aeiId);
      throw error;
    }
    return { result: promptBody(updated), changedAeis };
  });
}

export async function deletePrompt(ctx: DomainContext, caller: Principal, aeiId: string, id: string) {
  await changeExposure(ctx, async (tx) => {
    await findOwnPrompt(tx, caller, aeiId, id);
    await tx.aeiPrompt.delete({ where: { id } });
    return { result: undefined, changedAeis: await bumpConfigVersions(tx, [aeiId]) };
  });
}
