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
  });
});
