/**
 * Proposals: a write made in a sidebar session, computed on one version of its table and held
 * until the person decides. Approving applies the very edits shown, in one transaction, only if
 * the table is still at that version (the context store's expected version, under the table's
 * lock), and re-checks the table's rules there; the proposal's status changes in the same
 * transaction, so a proposal is applied at most once and exactly when its write commits. Every
 * proposal, verdict and applied change leaves an audit row.
 */
import {
  applyChanges,
  diffChanges,
  formatPointer,
  nodeAtTokens,
  parsePointer,
  type DataChange,
  type JsonValue,
} from '@bindery/context-ops';
import type { Proposal as ProposalBody, RuleVerdict } from '@bindery/contracts';
import { Prisma, type SidebarProposal } from '../generated/prisma/client.ts';
import type { ContextStore } from '../context/context-store.ts';
import { rebased } from '../context/context-store.ts';
import type { CachedContext } from '../context/context-cache.ts';
import { ruleVerdicts, storedRules, ruleViolated, type Writer } from '../context/table-rules.ts';
import type { WriteMeter } from '../metrics.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Db, Principal } from '../domain/context.ts';
import { patchOf, viewOf } from './change-views.ts';
import type { SidebarEvents } from './sidebar-events.ts';

/** Proposals one session may have waiting for a verdict: an agent cannot flood the person. */
export const MAX_PENDING_PER_SESSION = 100;
/** Proposals one session may make in all (blocked ones included): a new session after that. */
export const MAX_PROPOSALS_PER_SESSION = 1_000;
/** The stored JSON of one proposal (its edits, their inverse, the patch, the view) at most. */
export const MAX_PROPOSAL_BYTES = 256 * 1024;
/** Proposals a list answers: the newest. */
export const LISTED_PROPOSALS = 50;

// What a list reads of a proposal: everything but the edits and their inverse (kept to apply it).
const LISTED_FIELDS = {
  id: true,
  sessionId: true,
  userId: true,
  tableId: true,
  pointer: true,
  command: true,
  proposedBy: true,
  baseVersion: true,
  patch: true,
  view: true,
  verdicts: true,
  status: true,
  note: true,
  appliedVersion: true,
  decidedBy: true,
  replacedBy: true,
  createdAt: true,
  decidedAt: true,
} as const;
type ListedProposal = Omit<SidebarProposal, 'changes' | 'inverse'>;

export interface ProposalServices {
  db: Db;
  contexts: ContextStore;
  writes: WriteMeter;
  events: SidebarEvents;
}

/** The table a proposal writes to, as its command found it. */
export interface ProposalTable {
  id: string;
  name: string;
  rules: string | null;
}

export interface NewProposal {
  sessionId: string;
  userId: string;
  table: ProposalTable;
  /** The context the command ran on, from the table's root. */
  tokens: string[];
  command: string;
  by: Extract<Writer, 'agent' | 'person'>;
  before: CachedContext;
  after: JsonValue;
}

export function proposalBody(p: ListedProposal, tableName: string): ProposalBody {
  return {
    id: p.id,
    session_id: p.sessionId,
    table_id: p.tableId,
    table_name: tableName,
    command: p.command,
    proposed_by: p.proposedBy === 'agent' ? 'agent' : 'person',
    base_version: p.baseVersion,
    patch: p.patch as ProposalBody['patch'],
    view: p.view as ProposalBody['view'],
    verdicts: p.verdicts as RuleVerdict[],
    status: p.status as ProposalBody['status'],
    note: p.note,
    applied_version: p.appliedVersion,
    decided_by: p.decidedBy,
    replaced_by: p.replacedBy,
    created_at: p.createdAt.toISOString(),
    decided_at: p.decidedAt?.toISOString() ?? null,
  };
}

/** An audit row of the sidebar, written through `db` (a transaction, to commit with what it records). */
export async function auditSidebar(
  db: Db,
  row: {
    userId: string;
    action: string;
    status: 'ok' | 'refused' | 'error';
    operation: string;
    details: object;
  },
): Promise<void> {
  await db.auditEvent.create({
    data: {
      id: newId('evt'),
      userId: row.userId,
      action: row.action,
      status: row.status,
      operation: row.operation,
      details: row.details as Prisma.InputJsonValue,
    },
  });
}

/**
 * Stores what the command would change as a proposal (pending, or blocked when a rule refuses it),
 * or answers undefined when it changes nothing.
 */
