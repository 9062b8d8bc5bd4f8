/**
 * A loopback TCP proxy that holds each chunk for a while before passing it on, in one direction or
 * both: a slow network between two parts (the control plane and a gateway it invalidates, Redis
 * and a subscriber), so a test can see what happens when a message arrives late. Order is kept;
 * an end or a reset is passed on after the chunks before it.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface DelayProxy {
  /** `127.0.0.1:<port>` of the proxy. */
  address: string;
  close(): Promise<void>;
}

/** Copies `from` to `to`, each chunk `delayMs` later (timers of one delay fire in order). */
function pipeLate(from: Socket, to: Socket, delayMs: number): void {
  const later = (work: () => void) => (delayMs > 0 ? setTimeout(work, delayMs) : work());
  from.on('data', (chunk: Buffer) => later(() => to.destroyed || to.write(chunk)));
  from.on('end', () => later(() => to.end()));
  from.on('error', () => later(() => to.destroy()));
  from.on('close', () => later(() => to.destroy()));
}

/**
 * Proxies to `target` (`host:port` on loopback); `toTargetMs` delays what clients send,
 * `toClientMs` what the target answers.
 */
export async function delayProxy(
  target: string,
  delays: { toTargetMs?: number; toClientMs?: number },
): Promise<DelayProxy> {
  const [host = '127.0.0.1', port = ''] = target.split(/:(?=\d+$)/);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    pipeLate(client, upstream, delays.toTargetMs ?? 0);
    pipeLate(upstream, client, delays.toClientMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the proxy has no port');
  return {
    address: `127.0.0.1:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
