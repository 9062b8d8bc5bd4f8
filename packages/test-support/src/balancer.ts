/**
 * A round-robin TCP balancer on loopback, as a deployment puts in front of several replicas of a
 * service (the control planes the gateways call, the gateways clients call): each connection it
 * accepts goes to the next backend in turn, or, when that one refuses (its process is gone), to the
 * one after it; a connection none accepts is closed. It balances connections, not requests, as an
 * L4 balancer does: a kept-alive connection stays on the backend it was handed to until it closes.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface Balancer {
  /** http://127.0.0.1:<port> of the balancer. */
  url: string;
  port: number;
  /** The backends' ports, in turn order. */
  backends(): number[];
  /** Replaces the backends (connections already handed out stay where they are). */
  setBackends(ports: number[]): void;
  /** Puts `port` in the place of `old` (a replica started again on a new port). */
  replace(old: number, port: number): void;
  /** How many connections went to the backend on `port` so far. */
  handedTo(port: number): number;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/** Starts a balancer over the loopback ports `ports`, on a free port of its own. */
export async function startBalancer(ports: number[]): Promise<Balancer> {
  let backends = [...ports];
  let turn = 0;
  const handed = new Map<number, number>();
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const server = createServer((client) => {
    track(client);
    const order = backends.map((_, i) => backends[(turn + i) % backends.length]!);
    turn = backends.length === 0 ? 0 : (turn + 1) % backends.length;
    let upstream: Socket | undefined;
    client.on('error', () => upstream?.destroy());
    client.once('close', () => upstream?.destroy());

    const attempt = (index: number): void => {
      const port = order[index];
      if (port === undefined || client.destroyed) return void client.destroy();
      const socket = connect(port, '127.0.0.1');
      upstream = socket;
      track(socket);
      // Refused before it connected: the next backend. After: the client's connection is cut.
      const refused = () => attempt(index + 1);
      socket.once('error', refused);
      socket.once('connect', () => {
        socket.off('error', refused);
        handed.set(port, (handed.get(port) ?? 0) + 1);
        socket.on('error', () => client.destroy());
        // An end is passed on by the pipes (after what came before it); a reset cuts the other side.
        client.pipe(socket);
        socket.pipe(client);
      });
    };
    attempt(0);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the balancer has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    backends: () => [...backends],
    setBackends(next) {
      backends = [...next];
      turn = 0;
    },
    replace(old, port) {
      backends = backends.map((p) => (p === old ? port : p));
    },
    handedTo: (port) => handed.get(port) ?? 0,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
