/**
 * The sidebar (seed 000's internal Sandbox CLI): a terminal on a person's own contexts, driven by
 * the person in the console or by an agent holding a session token, never reachable through an
 * exposure. Reads run at once; a write becomes a proposal showing its exact change and the verdict
 * of the table's rules, and only the person's approval applies it (proposals.ts).
 */
import {
  applyChanges,
  ChangeMismatch,
  executeWrite,
  formatPointer,
  inferSchema,
  OpError,
  parsePointer,
  resolveTokens,
  type JsonValue,
  type Limits,
} from '@bindery/context-ops';
import type { Proposal, SidebarCommandAnswer, SidebarCommandBody } from '@bindery/contracts';
import type { SidebarSession } from '../generated/prisma/client.ts';
import type { ContextStore } from '../context/context-store.ts';
import type { CachedContext } from '../context/context-cache.ts';
import type { QueryPool } from '../kinds/context/query-pool.ts';
import type { WriteMeter } from '../metrics.ts';
import { DomainError, fromOpError } from '../domain/errors.ts';
import type { Db, Principal } from '../domain/context.ts';
import { HELP, parseCommand, queryText, WRITE_VERBS, writeOperation, type Parsed } from './commands.ts';
import { moved, relativeTokens } from './paths.ts';
import {
  applyProposal,
  listProposals,
  ownProposal,
  proposalBody,
  proposalStatus,
  rejectProposal,
  replaced,
  storeProposal,
  undoEdits,
  type ProposalServices,
  type ProposalTable,
} from './proposals.ts';
import { actorUser, sessionFor, type SidebarActor } from './sessions.ts';
import {
  callArguments,
  callRoute,
  findTool,
  personTools,
  toolHelp,
  toolsListing,
  type SidebarTool,
} from './tool-calls.ts';
import { checkArguments } from '../kinds/arguments.ts';
import { canonicalPath } from '../context/table-rules.ts';
import { SidebarEvents } from './sidebar-events.ts';
import { bounded, formatValue, listing, table } from './terminal-output.ts';

/** Errors a command answers as HTTP errors rather than as terminal output. */
const PASSED_ON: ReadonlySet<string> = new Set(['INTERNAL', 'RATE_LIMITED']);

/** A `call` as #toolCall plans it: the tool, how it runs, and the executor's request. */
interface ToolCallPlan {
  tool: SidebarTool;
  route: 'run' | 'propose';
  adi: SidebarTool['context'];
  request: { aei_id: string; binding_id: string; arguments: Record<string, unknown> };
}

/** How long a waiting agent gives a stale proposal's fresh offer to be recorded. */
const STALE_REOFFER_MS = 2_000;

/** How often a waiting agent's command looks for a verdict given on another control plane. */
const VERDICT_POLL_MS = 500;

export interface SidebarOptions {
  db: Db;
  contexts: ContextStore;
  queries: QueryPool;
  limits: Limits;
  writes: WriteMeter;
  /** Runs a call through the executor, as a gateway's call to `/internal/adi/{id}/execute` would. */
  runTool(
    adiId: string,
    call: { aei_id: string; binding_id: string; arguments: Record<string, unknown> },
  ): Promise<ToolResult>;
}

/** What the executor answers of a call (the MCP tool result). */
export interface ToolResult {
  content?: { type: string; text?: string }[];
  structuredContent?: JsonValue;
  isError?: boolean;
}

/** The context a command runs on. */
interface Place {
  table: ProposalTable;
  tokens: string[];
}

export class Sidebar {
  readonly events = new SidebarEvents();
  readonly #options: SidebarOptions;
  readonly #proposals: ProposalServices;

