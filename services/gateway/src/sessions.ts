/**
 * Open MCP sessions of this gateway, each bound to the api_key that opened it. Sessions live in
 * this process (their SSE streams do); a request for a session this replica does not know is
 * served statelessly by the routes instead. Idle sessions are closed after a while.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyBaseLogger } from 'fastify';
import type { McpEndpoint } from './mcp-server.ts';
import type { GatewayMetrics } from './metrics.ts';

export interface Session {
  id: string;
  keyHash: string;
  /** The AEI this session serves; undefined for a legacy v1 instance. */
  aeiId: string | undefined;
  server: Server;
  /** The session's handlers, for the routes' fast path. */
  endpoint: McpEndpoint;
  transport: StreamableHTTPServerTransport;
  lastSeen: number;
}

export class SessionRegistry {
  readonly #sessions = new Map<string, Session>();
  readonly #metrics: GatewayMetrics;
  readonly #log: FastifyBaseLogger;
  readonly #idleMs: number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(metrics: GatewayMetrics, log: FastifyBaseLogger, idleMs = 30 * 60_000) {
    this.#metrics = metrics;
    this.#log = log;
    this.#idleMs = idleMs;
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(idleMs, 60_000));
    this.#sweeper.unref();
  }

  add(session: Session): void {
    this.#sessions.set(session.id, session);
    this.#metrics.sessions.set(this.#sessions.size);
  }

  remove(id: string): void {
    this.#sessions.delete(id);
    this.#metrics.sessions.set(this.#sessions.size);
  }

  /** The session with this id, if this replica holds it and it belongs to this key. */
  get(id: string, keyHash: string): Session | undefined {
    const session = this.#sessions.get(id);
    if (!session || session.keyHash !== keyHash) return undefined;
    session.lastSeen = Date.now();
    return session;
  }

  /** Tells every open session of these AEIs that its tool list changed; answers how many. */
  async announceToolListChanged(aeiIds: readonly string[]): Promise<number> {
    const wanted = new Set(aeiIds);
    const targets = [...this.#sessions.values()].filter((s) => s.aeiId !== undefined && wanted.has(s.aeiId));
    await Promise.all(
      targets.map((s) =>
        s.server
          .sendToolListChanged()
          .catch((error: unknown) =>
            this.#log.debug({ err: error, session: s.id }, 'list_changed not delivered'),
          ),
      ),
    );
    return targets.length;
  }

  #sweep(): void {
    const cutoff = Date.now() - this.#idleMs;
    for (const session of this.#sessions.values()) {
      if (session.lastSeen < cutoff) void session.transport.close();
    }
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    await Promise.all([...this.#sessions.values()].map((s) => s.transport.close()));
    this.#sessions.clear();
  }

  get size(): number {
    return this.#sessions.size;
  }
}
