/**
 * Tolerant source routing (seed 004): agents that write their own tool calls name a tool by the
 * name they know it by and may add a hint of where it lives (`source`), often wrong. The rules,
 * the same on MCP `tools/call` (`params._meta["bindery/source"]`) and on the REST entry:
 * 1. an exact exposed tool name always wins, whatever the hint says;
 * 2. a hint naming an upstream server the exposure has tools of (its id, slug or attachment
 *    prefix, optionally as `mcp:{name}`) restricts the lookup to that server's tools, by their
 *    names there;
 * 3. otherwise the name is looked up among the upstream tools' original names first, then among
 *    the native tools' (their ADIs' names), even when the hint says `native`, `bindery` or
 *    `appflowy`: an agent's "native" often means "not MCP as far as it knows";
 * 4. any other hint is ignored (and logged), never an error;
 * 5. a name that matches several tools of the tier that found it is refused with the candidates.
 */
import { closeMatches } from './suggestions.ts';
import type { ExposedTool, ToolIndex } from './tool-index.ts';

/** Hints that name the gateway itself rather than a server: they change nothing (rule 3). */
const NATIVE_HINTS = new Set(['native', 'bindery', 'appflowy']);

export type Routed =
  | { tool: ExposedTool; ignoredHint?: string | undefined }
  | { ambiguous: string[]; ignoredHint?: string | undefined }
  | { notFound: true; server?: string | undefined; ignoredHint?: string | undefined };

function byOriginalName(index: ToolIndex): Map<string, ExposedTool[]> {
  if (!index.byOriginalName) {
    const map = new Map<string, ExposedTool[]>();
    for (const tool of index.list) {
      const same = map.get(tool.originalName);
      if (same) same.push(tool);
      else map.set(tool.originalName, [tool]);
    }
    index.byOriginalName = map;
  }
  return index.byOriginalName;
}

/** The upstream server a hint names among the exposure's tools (case-insensitive), if any. */
function hintedServer(index: ToolIndex, hint: string): string | undefined {
  if (!index.serversByHint) {
    const map = new Map<string, string>();
    for (const tool of index.list) {
      for (const name of tool.serverNames ?? []) map.set(name.toLowerCase(), tool.source);
    }
    index.serversByHint = map;
  }
  return index.serversByHint.get(hint.toLowerCase().replace(/^mcp:/, ''));
}

function pick(candidates: readonly ExposedTool[], ignoredHint: string | undefined): Routed | undefined {
  if (candidates.length === 0) return undefined;
  if (candidates.length === 1) return { tool: candidates[0]!, ignoredHint };
  return { ambiguous: candidates.map((t) => t.name), ignoredHint };
}

/** Which tool a call of `name` with source hint `hint` runs, by the rules above. */
export function routeTool(index: ToolIndex, name: string, hint: string | undefined): Routed {
  const trimmed = hint?.trim();
  const server = trimmed ? hintedServer(index, trimmed) : undefined;
  // Logged whether or not it mattered: the agent's idea of where tools live is off.
  const ignoredHint =
    trimmed && server === undefined && !NATIVE_HINTS.has(trimmed.toLowerCase()) ? trimmed : undefined;
  const exact = index.byName.get(name);
  if (exact) return { tool: exact, ignoredHint };
  const named = byOriginalName(index).get(name) ?? [];
  if (server) {
    return (
      pick(
        named.filter((t) => t.source === server),
        undefined,
      ) ?? { notFound: true, server }
    );
  }
  return (
    pick(
      named.filter((t) => t.source !== 'native'),
      ignoredHint,
    ) ??
    pick(
      named.filter((t) => t.source === 'native'),
      ignoredHint,
    ) ?? { notFound: true, ignoredHint }
  );
}

/** The source hint of an MCP `tools/call`: `params._meta["bindery/source"]` when it is a string. */
export function sourceHintOf(params: { _meta?: unknown } | undefined, key: string): string | undefined {
  const meta = params?._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const hint = (meta as Record<string, unknown>)[key];
  return typeof hint === 'string' && hint.length <= 128 ? hint : undefined;
}

/**
 * Why a call names no tool, in words and details (MCP answers it as -32602, REST as an item's
 * error): an ambiguous name lists its candidates; an unknown one the closest names (`names`:
 * the names the caller could have meant, asked only when needed).
 */
export function unknownToolRefusal(
  name: string,
  routed: Routed | undefined,
  names: () => readonly string[],
): { message: string; details: Record<string, unknown>; ambiguous: boolean } {
  if (routed && 'ambiguous' in routed) {
    const list = routed.ambiguous.map((c) => `"${c}"`).join(', ');
    return {
      message: `tool name "${name}" matches several tools: ${list}; call one by its exact name, or give a source hint naming its server`,
      details: { tool: name, candidates: routed.ambiguous },
      ambiguous: true,
    };
  }
  const close = closeMatches(name, [...names()]);
  const where = routed && 'server' in routed && routed.server ? ` on ${routed.server}` : '';
  const suggestion = close.length > 0 ? `; did you mean ${close.map((c) => `"${c}"`).join(', ')}?` : '';
  return {
    message: `unknown tool "${name}"${where}${suggestion}`,
    details: { tool: name, close_matches: close },
    ambiguous: false,
  };
}