  constructor(options: SidebarOptions) {
    this.#options = options;
    this.#proposals = {
      db: options.db,
      contexts: options.contexts,
      writes: options.writes,
      events: this.events,
    };
  }

  /** Runs one command line in session `sessionId` for `actor`; a command's own fault is in `error`. */
  /** `signal`: the caller went away (an agent's wait for a verdict ends then). */
  async command(
    actor: SidebarActor,
    sessionId: string,
    body: SidebarCommandBody,
    signal?: AbortSignal,
  ): Promise<SidebarCommandAnswer> {
    const session = await sessionFor(this.#options.db, actor, sessionId, true);
    let answer: SidebarCommandAnswer;
    try {
      answer = await this.#run(actor, session, parseCommand(body.command), body.command.trim());
    } catch (error) {
      // A command's own fault is what the terminal prints; being refused service is an HTTP answer.
      // The engine's errors (a query's, say) are the command's faults as the domain's are.
      const fault =
        error instanceof OpError ? new DomainError(error.code, error.message, error.details) : error;
      if (!(fault instanceof DomainError) || PASSED_ON.has(fault.code)) throw fault;
      return {
        output: `error: ${fault.message}`,
        error: { code: fault.code, message: fault.message, ...(fault.details && { details: fault.details }) },
      };
    }
    const proposal = answer.proposal;
    if (proposal?.status === 'pending' && actor.kind === 'agent' && (body.wait_ms ?? 0) > 0) {
      const decided = await this.#awaitVerdict(
        sessionId,
        actorUser(actor),
        proposal.id,
        body.wait_ms ?? 0,
        signal,
      );
      return { output: `${answer.output}\n${verdictLine(decided)}`, proposal: decided };
    }
    return answer;
  }

  async #run(
    actor: SidebarActor,
    session: SidebarSession,
    parsed: Parsed,
    line: string,
  ): Promise<SidebarCommandAnswer> {
    const db = this.#options.db;
    const userId = actorUser(actor);
    switch (parsed.verb) {
      case '':
      case 'help':
        if (parsed.words[0] !== undefined) {
          return { output: toolHelp(findTool(await personTools(db, userId), parsed.words[0])) };
        }
        return { output: HELP };
      case 'tools':
        return { output: toolsListing(await personTools(db, userId), parsed.words[0]) };
      case 'tables': {
        const rows = await db.table.findMany({
          where: { userId },
          orderBy: { name: 'asc' },
          take: 200,
          select: { id: true, name: true, version: true },
        });
        return { output: rows.length === 0 ? '(no tables)' : table(rows) };
      }
      case 'use':
        return { output: await this.#use(session, userId, parsed.words) };
      case 'cd': {
        const place = await this.#place(session, userId);
        const tokens = await this.#canonical(place.table.id, moved(place.tokens, parsed.words[0] ?? ''));
        await this.#options.contexts.read(this.#at(place.table.id, tokens));
        await db.sidebarSession.update({
          where: { id: session.id },
          data: { pointer: formatPointer(tokens) },
        });
        return { output: `${place.table.name} ${formatPointer(tokens) || '/'}` };
      }
      case 'pwd': {
        const place = await this.#place(session, userId);
        const read = await this.#read(place);
        return {
          output: `${place.table.name} ${formatPointer(place.tokens) || '/'} (version ${read.version})`,
        };
      }
      case 'proposals': {
        const pending = await listProposals(db, session.id, 'pending');
        if (pending.length === 0) return { output: 'no proposal waits for a verdict' };
        return { output: pending.map((p) => `${p.id}  ${p.status}  ${p.command}`).join('\n') };
      }
      case 'ls':
      case 'cat':
      case 'schema': {
        const place = await this.#place(session, userId);
        const node = resolved((await this.#read(place)).node, parsed.words[0]);
        if (parsed.verb === 'ls') return { output: listing(node) };
        if (parsed.verb === 'cat') return { output: bounded(JSON.stringify(node, null, 2)) };
        return { output: bounded(JSON.stringify(inferSchema(node), null, 2)) };
      }
      case 'query': {
        const place = await this.#place(session, userId);
        const read = await this.#read(place);
        const expression = queryText(parsed.rest);
        if (expression === '') throw new DomainError('VALIDATION_FAILED', "usage: query 'JMESPATH'");
        const where = `${place.table.id}\u0000${formatPointer(place.tokens)}`;
        const result = await this.#options.queries.run(
          { node: read.node, text: () => read.text(), key: `${where}\u0000${read.version}`, place: where },
          { query: expression },
          {},
          this.#options.limits,
          userId,
        );
        return { output: formatValue(result) };
      }
      case 'call': {
        const call = await this.#toolCall(userId, parsed);
        if (call.route === 'propose') return this.#propose(actor, session, parsed, line, call);
        return { output: resultText(await this.#options.runTool(call.tool.adiId, call.request)) };
      }
      default:
        if (!WRITE_VERBS.has(parsed.verb)) {
          throw new DomainError('VALIDATION_FAILED', `unknown command "${parsed.verb}"; type help`);
        }
        return this.#propose(actor, session, parsed, line);
    }
  }

  async #propose(
    actor: SidebarActor,
    session: SidebarSession,
    parsed: Parsed,
    line: string,
    call?: ToolCallPlan,
  ) {
    const userId = actorUser(actor);
    const by = actor.kind === 'agent' ? 'agent' : 'person';
    const change = await this.#change(session.id, userId, parsed, () => this.#place(session, userId), call);
    return this.#offer(
      session.id,
      userId,
      change.place,
      change.before,
      change.after,
      change.command ?? line,
      by,
    );
  }

  /**
   * What a write command would change: on `where` (the session's context, or the place a stale
   * proposal was computed on), on the undone proposal's place, or on a context tool's own context.
   */
  async #change(
    sessionId: string,
    userId: string,
    parsed: Parsed,
    where: () => Promise<Place>,
    known?: ToolCallPlan,
  ): Promise<{ place: Place; before: CachedContext; after: JsonValue; command?: string }> {
    if (parsed.verb === 'undo') {
      const undo = await this.#undo(sessionId, userId, parsed.words[0]);
      // Named, so a stale undo is computed again for the same change.
      return { ...undo, command: `undo ${undo.undone}` };
    }
    if (parsed.verb === 'call') {
      const { route, adi, request } = known ?? (await this.#toolCall(userId, parsed));
      if (route !== 'propose' || adi === undefined)
        throw new DomainError('INTERNAL', 'a call that only reads');
      const place = await this.#tablePlace(userId, adi.tableId, parsePointer(adi.jsonPath));
      const before = await this.#read(place);
      // The proposal's base version guards it: a version the caller expects adds nothing.
      const { expected_version: _expected, ...args } = request.arguments;
      const after = fromOpError(
        () => executeWrite(adi.operation, before.node, args, adi.config, this.#options.limits).context,
      );
      return { place, before, after };
    }
    const place = await where();
    const before = await this.#read(place);
    const { op, args } = writeOperation(parsed, before.node, relativeTokens);
    const after = fromOpError(() => executeWrite(op, before.node, args, {}, this.#options.limits).context);
    return { place, before, after };
  }

  /** `call TOOL …`: the tool, its checked arguments, and whether it runs at once or is proposed. */
  async #toolCall(userId: string, parsed: Parsed): Promise<ToolCallPlan> {
    const [ref, ...argv] = parsed.words;
    const tool = findTool(await personTools(this.#options.db, userId), ref);
    const args = checkArguments(tool.inputSchema, callArguments(tool, argv), tool.name);
    const route = callRoute(tool);
    return {
      tool,
      route,
      adi: tool.context,
      request: { aei_id: tool.aeiId, binding_id: tool.bindingId, arguments: args },
    };
  }

  async #offer(
    sessionId: string,
    userId: string,
    place: Place,
    before: CachedContext,
    after: JsonValue,
    command: string,
    by: 'agent' | 'person',
  ): Promise<SidebarCommandAnswer> {
    const proposal = await storeProposal(this.#proposals, {
      sessionId,
      userId,
      table: place.table,
      tokens: place.tokens,
      command,
      by,
      before,
      after,
    });
    if (proposal === undefined) return { output: 'nothing would change: no proposal' };
    return { output: describe(proposal), proposal };
  }

  /** `undo [PROPOSAL]`: the inverse of the session's last applied proposal (or of PROPOSAL). */
  async #undo(sessionId: string, userId: string, id: string | undefined) {
    const row = await this.#options.db.sidebarProposal.findFirst({
      where: { sessionId, status: 'applied', ...(id !== undefined && { id }) },
      orderBy: { decidedAt: 'desc' },
    });
    if (!row) {
      throw new DomainError(
        'NOT_FOUND',
        id === undefined
          ? 'no applied change to undo in this session'
          : `no applied proposal ${id} in this session`,
      );
    }
    const place = await this.#tablePlace(userId, row.tableId, parsePointer(row.pointer));
    const before = await this.#read(place);
    const undo = undoEdits(row, before.node, before.version);
    if ('refused' in undo) throw new DomainError('CONFLICT', `undo: ${undo.refused}`);
    let after: JsonValue;
    try {
      after = applyChanges(before.node, undo.edits);
    } catch (error) {
      if (!(error instanceof ChangeMismatch)) throw error;
      // A place it would restore is gone since (its parent removed, say).
      throw new DomainError(
        'CONFLICT',
        `undo: the data changed after proposal ${row.id} so that it no longer fits`,
      );
    }
    return { place, before, after, undone: row.id };
  }

  /**
   * Approves a proposal for the person. When the table moved on since it was computed, the
   * proposal is stale: its command runs again on the data now and the fresh proposal is offered
   * (CONFLICT, `details.replaced_by`), for the person to approve again.
   */
  async approve(person: Principal, id: string, note: string | undefined): Promise<Proposal> {
    const outcome = await applyProposal(this.#proposals, person, id, note);
    if ('applied' in outcome) return outcome.applied;
    const stale = outcome.stale;
    let fresh: Proposal | undefined;
    let why = '';
    try {
      const by = stale.proposedBy === 'agent' ? 'agent' : 'person';
      const again = await this.#change(stale.sessionId, person.userId, parseCommand(stale.command), () =>
        this.#tablePlace(person.userId, stale.tableId, parsePointer(stale.pointer)),
      );
      fresh = (
        await this.#offer(
          stale.sessionId,
          person.userId,
          again.place,
          again.before,
          again.after,
          stale.command,
          by,
        )
      ).proposal;
      if (fresh) await replaced(this.#proposals, stale.id, fresh.id);
      else why = '; on the data now it would change nothing';
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      why = `; it no longer applies: ${error.message}`;
    }
    throw new DomainError(
      'CONFLICT',
      `proposal ${id} is stale: table version is now ${outcome.currentVersion}, it was computed on ${stale.baseVersion}` +
        (fresh ? `; a fresh proposal ${fresh.id} shows the change on the data now` : why),
      {
        status: 'stale',
        current_version: outcome.currentVersion,
        ...(fresh && { replaced_by: fresh.id, proposal: fresh }),
      },
    );
  }

  reject(person: Principal, id: string, note: string | undefined): Promise<Proposal> {
    return rejectProposal(this.#proposals, person, id, note);
  }

  async proposals(actor: SidebarActor, sessionId: string, status?: string): Promise<Proposal[]> {
    const session = await sessionFor(this.#options.db, actor, sessionId);
    return listProposals(this.#options.db, session.id, status);
  }

  /** The proposal once decided, or as it is when `waitMs` ran out. */
  async #awaitVerdict(
    sessionId: string,
    userId: string,
    id: string,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Proposal> {
    const deadline = Date.now() + waitMs;
    let staleAt: number | undefined;
    for (;;) {
      const current = await proposalStatus(this.#options.db, id);
      if (current === undefined) throw new DomainError('NOT_FOUND', `proposal ${id} is gone`);
      const now = Date.now();
      if (current.status === 'stale') staleAt ??= now;
      // A stale one is offered again right after it is marked: the fresh one's id is worth a moment.
      const reoffering =
        current.status === 'stale' &&
        current.replacedBy === null &&
        now - (staleAt ?? now) < STALE_REOFFER_MS;
      if ((current.status !== 'pending' && !reoffering) || now >= deadline || signal?.aborted === true) {
        const { row, tableName } = await ownProposal(this.#options.db, userId, id);
        return proposalBody(row, tableName);
      }
      await this.events.next(sessionId, Math.min(VERDICT_POLL_MS, deadline - now), signal);
    }
  }

  async #use(session: SidebarSession, userId: string, words: string[]): Promise<string> {
    const [first, second] = words;
    if (first === undefined)
      throw new DomainError('VALIDATION_FAILED', 'usage: use TABLE [PATH], or use PATH');
    let place: Place;
    if (first.startsWith('/') && second === undefined) {
      const current = await this.#place(session, userId);
      place = { table: current.table, tokens: relativeTokens(first) };
    } else {
      const rows = await this.#options.db.table.findMany({
        where: { userId, OR: [{ id: first }, { name: first }] },
        select: { id: true, name: true, rules: true },
        take: 10,
      });
      const row = rows.find((r) => r.id === first) ?? (rows.length === 1 ? rows[0] : undefined);
      if (rows.length > 1 && row === undefined) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `several tables of yours are named "${first}": use one by its id (${rows.map((r) => r.id).join(', ')})`,
        );
      }
      if (!row) throw new DomainError('NOT_FOUND', `no table "${first}" of yours (tables lists them)`);
      place = { table: tableOf(row), tokens: relativeTokens(second) };
    }
    place = { ...place, tokens: await this.#canonical(place.table.id, place.tokens) };
    const read = await this.#read(place);
    await this.#options.db.sidebarSession.update({
      where: { id: session.id },
      data: { tableId: place.table.id, pointer: formatPointer(place.tokens) },
    });
    return `${place.table.name} ${formatPointer(place.tokens) || '/'} (version ${read.version})`;
  }

  /** The path with array indexes spelt as the data spells them ("-1": the last item's index). */
  #canonical(tableId: string, tokens: string[]): Promise<string[]> {
    return canonicalPath(
      tokens,
      async (prefix) => (await this.#options.contexts.read(this.#at(tableId, prefix))).node,
    );
  }

  async #place(session: SidebarSession, userId: string): Promise<Place> {
    if (session.tableId === null) {
      throw new DomainError(
        'VALIDATION_FAILED',
        'choose a context first: use TABLE [PATH] (tables lists yours)',
      );
    }
    return this.#tablePlace(userId, session.tableId, parsePointer(session.pointer));
  }

  async #tablePlace(userId: string, tableId: string, tokens: string[]): Promise<Place> {
    const row = await this.#options.db.table.findFirst({
      where: { id: tableId, userId },
      select: { id: true, name: true, rules: true },
    });
    if (!row) throw new DomainError('NOT_FOUND', `table ${tableId} is gone`);
    return { table: tableOf(row), tokens };
  }

  #at(tableId: string, tokens: string[]) {
    return { tableId, tokens, pointer: formatPointer(tokens) };
  }

  #read(place: Place): Promise<CachedContext> {
    return this.#options.contexts.read(this.#at(place.table.id, place.tokens));
  }
}

