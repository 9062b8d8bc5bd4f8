/**
 * Callers and their entries (DESIGN.md §7b, seed 003): a profile is an AEI; each user has a default
 * profile and a map from caller names (`vscode`, `claude`, `cursor`) to profiles; an unknown or
 * absent caller gets the default one. Personal MCP keys (`bnd_pk_…`) authenticate the caller
 * entries: the gateway's `/api/v2/mcp/caller/{caller}`, the stdio entry `bindery-mcp <caller>`
 * relaying to it, and the REST entry with a caller.
 */
import { Type, type Static } from 'typebox';
import { CALLER_NAME_PATTERN } from './entries.ts';
import { StdioConfigs } from './admin-api.ts';
import { ConfigV2 } from './internal-api.ts';

export const CallerName = Type.String({
  pattern: CALLER_NAME_PATTERN,
  maxLength: 64,
  description: 'who is calling: a lower-case name such as vscode, claude or cursor',
});

// admin API ---------------------------------------------------------------------------------------

export const CreateMcpKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100, description: 'what the key is for, e.g. "laptop"' }) },
  { additionalProperties: false },
);
export type CreateMcpKeyBody = Static<typeof CreateMcpKeyBody>;

export const McpKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key_prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when a gateway last looked the key up (to within a minute)',
  }),
});
export type McpKey = Static<typeof McpKey>;

export const McpKeyWithSecret = Type.Intersect([
  McpKey,
  Type.Object({ key: Type.String({ description: 'the key itself: shown this once, never again' }) }),
]);
export type McpKeyWithSecret = Static<typeof McpKeyWithSecret>;

export const CallerParams = Type.Object({ caller: CallerName });
export const PutCallerBody = Type.Object(
  { aei_id: Type.String({ maxLength: 64 }) },
  { additionalProperties: false },
);
export type PutCallerBody = Static<typeof PutCallerBody>;

export const CallerMapping = Type.Object({
  caller: Type.String(),
  aei_id: Type.String(),
  aei_name: Type.String(),
  updated_at: Type.String({ format: 'date-time' }),
});
export type CallerMapping = Static<typeof CallerMapping>;

export const Profile = Type.Object({ aei_id: Type.String(), aei_name: Type.String() });

export const CallerList = Type.Object({
  default_profile: Profile,
  callers: Type.Array(CallerMapping),
});
export type CallerList = Static<typeof CallerList>;

/** How a caller resolves: its mapping, or the default profile. */
export const CallerResolution = Type.Object({
  caller: Type.Union([Type.String(), Type.Null()]),
  aei_id: Type.String(),
  aei_name: Type.String(),
  via: Type.Union([Type.Literal('map'), Type.Literal('default')]),
  stdio_configs: Type.Optional(StdioConfigs),
});
export type CallerResolution = Static<typeof CallerResolution>;

// internal API ------------------------------------------------------------------------------------

/** The header carrying a personal key on the internal caller lookup (never in a URL). */
export const PERSONAL_KEY_HEADER = 'x-bindery-personal-key';

export const CallerConfigQuery = Type.Object(
  { caller: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);
export type CallerConfigQuery = Static<typeof CallerConfigQuery>;

/** Who a caller entry's session is, besides the profile's config (the gateway logs and audits it). */
export const CallerIdentity = Type.Object({
  /** The caller name asked for (normalised); null when none was given. */
  name: Type.Union([Type.String(), Type.Null()]),
  via: Type.Union([Type.Literal('map'), Type.Literal('default')]),
  key_id: Type.String({ description: 'the personal key’s id' }),
  user_id: Type.String(),
});
export type CallerIdentity = Static<typeof CallerIdentity>;

/**
 * `GET /internal/callers/config?caller=` with the personal key in `x-bindery-personal-key`: the
 * profile the caller maps to (or the default profile, created on first need), as config v2, and
 * who asked. ETag `"{aei_id}.{config_version}"`, so a remapped caller never matches. An unknown or
 * revoked key answers 404 with `details.kind: "unknown"`; a malformed caller name 400.
 */
export const CallerConfig = Type.Object({
  kind: Type.Literal('aei'),
  config: ConfigV2,
  caller: CallerIdentity,
});
export type CallerConfig = Static<typeof CallerConfig>;
