/**
 * What a service tells the launcher of `pnpm start` (scripts/start.ts) once it listens, over the
 * IPC channel the launcher opens: the launcher prints one banner for both services instead of each
 * printing its own lines. A service started any other way (no IPC channel) prints what it must
 * show a person itself.
 */

export interface ControlPlaneStarted {
  type: 'bindery:started';
  service: 'control-plane';
  /** Where the admin API answers, reachable from this machine. */
  url: string;
  database: 'pglite' | 'postgres';
  /** The data directory (embedded database) or the PostgreSQL URL without its password. */
  data: string;
  /** Generated on this start; shown once. */
  rootToken?: string;
  /** The demo exposure: its MCP URL when seeded on this start (shown once), else its id. */
  demo?: { aeiId: string; tools: number; mcpUrl?: string };
}

export interface GatewayStarted {
  type: 'bindery:started';
  service: 'gateway';
  url: string;
}

export type StartedMessage = ControlPlaneStarted | GatewayStarted;

/** True when a launcher started this process and listens on its IPC channel. */
export function underLauncher(): boolean {
  return typeof process.send === 'function' && process.connected;
}

/** Tells the launcher this service listens; false (and nothing sent) when there is none. */
export function tellLauncher(
  message: Omit<ControlPlaneStarted, 'type'> | Omit<GatewayStarted, 'type'>,
): boolean {
  if (!underLauncher()) return false;
  process.send?.({ type: 'bindery:started', ...message });
  return true;
}

export function isStartedMessage(value: unknown): value is StartedMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'bindery:started' &&
    typeof (value as { url?: unknown }).url === 'string'
  );
}
