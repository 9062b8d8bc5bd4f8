/**
 * Wire shapes of a table's rules (`/api/v2/tables/{id}/rules`) and of the sidebar
 * (`/api/v2/sidebar/...`): a terminal on the person's own contexts where reads run at once and
 * writes become proposals the person approves.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Timestamp = Type.String({ format: 'date-time' });
const Pointer = Type.String({
  maxLength: 1_024,
  description: 'a JSON Pointer from the root of the table\'s data ("" is the whole data)',
});

export const RULE_DENIALS = ['write', 'delete'] as const;
export type RuleDenial = (typeof RULE_DENIALS)[number];

export const ProtectedPath = Type.Object(
  {
    path: Pointer,
    deny: Type.Array(Type.Enum(RULE_DENIALS), {
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
      description: '"write": nothing at or under the path may change; "delete": nothing there may be removed',
    }),
  },
  { additionalProperties: false },
);

export const TableRules = Type.Object(
  {
    protect: Type.Optional(Type.Array(ProtectedPath, { maxItems: 100 })),
    schema: Type.Optional(
      Type.Unknown({
        description:
          'a JSON Schema (its $schema picks the dialect; 2020-12 by default) the data must still satisfy',
      }),
    ),
    schema_path: Type.Optional(
      Type.String({
        maxLength: 1_024,
        description: 'the subtree the schema applies to (default: the whole data)',
      }),
    ),
    max_items_per_change: Type.Optional(
      Type.Integer({
        minimum: 1,
        // context-ops' MAX_CHANGES: a write past it is stored as one replacement, counted only as "more".
        maximum: 10_000,
        description: 'how many members or items one change may add, remove or replace',
      }),
    ),
    person_only: Type.Optional(
      Type.Array(Pointer, {
        maxItems: 100,
        description: 'paths only a person may change (not a tool, not an agent session)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TableRules = Static<typeof TableRules>;

export const RULE_NAMES = ['protect', 'schema', 'max_items_per_change', 'person_only'] as const;
export type RuleName = (typeof RULE_NAMES)[number];

/** What one rule says of one change. */
export const RuleVerdict = Type.Object({
  rule: Type.Enum(RULE_NAMES),
  ok: Type.Boolean(),
  message: Type.String(),
  path: Type.Optional(Type.String()),
});
export type RuleVerdict = Static<typeof RuleVerdict>;

/** One RFC 6902 operation (paths from the root of the table's data). */
export const PatchOperation = Type.Object({
  op: Type.Union([Type.Literal('add'), Type.Literal('remove'), Type.Literal('replace')]),
  path: Type.String(),
  value: Type.Optional(Type.Unknown()),
});
export type PatchOperation = Static<typeof PatchOperation>;

/** What changes, for a person to read: each place with its value before and after (absent: none). */
export const ChangeView = Type.Object({
  path: Type.String(),
  before: Type.Optional(Type.Unknown()),
  after: Type.Optional(Type.Unknown()),
});
export type ChangeView = Static<typeof ChangeView>;

/** Places a proposal's `view` shows at most; its `patch` always holds every change. */
export const PROPOSAL_VIEW_PLACES = 200;

export const PROPOSAL_STATUSES = ['pending', 'applied', 'rejected', 'stale', 'blocked', 'withdrawn'] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

export const Proposal = Type.Object({
  id: Type.String(),
  session_id: Type.String(),
  table_id: Type.String(),
  table_name: Type.String(),
  command: Type.String(),
  proposed_by: Type.Union([Type.Literal('person'), Type.Literal('agent')]),
  base_version: Type.Integer({ description: 'the table version the change was computed on' }),
  patch: Type.Array(PatchOperation),
  view: Type.Array(ChangeView),
  verdicts: Type.Array(RuleVerdict),
  status: Type.Enum(PROPOSAL_STATUSES),
  note: Nullable(Type.String()),
  applied_version: Nullable(Type.Integer()),
  decided_by: Nullable(Type.String()),
  replaced_by: Nullable(Type.String({ description: 'the fresh proposal offered when this one went stale' })),
  created_at: Timestamp,
  decided_at: Nullable(Timestamp),
});
export type Proposal = Static<typeof Proposal>;

export const SIDEBAR_SESSION_STATUSES = ['active', 'paused', 'ended'] as const;

export const CreateSidebarSessionBody = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 60, maximum: 86_400, default: 3_600, description: 'how long the token lasts' }),
    ),
    table_id: Type.Optional(Type.String({ maxLength: 64, description: 'the context to start in' })),
    path: Type.Optional(Type.String({ maxLength: 1_024 })),
  },
  { additionalProperties: false },
);
export type CreateSidebarSessionBody = Static<typeof CreateSidebarSessionBody>;

export const SidebarSession = Type.Object({
  id: Type.String(),
  status: Type.Enum(SIDEBAR_SESSION_STATUSES),
  table_id: Nullable(Type.String()),
  path: Type.String(),
  expires_at: Timestamp,
  created_at: Timestamp,
});
export type SidebarSession = Static<typeof SidebarSession>;

/** The creation answer: the only time the session's token is shown. */
export const CreatedSidebarSession = Type.Object({
  id: Type.String(),
  token: Type.String({ description: 'the sidebar token an agent sends as "Authorization: Bearer"' }),
  expires_at: Timestamp,
});

export const UpdateSidebarSessionBody = Type.Object(
  { status: Type.Enum(SIDEBAR_SESSION_STATUSES) },
  { additionalProperties: false },
);

export const SidebarCommandBody = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 65_536 }),
    wait_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 120_000,
        description: "an agent's write waits this long for the person's verdict (default: no wait)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SidebarCommandBody = Static<typeof SidebarCommandBody>;

export const SidebarCommandAnswer = Type.Object({
  output: Type.String({ description: 'what the terminal prints' }),
  proposal: Type.Optional(Proposal),
  error: Type.Optional(
    Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
});
export type SidebarCommandAnswer = Static<typeof SidebarCommandAnswer>;

export const ProposalDecisionBody = Type.Object(
  { note: Type.Optional(Type.String({ maxLength: 2_000 })) },
  { additionalProperties: false },
);
