// The invalidation subscriber against a real Redis: a process starts when Redis is away (start-up
// waits a bounded time), and once Redis answers the subscription lands, everything cached is
// dropped (what was announced meanwhile was missed) and messages arrive.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createClient } from 'redis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  INVALIDATION_CHANNEL,
  subscribeInvalidations,
  type InvalidationMessage,
} from '../src/invalidation-subscriber.ts';

const REDIS = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

/** A loopback port nothing listens on yet. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Redis appearing at `port`: a TCP relay to the real one. */
async function relay(port: number): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(REDIS.port || 6379), REDIS.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

const log = { warn: vi.fn(), error: vi.fn() };
const publisher = createClient({ url: REDIS.href });
afterAll(() => publisher.close());

describe('subscribeInvalidations', () => {
  it('starts without Redis, then subscribes once Redis answers and asks for a full drop', async () => {
    const port = await freePort();
    const messages: InvalidationMessage[] = [];
    const onResubscribed = vi.fn();
    const started = Date.now();
    const subscription = await subscribeInvalidations(`redis://127.0.0.1:${port}`, log, {
      waitMs: 300,
      onMessage: (m) => messages.push(m),
      onResubscribed,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(onResubscribed).not.toHaveBeenCalled();
    expect(log.warn).toHaveBeenCalledTimes(1);

    const server = await relay(port);
    try {
      await expect.poll(() => onResubscribed.mock.calls.length, { timeout: 10_000 }).toBe(1);
      await publisher.connect();
      await publisher.publish(INVALIDATION_CHANNEL, JSON.stringify({ aei_ids: ['a1'] }));
      await expect.poll(() => messages).toEqual([{ aei_ids: ['a1'] }]);
    } finally {
      await subscription.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('closes while Redis is still away without hanging', async () => {
    const subscription = await subscribeInvalidations(`redis://127.0.0.1:${await freePort()}`, log, {
      waitMs: 50,
      onMessage: () => undefined,
    });
    await subscription.close();
  });
});
