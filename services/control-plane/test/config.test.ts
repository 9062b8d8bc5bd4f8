// Pins the control plane's settings: defaults for an empty environment and a clear error for each
// bad value.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';

describe('loadConfig', () => {
  it('has working defaults: port 4000, embedded database in .bindery', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 4000,
      databaseUrl: undefined,
      adminToken: undefined,
    });
    expect(config.dataDir.endsWith('.bindery')).toBe(true);
    expect(config).toMatchObject({
      gatewayUrls: [],
      opsToken: undefined,
      redisUrl: undefined,
      gatewayPublicUrl: 'http://127.0.0.1:4100',
      seedDemo: undefined,
    });
  });

  it('reads every setting', () => {
    const config = loadConfig({
      PORT: '4001',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgresql://x@y/z',
      BINDERY_DATA_DIR: '/tmp/b',
      BINDERY_ADMIN_TOKEN: 'a-long-enough-token',
      BODY_LIMIT_BYTES: '2048',
    });
    expect(config).toMatchObject({
      port: 4001,
      host: '0.0.0.0',
      databaseUrl: 'postgresql://x@y/z',
      dataDir: '/tmp/b',
      adminToken: 'a-long-enough-token',
      bodyLimitBytes: 2048,
    });
  });

  it('refuses bad values, naming the setting', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT/);
    expect(() => loadConfig({ BODY_LIMIT_BYTES: 'lots' })).toThrow(/BODY_LIMIT_BYTES/);
    expect(() => loadConfig({ BINDERY_ADMIN_TOKEN: 'short' })).toThrow(/at least 16/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 16/);
  });

  it('reports every bad value at once, a secret only by its length', () => {
    let message = '';
    try {
      loadConfig({
        PORT: 'eighty',
        OPS_TOKEN: 'too-short',
        LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://u:pw@h/d',
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      '4 settings are invalid:',
      '  - PORT must be an integer from 0 to 65535, got "eighty"',
      '  - DATABASE_URL must be a postgres:// or postgresql:// URL, got (secret, 16 characters)',
      '  - LOG_LEVEL must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent", got "loud"',
      '  - OPS_TOKEN must be at least 16 characters long, got (secret, 9 characters)',
    ]);
  });

  it('derives GATEWAY_PUBLIC_URL from GATEWAY_PORT and a specific GATEWAY_HOST', () => {
    expect(loadConfig({ GATEWAY_PORT: '4900' }).gatewayPublicUrl).toBe('http://127.0.0.1:4900');
    expect(loadConfig({ GATEWAY_PORT: '4900', GATEWAY_HOST: '0.0.0.0' }).gatewayPublicUrl).toBe(
      'http://127.0.0.1:4900',
    );
    expect(loadConfig({ GATEWAY_HOST: '::1' }).gatewayPublicUrl).toBe('http://[::1]:4100');
    expect(
      loadConfig({ GATEWAY_PORT: '4900', GATEWAY_PUBLIC_URL: 'https://mcp.example' }).gatewayPublicUrl,
    ).toBe('https://mcp.example');
    expect(() => loadConfig({ GATEWAY_PORT: 'x' })).toThrow(
      'GATEWAY_PORT must be an integer from 0 to 65535, got "x"',
    );
  });

  it('reads METRICS_TOKEN, unset by default (/metrics open)', () => {
    expect(loadConfig({}).metricsToken).toBeUndefined();
    expect(loadConfig({ METRICS_TOKEN: 'a-metrics-token-0001' }).metricsToken).toBe('a-metrics-token-0001');
  });
});

