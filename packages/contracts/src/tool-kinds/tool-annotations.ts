/**
 * MCP `ToolAnnotations`: hints about what a tool does, shown by clients (a read-only tool may run
 * without asking, a destructive one after a confirmation). Hints, never guarantees: clients must
 * not trust them from untrusted servers, and the executor enforces nothing from them.
 */
import { Type, type Static } from 'typebox';

export const ToolAnnotations = Type.Object(
  {
    title: Type.Optional(Type.String({ maxLength: 200, description: 'a human-readable name of the tool' })),
    readOnlyHint: Type.Optional(Type.Boolean({ description: 'true: the tool changes nothing' })),
    destructiveHint: Type.Optional(
      Type.Boolean({ description: 'for a tool that writes, true: it may replace or remove data' }),
    ),
    idempotentHint: Type.Optional(
      Type.Boolean({
        description:
          'for a tool that writes, true: calling it again with the same arguments changes nothing more',
      }),
    ),
    openWorldHint: Type.Optional(
      Type.Boolean({
        description: 'true: the tool reaches beyond this server (the Internet, other systems)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ToolAnnotations = Static<typeof ToolAnnotations>;
