/**
 * Naming rules shared by every surface: tool names (DESIGN.md §1), project slugs, prefixed ids.
 */

/** A tool name as MCP clients will see it; unique inside one AEI. */
export const TOOL_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';
export const TOOL_NAME_RE = new RegExp(TOOL_NAME_PATTERN);

/** A project slug: lower-case words joined by dashes, unique per user. */
export const SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$';
export const SLUG_RE = new RegExp(SLUG_PATTERN);

/** The prefix of each resource's id, so an id says what it names. */
export const ID_PREFIX = {
  user: 'usr',
  adminToken: 'tok',
  project: 'prj',
  table: 'tbl',
  adi: 'adi',
  aei: 'aei',
  binding: 'bnd',
  mcpInstance: 'mcp',
  upstreamServer: 'ups',
  attachment: 'att',
  prompt: 'pmt',
  auditEvent: 'evt',
} as const;
