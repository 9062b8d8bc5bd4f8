/**
 * `bindery-mcp --sidebar`: a stdio MCP server that lets an agent drive one sidebar session of the
 * control plane (sidebar-api.ts). The sidebar's command line is one tool, `sidebar_run`, rather
 * than a tool per command: its language (paths relative to a context chosen with `use`, quoted
 * JSON) is the control plane's, and stays there. A write waits for the person's verdict, bounded;
 * `sidebar_proposals` tells a verdict that came after the wait. The server holds no state of its
 * own: the session (its context, its proposals) lives on the control plane.
 */
import type { Readable, Writable } from 'node:stream';
import type { Proposal } from '@bindery/contracts';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from './log.ts';
import { ControlPlaneError, SidebarApi } from './sidebar-api.ts';
import type { SidebarSettings } from './settings.ts';

/** How often a request waiting for the verdict reports progress, to a client that asked for it. */
const PROGRESS_EVERY_MS = 10_000;
/** How long answers on their way may still go out once stdin has ended. */
const CLOSE_GRACE_MS = 2_000;
/** The newest proposals `sidebar_proposals` shows. */
const PROPOSALS_SHOWN = 20;

const INSTRUCTIONS = `A terminal on the person's Bindery tables (JSON documents), one session of their sidebar.
Reads answer at once. A write never runs at once: it becomes a proposal (its exact change and the
table's rules' verdicts) that the person approves or rejects in the Bindery console. Start with
sidebar_run "tables", then "use TABLE [PATH]"; "help" lists every command.`;

