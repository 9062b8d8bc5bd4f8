// Pins the gateway's small pure pieces: settings (defaults, bounds and refusals), the Origin/Host policy,
// "did you mean" suggestions, the token-bucket rate limiter, and the lazy request logger.
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../src/config.ts';
import { lazyChildLogger } from '../src/http/lazy-logger.ts';
import { checkOrigin } from '../src/http/origin-guard.ts';
import { RateLimiter } from '../src/http/rate-limit.ts';
import { closeMatches } from '../src/mcp/tools/suggestions.ts';

describe('loadGatewayConfig', () => {
  it('has working defaults given the internal token', () => {
    const config = loadGatewayConfig({ INTERNAL_TOKEN: 'x'.repeat(16) });
    expect(config).toMatchObject({ port: 4100, host: '127.0.0.1', controlPlaneUrl: 'http://127.0.0.1:4000' });
    expect(config.allowedHosts).toEqual(['localhost', '127.0.0.1', '::1']);
    expect(config.cache).toEqual({
      maxEntries: 10_000,
      maxBytes: 128 * 1024 * 1024,
      ttlMs: 30_000,
      negativeTtlMs: 5_000,
      unknownKeyLookupsPerSecond: 50,
      unknownKeyLookupsPerAddressPerSecond: 10,
    });
    expect(config.sessions).toEqual({ max: 10_000, maxPerKey: 1_000, idleMs: 30 * 60_000 });
    expect(config.breaker).toEqual({ failureThreshold: 3, cooldownMs: 500, maxCooldownMs: 5_000 });
    expect(config.controlPlaneIdleProbeMs).toBe(10_000);
    expect(config.progressive.stateMaxBytes).toBe(64 * 1024 * 1024);
  });

  it('reads the memory and breaker bounds, and refuses values out of range', () => {
    const ok = { INTERNAL_TOKEN: 'x'.repeat(16) };
    const config = loadGatewayConfig({
      ...ok,
      GATEWAY_MAX_SESSIONS: '3',
      GATEWAY_MAX_SESSIONS_PER_KEY: '2',
      GATEWAY_SESSION_IDLE_MS: '1000',
      CONFIG_CACHE_MAX_BYTES: String(2 * 1024 * 1024),
      UNKNOWN_KEY_LOOKUPS_PER_SECOND: '0',
      BREAKER_FAILURE_THRESHOLD: '1',
      BREAKER_COOLDOWN_MS: '8000',
    });
    expect(config.sessions).toEqual({ max: 3, maxPerKey: 2, idleMs: 1_000 });
    expect(config.cache).toMatchObject({ maxBytes: 2 * 1024 * 1024, unknownKeyLookupsPerSecond: 0 });
    // The ceiling follows a cool-down set above its default.
    expect(config.breaker).toEqual({ failureThreshold: 1, cooldownMs: 8_000, maxCooldownMs: 8_000 });
    for (const [name, value] of [
      ['GATEWAY_MAX_SESSIONS', '0'],
      ['GATEWAY_MAX_SESSIONS_PER_KEY', 'many'],
      ['GATEWAY_SESSION_IDLE_MS', '10'],
      ['CONFIG_CACHE_MAX_BYTES', '1000'],
      ['CATALOG_SESSION_MAX_BYTES', '-1'],
      ['UNKNOWN_KEY_LOOKUPS_PER_SECOND', '1.5'],
      ['UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND', '-1'],
      ['BREAKER_FAILURE_THRESHOLD', '0'],
      ['BREAKER_MAX_COOLDOWN_MS', '100'],
      ['CONTROL_PLANE_IDLE_PROBE_MS', '0'],
    ] as const) {
      expect(() => loadGatewayConfig({ ...ok, [name]: value }), name).toThrow(new RegExp(name));
    }
  });

  it('refuses a missing internal token, bad numbers and bad URLs, naming the setting', () => {
    expect(() => loadGatewayConfig({})).toThrow(/INTERNAL_TOKEN/);
    expect(() => loadGatewayConfig({ INTERNAL_TOKEN: 'short' })).toThrow(
      /INTERNAL_TOKEN must be at least 16/,
    );
    const ok = { INTERNAL_TOKEN: 'x'.repeat(16) };
    expect(() => loadGatewayConfig({ ...ok, GATEWAY_PORT: 'http' })).toThrow(/GATEWAY_PORT/);
    expect(() => loadGatewayConfig({ ...ok, CONTROL_PLANE_URL: 'ftp://x' })).toThrow(/CONTROL_PLANE_URL/);
    expect(() => loadGatewayConfig({ ...ok, OPS_TOKEN: 'short' })).toThrow(/OPS_TOKEN/);
  });

  it('derives CONTROL_PLANE_URL from PORT and a specific HOST when it is unset', () => {
    const ok = { INTERNAL_TOKEN: 'x'.repeat(16) };
    expect(loadGatewayConfig({ ...ok, PORT: '4800' }).controlPlaneUrl).toBe('http://127.0.0.1:4800');
    expect(loadGatewayConfig({ ...ok, PORT: '4800', HOST: '0.0.0.0' }).controlPlaneUrl).toBe(
      'http://127.0.0.1:4800',
    );
    expect(loadGatewayConfig({ ...ok, HOST: '::' }).controlPlaneUrl).toBe('http://127.0.0.1:4000');
    expect(loadGatewayConfig({ ...ok, HOST: '10.1.2.3', PORT: '4800' }).controlPlaneUrl).toBe(
      'http://10.1.2.3:4800',
    );
    expect(loadGatewayConfig({ ...ok, HOST: '::1' }).controlPlaneUrl).toBe('http://[::1]:4000');
    expect(
      loadGatewayConfig({ ...ok, PORT: '4800', CONTROL_PLANE_URL: 'http://cp.internal:9000/' })
        .controlPlaneUrl,
    ).toBe('http://cp.internal:9000');
  });

  it('reports every bad value at once, and the breaker ceiling below its cool-down', () => {
    expect(() => loadGatewayConfig({ GATEWAY_PORT: 'http', RATE_LIMIT_BURST: '0' })).toThrow(
      [
        '3 settings are invalid:',
        '  - GATEWAY_PORT must be an integer from 0 to 65535, got "http"',
        '  - INTERNAL_TOKEN must be set: it is how the gateway reaches the control plane',
        '  - RATE_LIMIT_BURST must be an integer from 1 to 10000000, got "0"',
      ].join('\n'),
    );
    expect(() =>
      loadGatewayConfig({
        INTERNAL_TOKEN: 'x'.repeat(16),
        BREAKER_COOLDOWN_MS: '800',
        BREAKER_MAX_COOLDOWN_MS: '600',
      }),
    ).toThrow('BREAKER_MAX_COOLDOWN_MS (600) must not be smaller than BREAKER_COOLDOWN_MS (800)');
  });

  it('adds configured hosts and origins', () => {
    const config = loadGatewayConfig({
      INTERNAL_TOKEN: 'x'.repeat(16),
      GATEWAY_ALLOWED_HOSTS: 'mcp.example.com, gw.internal',
      GATEWAY_ALLOWED_ORIGINS: 'https://app.example.com',
    });
    expect(config.allowedHosts).toContain('mcp.example.com');
    expect(config.allowedHosts).toContain('gw.internal');
    expect(config.allowedOrigins).toEqual(['https://app.example.com']);
  });
});

