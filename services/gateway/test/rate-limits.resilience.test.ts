// Pins that an api key's rate limit is one budget across the gateways on one Redis: two gateway
// processes on a Redis of this test's own, one key sent to both alternately as fast as the test
// can for a few seconds, admit in total at most the rate times the time plus the burst, not twice
// that. With that Redis stopped both keep serving, each with its own limit (so together about
// twice the rate), and /readyz and metrics say so; with Redis back they share one budget again.
// At a high rate most requests are served from a gateway's share without a round trip, and still
// no more than the budget is admitted. A gateway without Redis says its limits are per replica.
// The measured totals are printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import Fastify from 'fastify';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  reapAll,
  reservePort,
  startGateway,
  startStack,
  twoTableExposure,
  waitForReadiness,
  type Exposed,
  type ServiceProcess,
  type Stack,
} from '@bindery/test-support';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { SharedRateLimiter } from '../src/http/shared-rate-limit.ts';
import { createMetrics } from '../src/metrics.ts';
import { INTERNAL_TOKEN } from './support/stack.ts';

const PER_SECOND = 20;
// Ten: a test process or gateway held up for a moment on a busy host loses fewer tokens to a
// full bucket, while the one budget's ceiling stays far below two gateways' own.
const BURST = 10;
const MEASURE_MS = 3000;
/** Requests each worker keeps going at once, through both gateways in turn. */
const WORKERS = 4;

let redisPort: number;
let redis: ChildProcess | undefined;
let stack: Stack;
let second: ServiceProcess;
let exposed: Exposed;
let gateways: string[];

/** A redis-server of this test's own on `port`, without persistence; resolves once it accepts connections. */
function startRedis(port: number, release?: () => Promise<void>): Promise<ChildProcess> {
  return (release ? release() : Promise.resolve()).then(
    () =>
      new Promise((resolve, reject) => {
        const child = spawn(
          'redis-server',
          ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let output = '';
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`redis-server did not start:\n${output}`));
        }, 10_000);
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('Ready to accept connections')) {
            clearTimeout(timer);
            resolve(child);
          }
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`redis-server exited with ${code}:\n${output}`));
        });
      }),
  );
}

function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

// However the test ends, its redis-server does not outlive it.
process.once('exit', () => redis?.kill('SIGKILL'));

beforeAll(async () => {
  const reserved = await reservePort();
  redisPort = reserved.port;
  redis = await startRedis(redisPort, reserved.release);
  const env = {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    RATE_LIMIT_PER_SECOND: String(PER_SECOND),
    RATE_LIMIT_BURST: String(BURST),
  };
  stack = await startStack({ gatewayEnv: env });
  second = await startGateway(stack.controlPlaneUrl, stack.gatewayEnv(0));
  await waitForReadiness(second.url, 'ready');
  gateways = [stack.gatewayUrl, second.url];
  exposed = await twoTableExposure(stack);
});

afterAll(async () => {
  await second?.stop();
  await stack?.close();
  await stopRedis(redis);
  await reapAll();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
/** A 2025-era tools/list without a session: the framework's path. */
const LEGACY = { headers: HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) };
/** A modern (stateless) tools/list: the fast lane's, which checks the limit on its own. */
const MODERN = {
  headers: { ...HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  }),
};

/**
 * Sends the key's tools/list through the gateways in turn, `WORKERS` at a time, for `ms`, legacy
 * and modern requests alike: the requests each gateway admitted (any status but 429), and those
 * it refused with 429.
 */
async function flood(ms: number): Promise<{ admitted: number[]; limited: number[]; seconds: number }> {
  const admitted = gateways.map(() => 0);
  const limited = gateways.map(() => 0);
  const started = performance.now();
  const deadline = started + ms;
  let turn = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < deadline) {
        const which = turn % gateways.length;
        const request = Math.floor(turn / gateways.length) % 2 === 0 ? LEGACY : MODERN;
        turn += 1;
        const res = await fetch(`${gateways[which]}/api/v2/mcp/server/${exposed.apiKey}`, {
          method: 'POST',
          ...request,
        });
        await res.text();
        if (res.status === 429) {
          limited[which]! += 1;
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        } else {
          expect(res.status).toBe(200);
          admitted[which]! += 1;
        }
      }
    }),
  );
  return { admitted, limited, seconds: (performance.now() - started) / 1000 };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

