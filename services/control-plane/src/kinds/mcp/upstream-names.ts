/**
 * How upstream servers' tools are named in an exposure and in warnings: an attached server's
 * tools as `{prefix}_{tool}` within the 64 characters every client takes, and a listed name
 * quoted and bounded for a person to read. Used by the sync (upstream-servers.ts) and the
 * catalog of resources and prompts (upstream-catalog.ts) alike.
 */
import { printable, TOOL_NAME_RE } from '@bindery/contracts';
import type { SkippedEntry } from './instance.ts';
import { shortHash } from '../tool-naming.ts';

/** Longest tool name an MCP client is sure to take (and a binding may have). */
export const TOOL_NAME_MAX = 64;

/**
 * `{prefix}_{tool}`, or when that is over 64 characters its first part and `_` + a 6-character hash
 * of the whole: stable, unique in practice, and within every client's limit.
 */
export function prefixedToolName(prefix: string, tool: string): string {
  const full = prefix === '' ? tool : `${prefix}_${tool}`;
  if (full.length <= TOOL_NAME_MAX && TOOL_NAME_RE.test(full)) return full;
  const safe = full.replace(/[^A-Za-z0-9_.-]/g, '_');
  if (safe.length <= TOOL_NAME_MAX && safe === full) return safe;
  return `${safe.slice(0, TOOL_NAME_MAX - 7)}_${shortHash(full)}`;
}

/** Characters of a name quoted in a warning, at most. */
const QUOTED_MAX = 200;

/** A name as a warning quotes it: cut, with NULs, half characters and quotes escaped (storable). */
export function quoted(name: string): string {
  return `"${printable(name.length > QUOTED_MAX ? `${name.slice(0, QUOTED_MAX - 1)}…` : name)}"`;
}

/**
 * What a listing left out because MCP does not allow it (`what`: tool, resource, prompt), as
 * warnings naming each: `tool "stringy" was skipped: it is not a tool MCP allows (inputSchema/type: ...)`.
 */
export function skippedWarnings(
  what: string,
  listed: { skipped?: SkippedEntry[]; moreSkipped?: number },
  warnings: string[],
): void {
  for (const entry of listed.skipped ?? []) {
    const which =
      entry.name === undefined
        ? `the ${what} at position ${entry.position} of the list`
        : `${what} ${quoted(entry.name)}`;
    warnings.push(`${which} was skipped: it is not a ${what} MCP allows (${entry.problem})`);
  }
  if (listed.moreSkipped)
    warnings.push(`${listed.moreSkipped} more ${what}(s) that MCP does not allow were skipped`);
}