describe('checkOrigin', () => {
  const policy = {
    allowedHosts: ['localhost', '127.0.0.1', '::1'],
    allowedOrigins: ['https://app.example.com'],
  };

  it('passes local hosts with or without a local Origin', () => {
    expect(checkOrigin(policy, '127.0.0.1:4100', undefined)).toBeUndefined();
    expect(checkOrigin(policy, 'localhost:4100', 'http://localhost:6274')).toBeUndefined();
    expect(checkOrigin(policy, '[::1]:4100', 'http://[::1]:3000')).toBeUndefined();
    expect(checkOrigin(policy, 'localhost', 'https://app.example.com')).toBeUndefined();
  });

  it('refuses foreign hosts and origins, and a missing Host', () => {
    expect(checkOrigin(policy, 'evil.example:4100', undefined)).toMatch(/host "evil.example:4100"/);
    expect(checkOrigin(policy, 'localhost:4100', 'http://evil.example')).toMatch(
      /origin "http:\/\/evil.example"/,
    );
    expect(checkOrigin(policy, 'localhost:4100', 'null')).toMatch(/not a URL/);
    expect(checkOrigin(policy, undefined, undefined)).toMatch(/host/);
  });

  it('"*" opens hosts, not origins', () => {
    const open = { allowedHosts: ['*'], allowedOrigins: [] };
    expect(checkOrigin(open, 'anything.example', undefined)).toBeUndefined();
    expect(checkOrigin(open, 'anything.example', 'http://anything.example')).toMatch(/origin/);
  });
});