function tools(waitMs: number): Tool[] {
  const waiting =
    waitMs > 0
      ? `This call waits up to ${Math.round(waitMs / 1000)} s for the verdict; the output's last line says "approved: applied at version N", "rejected: <the person's note>", "stale: ..." (the data changed first; a fresh proposal is offered) or that it is still waiting.`
      : 'This call answers the pending proposal at once; sidebar_proposals tells its verdict later.';
  return [
    {
      name: 'sidebar_run',
      title: 'Run a sidebar command',
      description:
        "Runs one command line in the person's Bindery sidebar session and answers its output as text. " +
        'Reads: tables, use TABLE [PATH] (choose the context), cd PATH, pwd, ls [PATH], cat [PATH], ' +
        "query 'JMESPATH', schema [PATH]. Writes: set PATH JSON, merge PATH JSON, add PATH JSON, rm PATH, " +
        'mv FROM TO, cp FROM TO, undo [PROPOSAL]; proposals lists those waiting; help tells more. ' +
        'Paths are JSON Pointers relative to the context ("0/name"). ' +
        "A write becomes a proposal the person approves or rejects; the result's structuredContent.proposal holds it. " +
        `${waiting} A command that fails (a bad path, an unknown table) is an error result saying why.`,
      inputSchema: {
        type: 'object',
        properties: {
          command: {
            type: 'string',
            minLength: 1,
            maxLength: 65_536,
            description: `one command line, e.g. "use crm /customers", "query 'length(@)'", 'set 0/name "Ann"'`,
          },
        },
        required: ['command'],
        additionalProperties: false,
      },
      annotations: { openWorldHint: false },
    },
    {
      name: 'sidebar_proposals',
      title: "The session's proposals",
      description:
        `The session's ${PROPOSALS_SHOWN} newest proposals with their status (pending, blocked, applied, rejected, stale, withdrawn) ` +
        "and the person's note: how to learn a verdict that came after sidebar_run stopped waiting. " +
        'structuredContent.items holds them in full (patch, before/after view, rule verdicts).',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
  ];
}

export interface SidebarServerOptions {
  settings: SidebarSettings;
  log: Logger;
  stdin?: Readable;
  stdout?: Writable;
}

/** Serves the sidebar on stdio; resolves once stdin has ended and the answers on their way went out. */
export class SidebarServer {
  readonly #options: SidebarServerOptions;
  readonly #api: SidebarApi;
  readonly #server: Server;
  readonly #stdin: Readable;
  readonly #transport: StdioServerTransport;
  /** Aborts the requests to the control plane still running when the server closes. */
  readonly #closing = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  #closed: Promise<void> | undefined;

  constructor(options: SidebarServerOptions) {
    this.#options = options;
    this.#api = new SidebarApi(options.settings);
    this.#stdin = options.stdin ?? process.stdin;
    this.#transport = new StdioServerTransport(this.#stdin, options.stdout ?? process.stdout);
    this.#server = new Server(
      { name: 'bindery-sidebar', version: '0.1.0' },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
    );
    const list = tools(options.settings.waitMs);
    this.#server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: list }));
    this.#server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const call = this.#call(request.params.name, request.params.arguments ?? {}, extra);
      this.#running.add(call);
      void call.finally(() => this.#running.delete(call)).catch(() => undefined);
      return call;
    });
  }

  async run(): Promise<void> {
    const ended = new Promise<void>((resolve) => {
      this.#stdin.once('end', resolve);
      this.#stdin.once('close', resolve);
      // The transport gave up reading stdin (a message past its size limit): nothing more comes.
      this.#transport.onclose = resolve;
    });
    // A line that is not a JSON-RPC message is skipped (it has no id to answer).
    this.#server.onerror = (error) => this.#options.log.warning(`stdin: ${error.message}`);
    await this.#server.connect(this.#transport);
    const { url, sessionId } = this.#options.settings;
    this.#options.log.info(`serving sidebar session ${sessionId} of ${url}`);
    await ended;
    this.#options.log.debug('stdin ended');
    await this.close();
  }

  /** Lets answers on their way go out (briefly), aborts the rest, stops; safe to call more than once. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      const deadline = Date.now() + CLOSE_GRACE_MS;
      while (this.#running.size > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      this.#closing.abort();
      await this.#server.close().catch(() => undefined);
    })();
    return this.#closed;
  }

  async #call(name: string, args: Record<string, unknown>, extra: Extra): Promise<CallToolResult> {
    const signal = AbortSignal.any([extra.signal, this.#closing.signal]);
    try {
      if (name === 'sidebar_run') {
        const command = args.command;
        if (typeof command !== 'string' || command.trim() === '') {
          return failure('sidebar_run needs "command": one command line, such as "tables" or "help"');
        }
        const stop = reportProgress(extra);
        try {
          return await this.#run(command, signal);
        } finally {
          stop();
        }
      }
      if (name === 'sidebar_proposals') return await this.#proposals(signal);
    } catch (error) {
      if (!(error instanceof ControlPlaneError)) throw error;
      this.#options.log.debug(`${name}: ${error.status === undefined ? '' : `HTTP ${error.status} `}refused`);
      return failure(error.message);
    }
    throw new McpError(
      ErrorCode.InvalidParams,
      `unknown tool "${name}": the tools are sidebar_run and sidebar_proposals`,
    );
  }

  async #run(command: string, signal: AbortSignal): Promise<CallToolResult> {
    const answer = await this.#api.command(command, signal);
    // The verb only: the rest of a command may carry the person's data into the client's log.
    const verb = command.trim().split(/\s/, 1)[0];
    this.#options.log.debug(
      `${verb}: ${answer.error ? `error ${answer.error.code}` : (answer.proposal?.status ?? 'ok')}`,
    );
    const content = [{ type: 'text' as const, text: answer.output }];
    if (answer.error) return { content, isError: true };
    return { content, ...(answer.proposal && { structuredContent: { proposal: answer.proposal } }) };
  }

  async #proposals(signal: AbortSignal): Promise<CallToolResult> {
    const items = (await this.#api.proposals(signal)).slice(0, PROPOSALS_SHOWN);
    const text = items.length === 0 ? 'no proposals in this session yet' : items.map(proposalLine).join('\n');
    return { content: [{ type: 'text', text }], structuredContent: { items } };
  }
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Progress every few seconds while a command runs, when the client asked for it (a progress
 * token): a client that resets its timeout on progress then waits out a long wait for the verdict.
 * Answers what stops it.
 */
function reportProgress(extra: Extra): () => void {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return () => undefined;
  let count = 0;
  const timer = setInterval(() => {
    count += 1;
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: count, message: "waiting for the person's verdict" },
      })
      .catch(() => undefined);
  }, PROGRESS_EVERY_MS);
  return () => clearInterval(timer);
}

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** `id  status  command`, and the verdict's particulars. */
function proposalLine(p: Proposal): string {
  const command = p.command.length > 120 ? `${p.command.slice(0, 119)}…` : p.command;
  const applied = p.applied_version === null ? '' : ` (version ${p.applied_version})`;
  const replaced = p.replaced_by === null ? '' : ` (replaced by ${p.replaced_by})`;
  const note = p.note === null ? '' : ` — note: ${p.note}`;
  return `${p.id}  ${p.status}${applied}${replaced}  ${p.table_name}: ${command}${note}`;
}