function tableOf(row: { id: string; name: string; rules: unknown }): ProposalTable {
  return { id: row.id, name: row.name, rules: row.rules === null ? null : JSON.stringify(row.rules) };
}

function resolved(node: JsonValue, path: string | undefined): JsonValue {
  const tokens = relativeTokens(path);
  return fromOpError(() => resolveTokens(node, tokens, { argument: 'path', pointer: formatPointer(tokens) }));
}

/** A proposal as the terminal prints it: what changes, the rules' verdicts, what happens next. */
export function describe(p: Proposal): string {
  const lines = [`proposal ${p.id} (${p.status}) on ${p.table_name}, computed on version ${p.base_version}:`];
  for (const op of p.patch.slice(0, 20)) {
    lines.push(`  ${op.op} ${op.path}${op.value === undefined ? '' : ` ${clip(JSON.stringify(op.value))}`}`);
  }
  if (p.patch.length > 20) lines.push(`  … ${p.patch.length - 20} more operations`);
  const broken = p.verdicts.filter((v) => !v.ok);
  if (p.verdicts.length > 0) {
    lines.push(broken.length === 0 ? `rules: all ${p.verdicts.length} kept` : `rules broken:`);
    for (const v of broken)
      lines.push(`  ${v.rule}${v.path !== undefined ? ` ${v.path}` : ''}: ${v.message}`);
  }
  lines.push(
    p.status === 'blocked'
      ? 'blocked: it cannot be approved'
      : 'waiting for the person to approve or reject it',
  );
  return lines.join('\n');
}

function verdictLine(p: Proposal): string {
  switch (p.status) {
    case 'applied':
      return `approved: applied at version ${p.applied_version}${p.note ? ` (note: ${p.note})` : ''}`;
    case 'rejected':
      return `rejected${p.note ? `: ${p.note}` : ''}`;
    case 'stale':
      return `stale: the data changed before approval${p.replaced_by ? `; fresh proposal ${p.replaced_by} offered` : ''}`;
    case 'pending':
      return 'still waiting for the person (ask again with: proposals)';
    default:
      return p.status;
  }
}

/** A tool's answer as the terminal prints it: its structured content, else its text. */
function resultText(result: ToolResult): string {
  const text = (result.content ?? [])
    .map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type}]`))
    .join('\n');
  if (result.isError === true) return `error: ${bounded(text)}`;
  return result.structuredContent !== undefined ? formatValue(result.structuredContent) : bounded(text);
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}
