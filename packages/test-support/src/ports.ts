/**
 * Loopback ports for tests. A service under test binds port 0 and reports the port it got (see
 * service-process.ts); a port chosen here first and bound later can be taken meanwhile by another
 * test file, so `freePort` is for addresses where nothing should listen, and `reservePort` holds
 * the port until the moment its server binds it.
 */
import { createServer, type Server } from 'node:net';

function listen(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    // A connection to a held port is dropped at once, as a refused one would fail: a service
    // that already names the port (a control plane telling its gateway of a change) does not
    // wait on it.
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address === 'object' && address) resolve({ server, port: address.port });
      else server.close(() => reject(new Error('no port')));
    });
  });
}

/** A loopback port nothing listens on right now (for "nothing answers there" addresses). */
export async function freePort(): Promise<number> {
  const { server, port } = await listen();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface ReservedPort {
  port: number;
  /** Lets the port go; call it right before the server that takes it listens. */
  release(): Promise<void>;
}

/**
 * A loopback port held open until `release()`: for a server that must be named (in another
 * service's settings) before it can be started.
 */
export async function reservePort(): Promise<ReservedPort> {
  const { server, port } = await listen();
  return {
    port,
    release: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}