async function readyz(url: string): Promise<{ status: string; rate_limits: string }> {
  const res = await fetch(`${url}/readyz`);
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; rate_limits: string };
}

/** Polls both gateways' /readyz until each says `rateLimits` (throws after `timeoutMs`). */
async function waitForRateLimits(rateLimits: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const said = await Promise.all(gateways.map(async (url) => (await readyz(url)).rate_limits));
    if (said.every((s) => s === rateLimits)) return;
    if (Date.now() > deadline) throw new Error(`rate_limits stayed ${said.join(', ')}, not ${rateLimits}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A metric's value on `url` (summed over the series whose labels include `labels`). */
async function metric(url: string, name: string, labels?: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const lines = text
    .split('\n')
    .filter((l) =>
      labels === undefined ? l.startsWith(`${name} `) : l.startsWith(`${name}{`) && l.includes(labels),
    );
  return lines.reduce((total, l) => total + Number(l.split(' ').at(-1)), 0);
}

/** The most a budget of `PER_SECOND` and `BURST` can admit in `seconds` (one more for rounding). */
const ceiling = (seconds: number) => PER_SECOND * seconds + BURST + 1;

describe('rate limits across gateways', { timeout: 60_000 }, () => {
  it('one budget on one Redis: two gateways admit about N per second in all, not 2N', async () => {
    await waitForRateLimits('cluster');
    for (const url of gateways) expect(await metric(url, 'gateway_rate_limit_shared')).toBe(1);
    // Each gateway looks the key up once; then the bucket fills again before the measure.
    await flood(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { admitted, limited, seconds } = await flood(MEASURE_MS);
    console.log(
      `cluster rate limit ${PER_SECOND}/s, burst ${BURST}, two gateways, ${seconds.toFixed(2)} s: ` +
        `admitted ${sum(admitted)} (${admitted.join(' + ')}), refused ${sum(limited)}; ` +
        `ceiling ${Math.floor(ceiling(seconds))}`,
    );
    // Each gateway was sent more than one budget's worth: limits of their own would have admitted
    // about a budget on each, twice the one budget (the Redis-stopped case below measures it).
    for (const [i, n] of admitted.entries()) expect(n + limited[i]!).toBeGreaterThan(ceiling(seconds));
    expect(sum(admitted)).toBeLessThanOrEqual(ceiling(seconds));
    // The budget is used, not lost to shares one gateway held while the other was refused.
    expect(sum(admitted)).toBeGreaterThanOrEqual(PER_SECOND * seconds * 0.6);
    for (const n of admitted) expect(n).toBeGreaterThan(0);
    // Both paths took part: the framework's and the fast lane's.
    for (const url of gateways) {
      for (const lane of ['fast', 'framework']) {
        expect(await metric(url, 'gateway_requests_total', `status="200",lane="${lane}"`)).toBeGreaterThan(0);
      }
    }
  });

  it('at a high rate most takes need no round trip, and the budget still holds', async () => {
    const rate = 2000;
    const burst = 100;
    const log = Fastify({ logger: { level: 'silent' } }).log;
    const url = `redis://127.0.0.1:${redisPort}`;
    const limiters = [0, 1].map(
      () =>
        new SharedRateLimiter({
          url,
          perSecond: rate,
          burst,
          timeoutMs: 1000,
          metrics: createMetrics(),
          log,
        }),
    );
    const stats = createClient({ url });
    await stats.connect();
    const roundTrips = async () => {
      const info = await stats.info('commandstats');
      return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    };
    try {
      for (const limiter of limiters) {
        while (limiter.scope() !== 'cluster') await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const before = await roundTrips();
      const admitted = [0, 0];
      const started = performance.now();
      // Four callers per limiter, each taking as fast as it can (yielding so the others run too):
      // misses overlap, as they do under load.
      await Promise.all(
        limiters.flatMap((limiter, i) =>
          [0, 1, 2, 3].map(async () => {
            while (performance.now() - started < 1000) {
              const taken = limiter.take('high-rate-key');
              if ((typeof taken === 'number' ? taken : await taken) === 0) admitted[i]! += 1;
              await yieldToLoop();
            }
          }),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      const trips = (await roundTrips()) - before;
      console.log(
        `shares at ${rate}/s, burst ${burst}, two limiters, ${seconds.toFixed(2)} s: admitted ` +
          `${sum(admitted)} (${admitted.join(' + ')}) with ${trips} Redis round trips`,
      );
      expect(sum(admitted)).toBeLessThanOrEqual(rate * seconds + burst);
      // Well below the rate on a starved host; the point is the bound above and the round trips.
      expect(sum(admitted)).toBeGreaterThanOrEqual(rate * seconds * 0.3);
      expect(trips * 5).toBeLessThanOrEqual(sum(admitted));
    } finally {
      await stats.close();
      for (const limiter of limiters) await limiter.close();
    }
  });

  it('Redis stopped: both keep serving with their own limits, and say so', async () => {
    await stopRedis(redis);
    await waitForRateLimits('local: Redis unreachable');
    for (const url of gateways) {
      expect((await readyz(url)).status).toBe('ready');
      expect(await metric(url, 'gateway_rate_limit_shared')).toBe(0);
      // One fallback for the stop (a stall of a loaded host may have made one more before).
      expect(await metric(url, 'gateway_rate_limit_fallbacks_total')).toBeGreaterThanOrEqual(1);
    }
    // A fresh second, so each gateway's own bucket starts from what this flood leaves it.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { admitted, limited, seconds } = await flood(MEASURE_MS);
    console.log(
      `local rate limits ${PER_SECOND}/s, burst ${BURST}, Redis stopped, two gateways, ${seconds.toFixed(2)} s: ` +
        `admitted ${sum(admitted)} (${admitted.join(' + ')}), refused ${sum(limited)}`,
    );
    expect(sum(limited)).toBeGreaterThan(0);
    // Each gateway holds its own limit; together they admit past the one budget's ceiling.
    for (const n of admitted) {
      expect(n).toBeLessThanOrEqual(ceiling(seconds));
      expect(n).toBeGreaterThanOrEqual(PER_SECOND * seconds * 0.6);
    }
    expect(sum(admitted)).toBeGreaterThan(ceiling(seconds));
  });

  it('Redis back: one budget again', async () => {
    redis = await startRedis(redisPort);
    await waitForRateLimits('cluster');
    for (const url of gateways) expect(await metric(url, 'gateway_rate_limit_shared')).toBe(1);
    const { admitted, limited, seconds } = await flood(2000);
    console.log(
      `cluster rate limit again, ${seconds.toFixed(2)} s: admitted ${sum(admitted)} (${admitted.join(' + ')}), ` +
        `refused ${sum(limited)}; ceiling ${Math.floor(ceiling(seconds))}`,
    );
    expect(sum(admitted)).toBeLessThanOrEqual(ceiling(seconds));
    // Each gateway said it once per outage and once when it came back, not per attempt (a
    // reconnect attempt every 50 ms to a second would have logged dozens).
    for (const gateway of [stack.gateway!, second]) {
      const log = gateway.output();
      const outages = log.split('rate limits: Redis unreachable').length - 1;
      expect(outages).toBeGreaterThanOrEqual(1);
      expect(outages).toBeLessThanOrEqual(3);
      expect(log.split('rate limits: Redis answers again').length - 1).toBe(outages);
    }
  });

  it('a gateway without Redis says its limits are per replica', async () => {
    const alone = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl }),
      false,
    );
    try {
      const res = await alone.inject({ method: 'GET', url: '/readyz' });
      expect(res.json()).toMatchObject({ rate_limits: 'per replica' });
    } finally {
      await alone.close();
    }
  });
});