describe('invalidation and demo settings', () => {
  const OPS_TOKEN = 'an-ops-token-long-enough';

  it('reads the gateways to tell, trimmed, without trailing slashes, each once', () => {
    const config = loadConfig({
      GATEWAY_URLS: ' http://10.0.0.1:4100/ , https://gw.example/bindery/,http://10.0.0.1:4100,',
      OPS_TOKEN,
      REDIS_URL: 'redis://:secret@127.0.0.1:6379/0',
      GATEWAY_PUBLIC_URL: 'https://mcp.example/',
      BINDERY_SEED_DEMO: 'false',
    });
    expect(config).toMatchObject({
      gatewayUrls: ['http://10.0.0.1:4100', 'https://gw.example/bindery'],
      opsToken: OPS_TOKEN,
      redisUrl: 'redis://:secret@127.0.0.1:6379/0',
      gatewayPublicUrl: 'https://mcp.example',
      seedDemo: false,
    });
    expect(loadConfig({ BINDERY_SEED_DEMO: 'true' }).seedDemo).toBe(true);
  });

  it('refuses GATEWAY_URLS without OPS_TOKEN, saying why', () => {
    expect(() => loadConfig({ GATEWAY_URLS: 'http://127.0.0.1:4100' })).toThrow(
      /OPS_TOKEN must be set when GATEWAY_URLS is/,
    );
  });

  it('refuses a short OPS_TOKEN even without gateways', () => {
    expect(() => loadConfig({ OPS_TOKEN: 'short' })).toThrow('OPS_TOKEN must be at least 16 characters long');
  });

  it('refuses a gateway URL that is not a plain http(s) base URL, naming it', () => {
    expect(() => loadConfig({ GATEWAY_URLS: 'gw1:4100', OPS_TOKEN })).toThrow(
      'GATEWAY_URLS must be an http(s) URL, got "gw1:4100"',
    );
    expect(() => loadConfig({ GATEWAY_URLS: 'http://ok:1, not a url', OPS_TOKEN })).toThrow(/"not a url"/);
    expect(() => loadConfig({ GATEWAY_URLS: 'http://gw:4100/?x=1', OPS_TOKEN })).toThrow(/without query/);
    expect(() => loadConfig({ GATEWAY_PUBLIC_URL: 'ftp://gw' })).toThrow(
      /GATEWAY_PUBLIC_URL must be an http/,
    );
  });

  it('refuses a REDIS_URL that is not redis:// without echoing it (it may hold a password)', () => {
    let message = '';
    try {
      loadConfig({ REDIS_URL: 'http://user:hunter2@cache:6379' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe('REDIS_URL must be a redis:// or rediss:// URL, got (secret, 30 characters)');
    expect(message).not.toContain('hunter2');
    expect(loadConfig({ REDIS_URL: 'rediss://cache.example:6380' }).redisUrl).toBe(
      'rediss://cache.example:6380',
    );
  });

  it('refuses a BINDERY_SEED_DEMO that is not true or false', () => {
    expect(() => loadConfig({ BINDERY_SEED_DEMO: 'yes' })).toThrow(
      'BINDERY_SEED_DEMO must be "true" or "false", got "yes"',
    );
  });
});

describe('query settings', () => {
  it('defaults: 1 s per query, a 10 ms in-process slice, 2 workers of 256 MiB, 8 waiting, 2 per tenant', () => {
    expect(loadConfig({})).toMatchObject({
      queryTimeoutMs: 1_000,
      queryInlineMs: 10,
      queryWorkers: 2,
      queryQueue: 8,
      queryTenantEscalations: 2,
      queryWorkerMemoryMb: 256,
    });
  });

  it('reads each, and refuses values out of bounds naming the setting', () => {
    expect(
      loadConfig({
        QUERY_TIMEOUT_MS: '2500',
        QUERY_INLINE_MS: '0',
        QUERY_WORKERS: '4',
        QUERY_QUEUE: '0',
        QUERY_TENANT_ESCALATIONS: '1',
        QUERY_WORKER_MEMORY_MB: '512',
      }),
    ).toMatchObject({
      queryTimeoutMs: 2_500,
      queryInlineMs: 0,
      queryWorkers: 4,
      queryQueue: 0,
      queryTenantEscalations: 1,
      queryWorkerMemoryMb: 512,
    });
    expect(() => loadConfig({ QUERY_TIMEOUT_MS: '5' })).toThrow(/QUERY_TIMEOUT_MS/);
    expect(() => loadConfig({ QUERY_WORKERS: '0' })).toThrow(/QUERY_WORKERS/);
    expect(() => loadConfig({ QUERY_WORKER_MEMORY_MB: '8' })).toThrow(/QUERY_WORKER_MEMORY_MB/);
    expect(() => loadConfig({ QUERY_QUEUE: '-1' })).toThrow(/QUERY_QUEUE/);
    expect(() => loadConfig({ QUERY_TENANT_ESCALATIONS: '0' })).toThrow(/QUERY_TENANT_ESCALATIONS/);
    expect(() => loadConfig({ QUERY_INLINE_MS: '50', QUERY_TIMEOUT_MS: '20' })).toThrow(
      /QUERY_INLINE_MS \(50\) must not be larger than QUERY_TIMEOUT_MS \(20\)/,
    );
  });
});
