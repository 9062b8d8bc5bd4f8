/**
 * Wire shapes of the `mcp` kind: a tool of an upstream MCP server, stored when the server's tool
 * list is synced (never created through `POST /api/v2/adis`). What the upstream said about the tool
 * (its name there, title, description, schemas, annotations) lives in the ADI's config; the ADI's
 * own name and description are the user's and stay as they were set when the upstream changes.
 */
import { Type, type Static } from 'typebox';

export const McpAdiRef = Type.Object({
  kind: Type.Literal('mcp'),
  adi_id: Type.String(),
  upstream_server_id: Type.String({ description: 'the upstream server the tool belongs to' }),
  tool: Type.String({ description: 'the tool’s name on the upstream server' }),
  upstream_slug: Type.Optional(
    Type.String({ description: 'the upstream server’s slug (source routing: `mcp:{slug}`)' }),
  ),
  prefix: Type.Optional(
    Type.String({ description: 'the prefix of the attachment that bound the tool, if one did' }),
  ),
});
export type McpAdiRef = Static<typeof McpAdiRef>;

/** What an `mcp` ADI's config holds (written by sync, read back by GET /api/v2/adis). */
export const McpToolConfig = Type.Object({
  upstream_server_id: Type.String(),
  tool: Type.String({ description: 'the tool’s name on the upstream server' }),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  input_schema: Type.Record(Type.String(), Type.Unknown()),
  output_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  annotations: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  meta: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: 'the tool’s `_meta` as the upstream lists it (MCP Apps: `ui.resourceUri`)',
    }),
  ),
  icons: Type.Optional(
    Type.Array(Type.Unknown(), { description: 'the tool’s icons as the upstream lists them' }),
  ),
  missing: Type.Optional(
    Type.Boolean({ description: 'true: the upstream no longer lists this tool (calls fail until it does)' }),
  ),
});
export type McpToolConfig = Static<typeof McpToolConfig>;

/** The create body of the kind: present so POST /api/v2/adis can refuse it by name. */
export const CreateMcpAdiBody = Type.Object(
  { kind: Type.Literal('mcp') },
  { title: 'mcp ADI (created by syncing an upstream server, not here)' },
);