export async function storeProposal(
  s: ProposalServices,
  input: NewProposal,
): Promise<ProposalBody | undefined> {
  const { tokens, before, after } = input;
  const changes = diffChanges(before.node, after, tokens);
  if (changes.length === 0) return undefined;
  const [waiting, made, session] = await Promise.all([
    s.db.sidebarProposal.count({ where: { sessionId: input.sessionId, status: 'pending' } }),
    s.db.sidebarProposal.count({ where: { sessionId: input.sessionId } }),
    s.db.sidebarSession.findUnique({ where: { id: input.sessionId }, select: { status: true } }),
  ]);
  if (session?.status !== 'active' && session?.status !== 'paused') {
    throw new DomainError('CONFLICT', `sidebar session ${input.sessionId} has ended`, { status: 'ended' });
  }
  if (waiting >= MAX_PENDING_PER_SESSION) {
    throw new DomainError(
      'RATE_LIMITED',
      `${waiting} proposals of this session already wait for a verdict; wait for the person before proposing more`,
      { limit: MAX_PENDING_PER_SESSION },
    );
  }
  if (made >= MAX_PROPOSALS_PER_SESSION) {
    throw new DomainError(
      'RATE_LIMITED',
      `this session made ${made} proposals, its most; the person can open a new session`,
      { limit: MAX_PROPOSALS_PER_SESSION },
    );
  }
  const inverse = diffChanges(after, before.node, tokens);
  const patch = patchOf(tokens, before.node, changes);
  const view = viewOf(tokens, before.node, after, changes);
  const bytes = [changes, inverse, patch, view].reduce((sum, part) => sum + JSON.stringify(part).length, 0);
  if (bytes > MAX_PROPOSAL_BYTES) {
    throw new DomainError(
      'PAYLOAD_TOO_LARGE',
      `this change is too large to propose (${bytes} bytes of JSON to show and keep, at most ${MAX_PROPOSAL_BYTES}); ` +
        'make it in smaller steps',
      { limit: MAX_PROPOSAL_BYTES },
    );
  }
  const rules = storedRules(input.table.rules);
  const verdicts =
    rules === undefined
      ? []
      : ruleVerdicts(
          rules,
          { at: tokens, before: before.node, after, changes, by: input.by },
          await schemaAbove(
            s.contexts,
            input.table.id,
            rules.schema?.tokens,
            tokens,
            changes,
            before.version,
          ),
        );
  const blocked = verdicts.some((v) => !v.ok);
  const pointer = formatPointer(tokens);
  const row = await s.db.$transaction(async (tx) => {
    const created = await tx.sidebarProposal.create({
      data: {
        id: newId('prp'),
        sessionId: input.sessionId,
        userId: input.userId,
        tableId: input.table.id,
        pointer,
        command: input.command,
        proposedBy: input.by,
        baseVersion: before.version,
        changes: changes as unknown as Prisma.InputJsonValue,
        inverse: inverse as unknown as Prisma.InputJsonValue,
        patch: patch as unknown as Prisma.InputJsonValue,
        view: view as unknown as Prisma.InputJsonValue,
        verdicts: verdicts as unknown as Prisma.InputJsonValue,
        status: blocked ? 'blocked' : 'pending',
      },
    });
    await auditSidebar(tx, {
      userId: input.userId,
      action: 'sidebar.propose',
      status: blocked ? 'refused' : 'ok',
      operation: input.command.split(/\s/, 1)[0] ?? '',
      details: {
        proposal_id: created.id,
        session_id: input.sessionId,
        table_id: input.table.id,
        proposed_by: input.by,
        base_version: before.version,
        verdicts,
        status: created.status,
      },
    });
    return created;
  });
  s.events.changed(input.sessionId);
  return proposalBody(row, input.table.name);
}

/**
 * When the rules' schema covers a subtree above the context: a function giving that subtree after
 * the change (read now; the approval checks again under the table's lock).
 */
async function schemaAbove(
  contexts: ContextStore,
  tableId: string,
  schemaTokens: string[] | undefined,
  tokens: readonly string[],
  changes: readonly DataChange[],
  version: number,
): Promise<(() => JsonValue | undefined) | undefined> {
  if (schemaTokens === undefined || schemaTokens.length >= tokens.length) return undefined;
  if (!schemaTokens.every((token, i) => tokens[i] === token)) return undefined;
  const above = await contexts.read({ tableId, tokens: schemaTokens, pointer: formatPointer(schemaTokens) });
  if (above.version !== version) {
    // Read on another version than the context: the verdict would mix two states of the data.
    throw new DomainError(
      'CONFLICT',
      'the data changed while the proposal was computed; run the command again',
    );
  }
  return () => applyChanges(above.node, rebased(changes, schemaTokens.length));
}

