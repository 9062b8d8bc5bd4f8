/**
 * What an ADI can be (DESIGN.md §7b): `context` (one of the ten operations on a JSON context),
 * `custom` (JavaScript run in a sandbox), `http` (a call to an HTTP API), `mcp` (a tool of an upstream
 * MCP server, synced from it). A control plane offers
 * the kinds whose module it registers; the others are refused when an ADI is saved.
 */
import { Type } from 'typebox';

export const ADI_KINDS = ['context', 'custom', 'http', 'mcp'] as const;
export type AdiKind = (typeof ADI_KINDS)[number];

/** The kind a body without `kind` gets: today's ADI bodies keep their meaning. */
export const DEFAULT_ADI_KIND: AdiKind = 'context';

export const AdiKindSchema = Type.Enum(ADI_KINDS, {
  description:
    'what the tool runs: context (an operation on JSON data), custom (JavaScript), http (an HTTP API), mcp (a tool of an upstream MCP server)',
});

/** True when `value` names a kind of ADI (offered by this server or not). */
export function isAdiKind(value: unknown): value is AdiKind {
  return typeof value === 'string' && (ADI_KINDS as readonly string[]).includes(value);
}
