/**
 * The `bindery` CLI's grammar in the sidebar, on the tools of the person's own exposures: `tools
 * [EXPOSURE]`, `help TOOL`, `call TOOL --name value …` (arguments typed by the tool's input schema,
 * the CLI's own parser). Supervision decides how a call runs:
 * - a read runs at once, through the executor as a gateway's call would (audited as one). What reads
 *   is decided by the tool's configuration, never by its annotations (an author may write any): a
 *   context tool's read operation, a custom tool that can neither write its context nor fetch, an
 *   HTTP tool whose method is GET or HEAD;
 * - a context tool's write is computed on its context and becomes a proposal with its exact change,
 *   like any sidebar write;
 * - any other tool may change what the sidebar cannot show beforehand (an upstream server, an API,
 *   a custom tool that writes or fetches): it is refused here, to be called through its exposure.
 */
import { describeArguments, parseToolFlags, UsageError } from '@bindery/bindery-mcp/arguments';
import type { JsonSchema as CliSchema } from '@bindery/bindery-mcp/arguments';
import { OPERATIONS } from '@bindery/context-ops';
import { isOperationType, type OperationType } from '@bindery/contracts/operations';
import { DomainError } from '../domain/errors.ts';
import type { Db } from '../domain/context.ts';
import { resolveTools } from '../exposure/tools.ts';
import { refuseUnstorable } from './commands.ts';
import { table } from './terminal-output.ts';

export interface SidebarTool {
  aeiId: string;
  aeiName: string;
  bindingId: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  adiId: string;
  kind: string;
  /** It only reads, by its configuration. */
  reads: boolean;
  /** A context tool's context and operation. */
  context?: { tableId: string; jsonPath: string; operation: OperationType; config: Record<string, unknown> };
}

const READ_METHODS: ReadonlySet<unknown> = new Set(['GET', 'HEAD']);

/** Whether a tool only reads, from its ADI's own configuration (see the module's comment). */
function readsOnly(kind: string, operation: string | null, config: Record<string, unknown>): boolean {
  switch (kind) {
    case 'context':
      return operation !== null && isOperationType(operation) && OPERATIONS[operation].kind === 'read';
    case 'custom':
      return (
        config.context_write !== true &&
        (!Array.isArray(config.allowed_hosts) || config.allowed_hosts.length === 0)
      );
    case 'http':
      return READ_METHODS.has(config.method);
    default:
      // An upstream server's tool: its own hints are its word, not something the sidebar can check.
      return false;
  }
}

/** Tools of the person's enabled exposures, as their agents see them. */
export async function personTools(db: Db, userId: string): Promise<SidebarTool[]> {
  const aeis = await db.aei.findMany({
    where: { userId, status: 'enabled' },
    orderBy: { name: 'asc' },
    select: { id: true, name: true },
    take: 200,
  });
  const resolved = [];
  for (const aei of aeis) {
    for (const tool of await resolveTools(db, aei.id)) resolved.push({ aei, tool });
  }
  const adis = new Map(
    (
      await db.adi.findMany({
        where: { id: { in: [...new Set(resolved.map(({ tool }) => tool.adi.id))] } },
        select: { id: true, tableId: true, jsonPath: true, operationType: true, config: true },
      })
    ).map((adi) => [adi.id, adi]),
  );
  return resolved.flatMap(({ aei, tool }) => {
    const adi = adis.get(tool.adi.id);
    if (!adi) return [];
    const config = (adi.config ?? {}) as Record<string, unknown>;
    const operation = adi.operationType;
    return [
      {
        aeiId: aei.id,
        aeiName: aei.name,
        bindingId: tool.bindingId,
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as Record<string, unknown>,
        adiId: tool.adi.id,
        kind: tool.adi.kind,
        reads: readsOnly(tool.adi.kind, operation, config),
        ...(tool.adi.kind === 'context' &&
          adi.tableId !== null &&
          operation !== null &&
          isOperationType(operation) && {
            context: { tableId: adi.tableId, jsonPath: adi.jsonPath ?? '', operation, config },
          }),
      },
    ];
  });
}

/** `TOOL` or `EXPOSURE/TOOL` (an exposure by name or id) among `tools`. */
export function findTool(tools: readonly SidebarTool[], ref: string | undefined): SidebarTool {
  if (ref === undefined) throw new DomainError('VALIDATION_FAILED', 'name a tool (tools lists them)');
  const slash = ref.indexOf('/');
  const [exposure, name] = slash < 0 ? [undefined, ref] : [ref.slice(0, slash), ref.slice(slash + 1)];
  const found = tools.filter(
    (t) => t.name === name && (exposure === undefined || t.aeiName === exposure || t.aeiId === exposure),
  );
  if (found.length === 1) return found[0] as SidebarTool;
  if (found.length === 0) {
    throw new DomainError('NOT_FOUND', `no tool "${ref}" in your exposures (tools lists them)`);
  }
  throw new DomainError(
    'VALIDATION_FAILED',
    `"${name}" is a tool of several exposures; say which: ${found.map((t) => `${t.aeiName}/${t.name}`).join(', ')}`,
  );
}

export function toolsListing(tools: readonly SidebarTool[], exposure: string | undefined): string {
  const shown =
    exposure === undefined ? tools : tools.filter((t) => t.aeiName === exposure || t.aeiId === exposure);
  if (shown.length === 0)
    return exposure === undefined ? '(no tools in your exposures)' : `(no tools in "${exposure}")`;
  return table(shown.map((t) => ({ tool: t.name, exposure: t.aeiName, kind: t.kind, runs: runsAs(t) })));
}

function runsAs(tool: SidebarTool): string {
  if (tool.reads) return 'at once';
  return tool.context ? 'as a proposal' : 'not here';
}

export function toolHelp(tool: SidebarTool): string {
  const lines = [
    `${tool.aeiName}/${tool.name} (${tool.kind}, runs ${runsAs(tool)})`,
    '',
    tool.description,
    '',
  ];
  const args = describeArguments(tool.inputSchema as CliSchema);
  if (args.length === 0) lines.push('It takes no arguments.');
  for (const arg of args) {
    lines.push(
      `  --${arg.name} ${arg.type}${arg.required ? ' (required)' : ''}${arg.description ? `  ${arg.description}` : ''}`,
    );
  }
  lines.push('', `call ${tool.name} --name value …  (or --json '{…}' for the whole arguments object)`);
  return lines.join('\n');
}

/** `call TOOL …`'s arguments, typed by the tool's input schema. */
export function callArguments(tool: SidebarTool, argv: string[]): Record<string, unknown> {
  try {
    const parsed = parseToolFlags(tool.name, argv, tool.inputSchema as CliSchema);
    const args = parsed.json ?? parsed.values;
    refuseUnstorable(args, `${tool.name}'s arguments`);
    return args;
  } catch (error) {
    if (error instanceof UsageError) throw new DomainError('VALIDATION_FAILED', `call: ${error.message}`);
    throw error;
  }
}

/** How the sidebar runs a call of `tool`: at once, as a proposal, or not at all (FORBIDDEN). */
export function callRoute(tool: SidebarTool): 'run' | 'propose' {
  if (tool.reads) return 'run';
  if (tool.context) return 'propose';
  throw new DomainError(
    'FORBIDDEN',
    `call: ${tool.name} is a ${tool.kind} tool that may change things outside your data, which the sidebar cannot ` +
      'show before it happens; call it through its exposure (here run context tools, custom tools that neither ' +
      'write nor fetch, and HTTP GET or HEAD tools)',
    { tool: tool.name, kind: tool.kind },
  );
}