/** The proposal `id` of the person's sessions, with its table's name; NOT_FOUND otherwise. */
export async function ownProposal(db: Db, userId: string, id: string) {
  const row = await db.sidebarProposal.findFirst({ where: { id, userId } });
  if (!row) throw notFound('proposal', id);
  const table = await db.table.findUnique({ where: { id: row.tableId }, select: { name: true } });
  return { row, tableName: table?.name ?? '(deleted table)' };
}

export async function listProposals(db: Db, sessionId: string, status?: string): Promise<ProposalBody[]> {
  const rows = await db.sidebarProposal.findMany({
    where: { sessionId, ...(status !== undefined && { status }) },
    orderBy: { id: 'desc' },
    take: LISTED_PROPOSALS,
    select: LISTED_FIELDS,
  });
  const names = new Map(
    (
      await db.table.findMany({
        where: { id: { in: [...new Set(rows.map((r) => r.tableId))] } },
        select: { id: true, name: true },
      })
    ).map((t) => [t.id, t.name]),
  );
  return rows.map((r) => proposalBody(r, names.get(r.tableId) ?? '(deleted table)'));
}

/** Why a proposal that is not pending cannot be decided. */
function decided(row: SidebarProposal): DomainError {
  if (row.status === 'blocked') {
    const broken = (row.verdicts as RuleVerdict[]).find((v) => !v.ok);
    if (broken) return ruleViolated(broken, row.tableId);
  }
  return new DomainError('CONFLICT', `proposal ${row.id} is ${row.status}, not pending`, {
    status: row.status,
  });
}

export type Applied = { applied: ProposalBody } | { stale: SidebarProposal; currentVersion: number };

/**
 * Applies a pending proposal for the person: its edits, if the table is still at its base version
 * and the rules (checked again under the lock) allow it. Answers the applied proposal, or, when the
 * table moved on, the proposal marked stale (the caller offers a fresh one).
 */
export async function applyProposal(
  s: ProposalServices,
  person: Principal,
  id: string,
  note: string | undefined,
): Promise<Applied> {
  const { row, tableName } = await ownProposal(s.db, person.userId, id);
  if (row.status !== 'pending') throw decided(row);
  const tokens = parsePointer(row.pointer);
  const changes = rebased(row.changes as unknown as DataChange[], tokens.length);
  let appliedVersion = 0;
  try {
    await s.contexts.write(
      { tableId: row.tableId, tokens, pointer: row.pointer },
      row.baseVersion,
      (node) => ({ context: applyChanges(node, changes), result: null }),
      s.writes,
      {
        by: row.proposedBy === 'agent' ? 'agent' : 'person',
        afterChange: async (tx, written) => {
          appliedVersion = written.version;
          const claimed = await tx.sidebarProposal.updateMany({
            where: { id, status: 'pending' },
            data: {
              status: 'applied',
              appliedVersion: written.version,
              decidedBy: person.userId,
              decidedAt: new Date(),
              note: note ?? null,
            },
          });
          if (claimed.count !== 1) throw new DomainError('CONFLICT', `proposal ${id} was decided meanwhile`);
          await auditSidebar(tx, {
            userId: person.userId,
            action: 'sidebar.apply',
            status: 'ok',
            operation: row.command.split(/\s/, 1)[0] ?? '',
            details: {
              proposal_id: id,
              session_id: row.sessionId,
              table_id: row.tableId,
              proposed_by: row.proposedBy,
              approved_by: person.userId,
              verdicts: row.verdicts,
              version_before: row.baseVersion,
              version_after: written.version,
            },
          });
        },
      },
    );
  } catch (error) {
    if (
      error instanceof DomainError &&
      error.code === 'CONFLICT' &&
      error.details?.current_version !== undefined
    ) {
      const stale = await settle(s, person, row, 'stale', 'sidebar.stale', undefined, {
        current_version: error.details.current_version,
      });
      return { stale, currentVersion: Number(error.details.current_version) };
    }
    if (error instanceof DomainError && error.code === 'RULE_VIOLATED') {
      // The rules changed since it was proposed: it is blocked from now on.
      await settle(s, person, row, 'blocked', 'sidebar.blocked', undefined, { rule: error.details?.rule });
    }
    throw error;
  }
  s.events.changed(row.sessionId);
  const applied = await s.db.sidebarProposal.findUniqueOrThrow({ where: { id } });
  if (applied.appliedVersion !== appliedVersion)
    throw new DomainError('INTERNAL', `proposal ${id}: applied twice`);
  return { applied: proposalBody(applied, tableName) };
}

