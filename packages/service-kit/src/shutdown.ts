import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Graceful shutdown, the same for both services: on SIGINT or SIGTERM the HTTP server stops taking
 * connections, requests already received run to their answer (Fastify answers 503 to new requests
 * on open keep-alive connections, `/readyz` included), then `afterClose` releases what the server
 * used (database, worker threads) and the process exits 0. Should requests still be running after
 * `graceMs`, their connections are cut, `afterClose` still runs (a database is closed cleanly
 * either way) and the process exits 1, saying so.
 */

/** What the shutdown needs of a Fastify app. */
export interface ShutdownTarget {
  close(): PromiseLike<unknown>;
  server: { closeAllConnections(): void };
  log: {
    info(details: object, message: string): void;
    warn(details: object, message: string): void;
    error(details: object, message: string): void;
  };
}

export interface ShutdownOptions {
  graceMs: number;
  /** Runs once the server is closed (or its grace period is over). */
  afterClose?: () => Promise<unknown>;
  /** Ends the process; tests of this module pass their own. */
  exit?: (code: number) => void;
}

/** How long `afterClose` may take once the grace period is over, before the process exits anyway. */
const RELEASE_AFTER_GRACE_MS = 5_000;
/**
 * How often keep-alive connections that fell idle are closed while the server drains
 * (`drainIdleWhileClosing`, which each service's app installs). Node closes the idle ones once,
 * when closing starts; one whose last answer comes later (a tool call, or a stream written outside
 * the framework's hooks) would otherwise keep the server open until its keep-alive timeout.
 */
const IDLE_SWEEP_MS = 100;
/**
 * A connection on which nothing arrived for this long counts as unused (opened ahead by a client);
 * a younger one may have its request on the way.
 */
const UNUSED_AFTER_MS = 1_000;

/**
 * Makes every close of `app` (on a signal, or `app.close()` by whoever embeds it) drain its
 * connections: from the start of closing until the server is closed, each keep-alive connection is
 * closed as soon as it falls idle, and so is each connection on which no byte has arrived for a
 * second. Without it, a connection whose last answer ended after closing began (a standing stream
 * ended by a `preClose` hook, a tool call answered) held the close until its keep-alive timeout (72 s
 * by default), and one a client opened ahead and never used (a pooled or speculative connection)
 * until the client dropped it or the grace period cut it: Node counts neither as idle. Closing a
 * connection that carried nothing loses nothing; its client sees it closed before sending, and can
 * send again.
 */
export function drainIdleWhileClosing(app: FastifyInstance): void {
  /** Each open connection, with when it was accepted. */
  const open = new Map<Socket, number>();
  app.server.on('connection', (socket: Socket) => {
    open.set(socket, performance.now());
    socket.once('close', () => open.delete(socket));
  });
  let sweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    const drain = () => {
      app.server.closeIdleConnections();
      const before = performance.now() - UNUSED_AFTER_MS;
      for (const [socket, accepted] of open) {
        if (socket.bytesRead === 0 && accepted <= before) socket.destroy();
      }
    };
    drain();
    sweep = setInterval(drain, IDLE_SWEEP_MS);
    sweep.unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });
}

/** Installs the signal handlers; answers a function that starts the same shutdown by hand. */
export function closeOnSignals(app: ShutdownTarget, options: ShutdownOptions): (reason: string) => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let started = false;
  const shutdown = (reason: string) => {
    if (started) return; // A terminal's Ctrl+C may reach the process more than once.
    started = true;
    app.log.info({ reason, grace_ms: options.graceMs }, 'shutting down: finishing requests in flight');
    let graceOver = false;
    const release = () => (options.afterClose ? options.afterClose() : Promise.resolve());
    const grace = setTimeout(() => {
      graceOver = true;
      app.log.warn(
        { grace_ms: options.graceMs },
        'shutdown grace period over: cutting the connections of requests still running',
      );
      app.server.closeAllConnections();
      const cap = setTimeout(() => exit(1), RELEASE_AFTER_GRACE_MS);
      cap.unref();
      void release().then(
        () => exit(1),
        () => exit(1),
      );
    }, options.graceMs);
    Promise.resolve(app.close())
      .then(async () => {
        if (graceOver) return;
        clearTimeout(grace);
        await release();
        app.log.info({}, 'stopped');
        exit(0);
      })
      .catch((error: unknown) => {
        if (graceOver) return;
        clearTimeout(grace);
        app.log.error({ err: error }, 'shutdown failed');
        exit(1);
      });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => shutdown(signal));
  return shutdown;
}
