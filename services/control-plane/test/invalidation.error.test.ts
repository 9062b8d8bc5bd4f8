// Pins how invalidation fails: never by throwing. A gateway refusing the ops token is told once
// (no retry), a gateway that hangs is given up after the timeout and one retry (and holds the
// change's answer only for the announce bound), Redis being away
// is one warning per outage and no published message, and every failure is logged with its target.
import { afterEach, describe, expect, it } from 'vitest';
import {
  ExposureInvalidation,
  type ExposureInvalidationOptions,
} from '../src/exposure/exposure-invalidation.ts';
import { collectingLog, deadGatewayUrl, recordingGateway, testInvalidation } from './support/gateways.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const invalidationTo = (options: Partial<ExposureInvalidationOptions>) => testInvalidation(options, cleanups);

const warnings = (log: ReturnType<typeof collectingLog>) => log.lines.filter((l) => l.level === 'warn');

describe('invalidation failures', () => {
  it('does not retry a gateway that refuses the ops token, and says so with the status', async () => {
    const g = await recordingGateway((_, res) => res.writeHead(401).end('{"error":{"code":"UNAUTHORIZED"}}'));
    cleanups.push(() => g.close());
    const { invalidation, log } = invalidationTo({ gatewayUrls: [g.url] });

    expect(() => invalidation.configChanged(['aei_refused'])).not.toThrow();
    await invalidation.settled();

    expect(g.requests).toHaveLength(1);
    expect(warnings(log)).toHaveLength(1);
    expect(warnings(log)[0]?.details).toMatchObject({
      gateway: g.url,
      aei_ids: ['aei_refused'],
      status: 401,
      attempts: 1,
    });
  });

  it('gives up on a gateway that never answers after the timeout and one retry', async () => {
    // Holds every request open; closeAllConnections in close() ends them.
    const g = await recordingGateway(() => undefined);
    cleanups.push(() => g.close());
    const { invalidation, log } = invalidationTo({ gatewayUrls: [g.url], timeoutMs: 200 });

    const started = Date.now();
    invalidation.configChanged(['aei_hung']);
    await invalidation.settled();

    expect(Date.now() - started).toBeLessThan(2_000);
    expect(g.requests).toHaveLength(2);
    expect(warnings(log)[0]?.details).toMatchObject({ gateway: g.url, attempts: 2 });
    expect(String(warnings(log)[0]?.details.error)).toMatch(/timeout/i);
  });

  it('answers a change after its bound when a gateway hangs, and goes on delivering after it', async () => {
    const g = await recordingGateway(() => undefined);
    cleanups.push(() => g.close());
    const { invalidation } = invalidationTo({ gatewayUrls: [g.url], timeoutMs: 1_000, announceWaitMs: 150 });

    const started = performance.now();
    await invalidation.configChanged(['aei_slow']);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(900);
    // The delivery is still under way: it was given the bound, not cut by it.
    expect(g.requests).toHaveLength(1);
    await invalidation.settled();
    expect(g.requests).toHaveLength(2);
  });

  it('with Redis away: one warning for the outage, none published, nothing thrown, a quick close', async () => {
    const redisUrl = (await deadGatewayUrl()).replace('http:', 'redis:');
    const { invalidation, log } = invalidationTo({ redisUrl });
    await log.waitFor((l) => l.message === 'redis unreachable; retrying in the background');

    expect(() => invalidation.configChanged(['aei_unpublished'])).not.toThrow();
    await invalidation.settled();
    // Give the client time for a few reconnect attempts: they must not each log.
    await new Promise((resolve) => setTimeout(resolve, 400));

    const lines = warnings(log);
    expect(lines.filter((l) => l.message.startsWith('redis unreachable'))).toHaveLength(1);
    expect(
      lines.find((l) => l.message === 'redis not connected; invalidation not published')?.details,
    ).toEqual({
      channel: 'bindery:config-invalidate',
      aei_ids: ['aei_unpublished'],
    });
    const closing = Date.now();
    await invalidation.close();
    expect(Date.now() - closing).toBeLessThan(500);
  });

  it('tells no one after close, and says so', async () => {
    const g = await recordingGateway();
    cleanups.push(() => g.close());
    const { invalidation, log } = invalidationTo({ gatewayUrls: [g.url] });
    await invalidation.close();

    invalidation.configChanged(['aei_late']);
    await invalidation.settled();

    expect(g.requests).toHaveLength(0);
    expect(warnings(log)[0]?.details).toEqual({ aei_ids: ['aei_late'] });
  });

  it('refuses gateway URLs without an ops token', () => {
    expect(
      () =>
        new ExposureInvalidation({
          gatewayUrls: ['http://127.0.0.1:4100'],
          opsToken: undefined,
          redisUrl: undefined,
          log: collectingLog(),
        }),
    ).toThrow(/ops token/);
  });
});