/** Rejects a pending proposal (the person only), with their note for the agent. */
export async function rejectProposal(
  s: ProposalServices,
  person: Principal,
  id: string,
  note: string | undefined,
): Promise<ProposalBody> {
  const { row, tableName } = await ownProposal(s.db, person.userId, id);
  if (row.status !== 'pending') throw decided(row);
  return proposalBody(await settle(s, person, row, 'rejected', 'sidebar.reject', note, {}), tableName);
}

/** Moves a pending proposal to `status` with its audit row; CONFLICT when decided meanwhile. */
async function settle(
  s: ProposalServices,
  person: Principal,
  row: SidebarProposal,
  status: 'rejected' | 'stale' | 'blocked',
  action: string,
  note: string | undefined,
  details: object,
): Promise<SidebarProposal> {
  const updated = await s.db.$transaction(async (tx) => {
    const claimed = await tx.sidebarProposal.updateMany({
      where: { id: row.id, status: 'pending' },
      data: { status, decidedBy: person.userId, decidedAt: new Date(), note: note ?? null },
    });
    if (claimed.count !== 1) throw new DomainError('CONFLICT', `proposal ${row.id} was decided meanwhile`);
    await auditSidebar(tx, {
      userId: person.userId,
      action,
      status: 'refused',
      operation: row.command.split(/\s/, 1)[0] ?? '',
      details: {
        proposal_id: row.id,
        session_id: row.sessionId,
        table_id: row.tableId,
        proposed_by: row.proposedBy,
        decided_by: person.userId,
        version_before: row.baseVersion,
        ...details,
      },
    });
    return tx.sidebarProposal.findUniqueOrThrow({ where: { id: row.id } });
  });
  s.events.changed(row.sessionId);
  return updated;
}

/**
 * What changes whenever a session's proposals do (one cheap row): a stream reads the list again
 * only when it moved.
 */
export async function proposalsMark(db: Db, sessionId: string): Promise<string> {
  // One aggregate: counting a column counts its non-null values (decided ones, re-offered ones).
  const mark = await db.sidebarProposal.aggregate({
    where: { sessionId },
    _count: { _all: true, decidedAt: true, replacedBy: true },
    _max: { id: true, decidedAt: true },
  });
  return JSON.stringify([mark._count, mark._max]);
}

/** A proposal's status and fresh offer, read alone (what a waiting agent polls); undefined when gone. */
export async function proposalStatus(
  db: Db,
  id: string,
): Promise<{ status: string; replacedBy: string | null } | undefined> {
  return (
    (await db.sidebarProposal.findUnique({ where: { id }, select: { status: true, replacedBy: true } })) ??
    undefined
  );
}

/** Records the fresh proposal offered in place of a stale one. */
export async function replaced(s: ProposalServices, staleId: string, freshId: string): Promise<void> {
  await s.db.sidebarProposal.update({ where: { id: staleId }, data: { replacedBy: freshId } });
}

/**
 * The edits that undo applied proposal `row` on `node` (the context now), or why they cannot:
 * every place it changed must still hold what it put there (a splice: the table must not have
 * moved since), else undoing would lose a later change.
 */
export function undoEdits(
  row: SidebarProposal,
  node: JsonValue,
  version: number,
): { edits: DataChange[] } | { refused: string } {
  const tokens = parsePointer(row.pointer);
  const changes = row.changes as unknown as DataChange[];
  if (version !== row.appliedVersion) {
    for (const change of changes) {
      const relative = change.path.slice(tokens.length);
      const now = nodeAtTokens(node, relative);
      const same =
        change.op === 'set'
          ? JSON.stringify(now) === JSON.stringify(change.value)
          : change.op === 'remove'
            ? now === undefined
            : false;
      if (!same) {
        return {
          refused:
            `the data at "${formatPointer(change.path)}" changed after ` +
            `proposal ${row.id} (applied at version ${row.appliedVersion}, now ${version}); undoing it would lose that change`,
        };
      }
    }
  }
  return { edits: rebased(row.inverse as unknown as DataChange[], tokens.length) };
}