describe('closeMatches', () => {
  const names = ['find_customers', 'peek_orders', 'query_k3f9a2', 'create_customer'];

  it('suggests near names, closest first', () => {
    expect(closeMatches('find_customer', names)).toEqual(['find_customers']);
    expect(closeMatches('customer', names)).toEqual(['create_customer', 'find_customers']);
    expect(closeMatches('query_k3f9a3', names)).toEqual(['query_k3f9a2']);
  });

  it('suggests nothing for an unrelated name', () => {
    expect(closeMatches('delete_everything', names)).toEqual([]);
  });
});

describe('RateLimiter', () => {
  it('allows the burst, then refills at the sustained rate', () => {
    const limiter = new RateLimiter(2, 3);
    const t0 = 1_000_000;
    expect([limiter.take('k', t0), limiter.take('k', t0), limiter.take('k', t0)]).toEqual([0, 0, 0]);
    expect(limiter.take('k', t0)).toBe(1);
    expect(limiter.take('k', t0 + 500)).toBe(0);
    expect(limiter.take('other', t0)).toBe(0);
  });

  it('is off at 0 per second', () => {
    const limiter = new RateLimiter(0, 1);
    for (let i = 0; i < 100; i++) expect(limiter.take('k')).toBe(0);
  });

  it('charges after the fact into debt (at most one burst), which refills repay before anything passes', () => {
    const limiter = new RateLimiter(2, 3);
    const t0 = 1_000_000;
    expect(limiter.wait('k', t0)).toBe(0);
    expect(limiter.wait('k', t0)).toBe(0); // waiting takes nothing
    for (let i = 0; i < 10; i++) limiter.charge('k', t0);
    // -3 at most: 4 tokens short of one, 2 a second.
    expect(limiter.wait('k', t0)).toBe(2);
    expect(limiter.take('k', t0 + 1_000)).toBe(1);
    expect(limiter.available('k', t0 + 2_000)).toBe(true);
  });
});

describe('lazyChildLogger', () => {
  function parentLogger(level: string) {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const app = Fastify({ logger: { level, stream } });
    return { log: app.log, lines };
  }

  it('logs through a child with the request bindings, built on first use only', async () => {
    const { log, lines } = parentLogger('info');
    let children = 0;
    const counting = Object.create(log, {
      child: { value: (...args: Parameters<typeof log.child>) => (children++, log.child(...args)) },
    }) as typeof log;
    const lazy = lazyChildLogger(counting, { reqId: 'req-7' }, {});
    lazy.debug('below the level');
    expect(children).toBe(0);
    expect(lazy.level).toBe('info');
    lazy.warn({ tool: 'q' }, 'tool call failed upstream');
    lazy.info('second');
    await new Promise((resolve) => setImmediate(resolve));
    expect(children).toBe(1);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      reqId: 'req-7',
      tool: 'q',
      msg: 'tool call failed upstream',
      level: 40,
    });
    expect(lines[1]).toMatchObject({ reqId: 'req-7', msg: 'second' });
  });

  it('honours a level set on it, and makes grandchildren with both bindings', async () => {
    const { log, lines } = parentLogger('info');
    const lazy = lazyChildLogger(log, { reqId: 'req-8' }, {});
    lazy.level = 'debug';
    lazy.debug('now visible');
    lazy.child({ session: 's1' }).info('from a grandchild');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => l.msg)).toEqual(['now visible', 'from a grandchild']);
    expect(lines[1]).toMatchObject({ reqId: 'req-8', session: 's1' });
  });
});
