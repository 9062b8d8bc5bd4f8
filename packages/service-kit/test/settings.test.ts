// Pins the settings helper both services parse their environment with: typo warnings for unknown
// variables that look like settings, the derived local URLs, and docs/configuration.md staying what
// the schemas say (regenerate with `pnpm docs:settings`).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, configurationDocText } from '../scripts/configuration-doc.ts';
import { localUrl, unknownSettingWarnings } from '../src/settings/index.ts';

describe('unknownSettingWarnings', () => {
  it('names the closest setting for a near miss or an unknown name with a settings prefix', () => {
    expect(
      unknownSettingWarnings({
        GATEWAY_PROT: '4900',
        RATE_LIMT_PER_SECOND: '0',
        QUERY_TIMEOUT: '5000',
        BINDERY_ADMIN_TOKN: 'x',
        LOG_LEVL: 'debug',
      }),
    ).toEqual([
      'unknown setting BINDERY_ADMIN_TOKN is ignored: did you mean BINDERY_ADMIN_TOKEN?',
      'unknown setting GATEWAY_PROT is ignored: did you mean GATEWAY_PORT?',
      'unknown setting LOG_LEVL is ignored: did you mean LOG_LEVEL?',
      'unknown setting QUERY_TIMEOUT is ignored: did you mean QUERY_TIMEOUT_MS?',
      'unknown setting RATE_LIMT_PER_SECOND is ignored: did you mean RATE_LIMIT_PER_SECOND?',
    ]);
  });

  it('stays quiet for known settings, the usual environment, the test suites’ and the client entries’ variables', () => {
    expect(
      unknownSettingWarnings({
        PORT: '1',
        GATEWAY_PORT: '2',
        HOME: '/home/u',
        PATH: '/bin',
        PWD: '/',
        PGHOST: 'db',
        PGPORT: '5432',
        NODE_ENV: 'test',
        TEST_DATABASE_URL: 'postgresql://x',
        BINDERY_TEST_DB: 'pglite',
        BINDERY_URL: 'http://127.0.0.1:4100',
        BINDERY_CONTROL_PLANE_URL: 'http://127.0.0.1:4000',
        BINDERY_SIDEBAR_SESSION: 'sbs_1',
        BINDERY_SIDEBAR_TOKEN: 'bnd_sidebar_x',
        BINDERY_SIDEBAR_WAIT_MS: '60000',
        npm_config_user_agent: 'pnpm',
      }),
    ).toEqual([]);
  });
});

describe('localUrl', () => {
  it('is the listener’s own address, or 127.0.0.1 when it binds every address', () => {
    expect(localUrl(undefined, 4000)).toBe('http://127.0.0.1:4000');
    expect(localUrl('0.0.0.0', 4800)).toBe('http://127.0.0.1:4800');
    expect(localUrl('::', 4800)).toBe('http://127.0.0.1:4800');
    expect(localUrl('localhost', 4800)).toBe('http://localhost:4800');
    expect(localUrl('::1', 4800)).toBe('http://[::1]:4800');
  });
});

describe('docs/configuration.md', () => {
  it('is what the schemas say (run `pnpm docs:settings` after changing a setting)', async () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8')).toBe(await configurationDocText());
  });
});
