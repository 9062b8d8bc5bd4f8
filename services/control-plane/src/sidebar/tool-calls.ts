/**
 * The `bindery` CLI's grammar in the sidebar, on the tools of the person's own exposures: `tools
 * [EXPOSURE]`, `help TOOL`, `call TOOL --name value …` (arguments typed by the tool's input schema,
 * the CLI's own parser). Supervision decides how a call runs:
 * - a read (a context tool's read operation; a custom tool that can neither write nor fetch; an HTTP
 *   GET or HEAD, or a tool its owner, this person, declared read-only) runs at once, through the
 *   executor as a gateway's call would (audited as one);
 * - a context tool's write is computed on its context and becomes a proposal with its exact change,
 *   like any sidebar write;
 * - any other tool may change what the sidebar cannot show beforehand (an upstream server, an API,
 *   a custom tool that writes or fetches): it is refused here, to be called through its exposure.
 */
import { describeArguments, parseToolFlags, UsageError } from '@bindery/bindery-mcp/arguments';
import type { JsonSchema as CliSchema } from '@bindery/bindery-mcp/arguments';
import { OPERATIONS } from '@bindery/context-ops';
import type { ToolAnnotations } from '@bindery/contracts';
import { isOperationType } from '@bindery/contracts/operations';
import { DomainError } from '../domain/errors.ts';
import type { Db } from '../domain/context.ts';
import { resolveTools } from '../exposure/tools.ts';
import { table } from './terminal-output.ts';

export interface SidebarTool {
  aeiId: string;
  aeiName: string;
  bindingId: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations | undefined;
  adiId: string;
  kind: string;
}

/** Tools of the person's enabled exposures, as their agents see them. */
export async function personTools(db: Db, userId: string): Promise<SidebarTool[]> {
  const aeis = await db.aei.findMany({
    where: { userId, status: 'enabled' },
    orderBy: { name: 'asc' },
    select: { id: true, name: true },
    take: 200,
  });
  const out: SidebarTool[] = [];
  for (const aei of aeis) {
    for (const tool of await resolveTools(db, aei.id)) {
      out.push({
        aeiId: aei.id,
        aeiName: aei.name,
        bindingId: tool.bindingId,
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as Record<string, unknown>,
        annotations: tool.annotations,
        adiId: tool.adi.id,
        kind: tool.adi.kind,
      });
    }
  }
  return out;
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
  if (tool.kind === 'context') return tool.annotations?.readOnlyHint === true ? 'at once' : 'as a proposal';
  return readOnlyHere(tool) ? 'at once' : 'not here';
}

/**
 * A custom or HTTP tool read-only by its own configuration (what its owner, this person, declared
 * included); an upstream server's hint is its own word, not trusted here.
 */
function readOnlyHere(tool: SidebarTool): boolean {
  return (tool.kind === 'custom' || tool.kind === 'http') && tool.annotations?.readOnlyHint === true;
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
    return parsed.json ?? parsed.values;
  } catch (error) {
    if (error instanceof UsageError) throw new DomainError('VALIDATION_FAILED', `call: ${error.message}`);
    throw error;
  }
}

/** How the sidebar runs a call of `tool` whose ADI has `operation` (context tools). */
export function callRoute(tool: SidebarTool, operation: string | null): 'run' | 'propose' {
  if (tool.kind === 'context') {
    if (operation === null || !isOperationType(operation)) {
      throw new DomainError('PRECONDITION_FAILED', `${tool.name}: its operation is unknown`);
    }
    return OPERATIONS[operation].kind === 'read' ? 'run' : 'propose';
  }
  if (readOnlyHere(tool)) return 'run';
  throw new DomainError(
    'FORBIDDEN',
    `call: ${tool.name} is a ${tool.kind} tool that may change things outside your data, which the sidebar cannot ` +
      'show before it happens; call it through its exposure (a custom or HTTP tool you mark read-only runs here)',
    { tool: tool.name, kind: tool.kind },
  );
}
