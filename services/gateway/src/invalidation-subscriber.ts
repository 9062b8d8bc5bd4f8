/**
 * With REDIS_URL set, every gateway replica hears the control plane's invalidations on one Redis
 * pub/sub channel (the same message as POST /cache/invalidate: `{"aei_ids": [...]}`).
 */
import type { FastifyBaseLogger } from 'fastify';
import { createClient } from 'redis';

export const INVALIDATION_CHANNEL = 'bindery:config-invalidate';

export interface Subscription {
  close(): Promise<void>;
}

/** Subscribes and calls `onMessage` with each parsed message; malformed ones are logged and skipped. */
export async function subscribeInvalidations(
  url: string,
  log: FastifyBaseLogger,
  onMessage: (message: { aei_ids?: string[]; api_keys?: string[]; all?: boolean }) => Promise<unknown>,
): Promise<Subscription> {
  const subscriber = createClient({ url });
  subscriber.on('error', (error: unknown) =>
    log.warn({ err: error }, 'redis subscriber error (reconnecting)'),
  );
  await subscriber.connect();
  await subscriber.subscribe(INVALIDATION_CHANNEL, (raw: string) => {
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      log.warn({ raw: raw.slice(0, 200) }, 'ignored a malformed invalidation message');
      return;
    }
    const m = message as { aei_ids?: unknown; api_keys?: unknown; all?: unknown };
    const strings = (v: unknown) =>
      Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
    const parsed = {
      ...(strings(m.aei_ids) && { aei_ids: strings(m.aei_ids) }),
      ...(strings(m.api_keys) && { api_keys: strings(m.api_keys) }),
      ...(m.all === true && { all: true }),
    };
    if (Object.keys(parsed).length === 0) {
      log.warn({ raw: raw.slice(0, 200) }, 'ignored an invalidation message naming nothing');
      return;
    }
    onMessage(parsed).catch((error: unknown) => log.error({ err: error }, 'invalidation failed'));
  });
  return {
    async close() {
      await subscriber.unsubscribe(INVALIDATION_CHANNEL);
      await subscriber.quit();
    },
  };
}
