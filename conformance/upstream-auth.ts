/**
 * The suite's client auth scenarios (`conformance client --suite auth`) with Bindery as the OAuth
 * client of an upstream MCP server that requires OAuth (decision 079). For each scenario the suite
 * starts a mock resource server and authorization server and runs a command with the resource's
 * URL; the command (`upstream-auth-client.ts`) adds that URL to the control plane as an upstream
 * server with `auth: "oauth"`, connects it as a person would (the mock authorization server
 * consents at once), syncs its tools and calls `test-tool` through the gateway, connecting again
 * when the upstream asks for more scope. The suite judges what the control plane sent: discovery,
 * registration, PKCE, the resource indicator, the scopes and the client authentication (and, in
 * the scenarios 2026-07-28 adds, what it refused to send).
 *
 * Run from `run.ts` on its stack, or alone on a stack of its own:
 *
 *   pnpm -s build && pnpm --filter @bindery/conformance exec tsx upstream-auth.ts [suite options]
 *
 * Alone, options after the script select what runs instead (e.g. `--scenario auth/iss-wrong-issuer
 * --spec-version 2025-11-25 --force`, or `--suite auth --spec-version 2026-07-28`), judged without
 * the expected failures. Scenarios named in `expected-failures.client-auth.yml` are known gaps of
 * the auth suite, each with its reason; any other failure fails the run, and so does a listed
 * scenario that passes. The scenarios 2026-07-28 adds (LATER_SCENARIOS) must all pass.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '@bindery/test-support';
import { HERE, installSuite, suiteEnv, type Suite } from './suite.ts';

export interface UpstreamAuthTarget {
  controlPlaneUrl: string;
  gatewayUrl: string;
  /** An admin API token: the upstream servers, secrets and exposures the command makes are its user's. */
  token: string;
}

/** What the control plane needs to be the OAuth client of the suite's mocks (on loopback). */
export const UPSTREAM_AUTH_ENV = {
  // The upstream's tokens are sealed with the secrets' keyring.
  BINDERY_SECRET_KEY: randomBytes(32).toString('base64'),
  // The mocks listen on `localhost`: either loopback address.
  HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1/32,::1/128',
};

/**
 * The client auth scenarios the 2026-07-28 revision adds (the suite runs them only one by one, or
 * with its other scenarios of that revision, which are not about authorization): the protected
 * resource's `resource` checked, offline_access asked for only when offered, a new registration
 * when the resource names another authorization server, RFC 9207 `iss` and the RFC 8414 issuer
 * compared exactly. Each runs alone, all of them side by side, at their own revision.
 */
export const LATER_SCENARIOS = [
  'auth/resource-mismatch',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  'auth/authorization-server-migration',
  'auth/iss-supported',
  'auth/iss-not-advertised',
  'auth/iss-supported-missing',
  'auth/iss-wrong-issuer',
  'auth/iss-unexpected',
  'auth/iss-normalized',
  'auth/metadata-issuer-mismatch',
];

/**
 * Runs the scenarios against the control plane and the gateway of `target`: the auth suite and
 * LATER_SCENARIOS, all at once, or what `args` selects (e.g. `--scenario X`); true when all passed.
 */
export async function runUpstreamAuthScenarios(
  suite: Suite,
  target: UpstreamAuthTarget,
  args?: string[],
): Promise<boolean> {
  const expected = join(HERE, 'expected-failures.client-auth.yml');
  // The suite appends the upstream's URL to the command, split at spaces: no spaces in its parts.
  // The suite's Node runs the command's TypeScript as it is (its types stripped): fourteen of them
  // start at once, which a compiler per process would slow to seconds.
  const command = [
    suite.node,
    '--disable-warning=ExperimentalWarning',
    join(HERE, 'upstream-auth-client.ts'),
  ].join(' ');
  const run = (selection: string[], output: 'inherit' | 'pipe') =>
    new Promise<{ passed: boolean; text: string }>((resolve) => {
      const child = spawn(
        suite.node,
        [
          suite.cli,
          'client',
          '--command',
          command,
          ...selection,
          '-o',
          join(suite.dir, 'results', 'client-auth'),
        ],
        {
          cwd: suite.dir,
          stdio: ['ignore', output, output],
          env: suiteEnv(suite, {
            BINDERY_CONFORMANCE_CONTROL_PLANE: target.controlPlaneUrl,
            BINDERY_CONFORMANCE_GATEWAY: target.gatewayUrl,
            BINDERY_CONFORMANCE_TOKEN: target.token,
          }),
        },
      );
      let text = '';
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      child.on('close', (status) => resolve({ passed: status === 0, text }));
    });

  console.log('\nconformance: client auth scenarios (Bindery as the OAuth client of an upstream)');
  if (args) return (await run(args, 'inherit')).passed;
  const started = Date.now();
  // All at once: the suite's own scenarios already run side by side, these join them.
  const [whole, ...later] = await Promise.all([
    run(['--suite', 'auth', ...(existsSync(expected) ? ['--expected-failures', expected] : [])], 'pipe'),
    ...LATER_SCENARIOS.map((scenario) => run(['--scenario', scenario], 'pipe')),
  ]);
  console.log(whole!.text);
  console.log('conformance: client auth scenarios of 2026-07-28, each alone');
  LATER_SCENARIOS.forEach((scenario, i) => {
    const { passed, text } = later[i]!;
    console.log(`${passed ? '✓' : '✗'} ${scenario}`);
    // A failure shows the suite's account of it (its checks, the command's output).
    if (!passed) console.log(text);
  });
  console.log(`(client auth scenarios: ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return whole!.passed && later.every((r) => r.passed);
}

// Alone: a stack of its own.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const suite = installSuite();
  const stack = await startStack({
    controlPlaneEnv: UPSTREAM_AUTH_ENV,
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '0' },
    purpose: 'conformance',
  });
  let passed = false;
  try {
    const token = (await stack.admin('POST', '/api/v2/users', { name: 'conformance' })).token as string;
    const args = process.argv.slice(2);
    passed = await runUpstreamAuthScenarios(
      suite,
      { controlPlaneUrl: stack.controlPlaneUrl, gatewayUrl: stack.gatewayUrl, token },
      args.length > 0 ? args : undefined,
    );
  } finally {
    await stack.close();
  }
  process.exit(passed ? 0 : 1);
}
