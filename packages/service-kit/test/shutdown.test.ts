// Pins how a service's app drains when it closes (drainIdleWhileClosing), on a real server on
// loopback: a connection a client opened and never used (after a second), and a keep-alive
// connection whose answer ends after closing began, are closed once nothing runs on them, so the
// close ends about then instead of when the client gives up or at the keep-alive timeout (72 s);
// the answer in flight is still given whole.
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { drainIdleWhileClosing } from '../src/index.ts';

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** Resolves when `socket` is closed by the other end, or with 'still open' after `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<'closed' | 'still open'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('still open'), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
  });
}

describe('drainIdleWhileClosing', () => {
  it('closes unused and newly idle connections once closing starts; the answer in flight is whole', async () => {
    const app = Fastify();
    drainIdleWhileClosing(app);
    app.get('/slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { answered: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;

    // Opened ahead by a client and never used: Node does not count it as idle.
    const unused = await open(port);
    // A keep-alive request whose answer comes after closing began.
    const busy = await open(port);
    let answer = '';
    busy.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    busy.write('GET /slow HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));

    const closing = app.close();
    const [unusedState, busyState] = await Promise.all([
      closedWithin(unused, 4_000),
      closedWithin(busy, 4_000),
    ]);
    expect(unusedState).toBe('closed');
    expect(busyState).toBe('closed');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('{"answered":true}');
    await closing;
  }, 15_000);
});
