/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`) against a Bindery
 * exposure made of the suite's fixtures, for each protocol revision the gateway serves:
 *
 *   pnpm conformance                 (both revisions; `-- --requirements 2026-07-28` for one)
 *
 * It starts a control plane (PostgreSQL, or `BINDERY_TEST_DB=pglite`) and a gateway as the tests
 * do, builds the exposure through the admin API (the suite's tools as custom tools, its resources
 * and prompts from an attached upstream server, `fixture-server.mjs`; the tasks extension's tools
 * from a modern server that makes tasks, the tests' `tasks-server.mjs`), and runs the suite's
 * `server` command against the exposure's MCP URL, then its `authorization` scenarios against the
 * control plane's authorization server (`authorization.ts`, a headless Chromium consenting), then
 * its client `auth` scenarios with the control plane as the OAuth client of the suite's upstreams
 * (`upstream-auth.ts`). The suite needs Node 22: it and its Node are installed from npm into
 * `.conformance/` on first use (pinned in `suite.ts`). Each scenario's checks are written to
 * `.conformance/results/`; the summary lists every scenario with its outcome. Scenarios named in
 * `expected-failures.<revision>.yml` (`expected-failures.client-auth.yml` for the client auth
 * scenarios) are known gaps, each with the work that closes it; anything else failing fails the
 * run, and so does a listed scenario that passes.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from '@bindery/test-support';
import { runAuthorizationScenarios } from './authorization.ts';
import { CUSTOM_TOOLS, PROMPTS, triggerTool } from './fixtures.ts';
import { HERE, installSuite, suiteEnv, TOOLS_DIR } from './suite.ts';
import { runUpstreamAuthScenarios, UPSTREAM_AUTH_ENV } from './upstream-auth.ts';

const REVISIONS = ['2025-11-25', '2026-07-28'];

const requested = process.argv.indexOf('--requirements');
const revisions = requested === -1 ? REVISIONS : [process.argv[requested + 1] ?? ''];
for (const revision of revisions) {
  if (!REVISIONS.includes(revision)) {
    console.error(`--requirements: one of ${REVISIONS.join(', ')}, not ${JSON.stringify(revision)}`);
    process.exit(2);
  }
}
const suite = installSuite();
const { node, cli } = suite;

const stack = await startStack({
  controlPlaneEnv: {
    // The change triggers are custom tools that call the admin API (ctx.fetch, a secret token);
    // the client auth scenarios' upstreams and authorization servers listen on loopback.
    ...UPSTREAM_AUTH_ENV,
    UPSTREAM_STDIO_COMMANDS: 'node',
  },
  gatewayEnv: { RATE_LIMIT_PER_SECOND: '0' },
  purpose: 'conformance',
});
let failed = false;
try {
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'conformance' })).token as string;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const aei = await as('POST', '/api/v2/aeis', { name: 'conformance' });
  const adis = [];
  for (const fixture of CUSTOM_TOOLS) adis.push(await as('POST', '/api/v2/adis', fixture));
  const bindings = await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
  const prompts = [];
  for (const prompt of PROMPTS) prompts.push(await as('POST', `/api/v2/aeis/${aei.id}/prompts`, prompt));
  // The stateless scenario changes the tool and prompt lists through two tools of the exposure,
  // which edit a description through the admin API, as the exposure's owner.
  await as('POST', '/api/v2/secrets', { name: 'conformance_admin', value: token });
  const base = `${stack.controlPlaneUrl}/api/v2/aeis/${String(aei.id)}`;
  const firstBinding =
    (bindings as unknown as { items?: { id: string }[] }).items?.[0] ??
    (bindings as unknown as { id: string }[])[0];
  const triggers = [
    triggerTool(
      'test_trigger_tool_change',
      `${base}/bindings/${firstBinding!.id}`,
      'tool_description',
      stack.controlPlaneUrl,
    ),
    triggerTool(
      'test_trigger_prompt_change',
      `${base}/prompts/${String(prompts[0]!.id)}`,
      'description',
      stack.controlPlaneUrl,
    ),
  ];
  const triggerAdis = [];
  for (const trigger of triggers) triggerAdis.push(await as('POST', '/api/v2/adis', trigger));
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    triggerAdis.map((adi) => ({ adi_id: adi.id })),
  );
  const upstream = await as('POST', '/api/v2/upstream-servers', {
    name: 'fixtures',
    transport: 'stdio',
    command: 'node',
    args: [join(HERE, 'fixture-server.mjs')],
    // Its resources and prompts are wanted, not its tool.
    expose_tools: ['no-tool'],
  });
  if (upstream.status !== 'ok')
    throw new Error(`the fixture server did not sync: ${String(upstream.last_error)}`);
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, {
    upstream_server_id: upstream.id,
    // No prefix: the suite asks for its prompts by their own names.
    prefix: '',
  });
  // The prompt that asks for input comes from a server of the modern era (its MRTR is relayed).
  const modern = await as('POST', '/api/v2/upstream-servers', {
    name: 'modern fixtures',
    transport: 'stdio',
    command: 'node',
    args: [join(HERE, 'fixture-modern-server.mjs')],
  });
  if (modern.status !== 'ok')
    throw new Error(`the modern fixture server did not sync: ${String(modern.last_error)}`);
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { upstream_server_id: modern.id, prefix: '' });
  // The tasks extension's tools (greet, slow_compute, failing_job...) come from a modern server
  // that makes tasks: Bindery relays them under handles of its own (decision 071).
  const tasks = await as('POST', '/api/v2/upstream-servers', {
    name: 'tasks fixtures',
    transport: 'stdio',
    command: 'node',
    args: [join(HERE, '../services/control-plane/test/support/upstream/tasks-server.mjs')],
  });
  if (tasks.status !== 'ok')
    throw new Error(`the tasks fixture server did not sync: ${String(tasks.last_error)}`);
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { upstream_server_id: tasks.id, prefix: '' });
  const url = `${stack.gatewayUrl}/api/v2/mcp/server/${String(aei.api_key)}`;

  for (const revision of revisions) {
    const expected = join(HERE, `expected-failures.${revision}.yml`);
    console.log(`\nconformance: server scenarios required by ${revision}`);
    const run = spawnSync(
      node,
      [
        cli,
        'server',
        '--url',
        url,
        '--requirements',
        revision,
        '-o',
        join(TOOLS_DIR, 'results', revision),
        ...(existsSync(expected) ? ['--expected-failures', expected] : []),
      ],
      { stdio: 'inherit', cwd: TOOLS_DIR, env: suiteEnv(suite) },
    );
    if (run.status !== 0) failed = true;
  }
  // The authorization server: the exposure's owner signs in (a headless Chromium) and consents.
  const password = randomBytes(18).toString('base64url');
  await as('PUT', '/api/v2/me/password', { password });
  const passed = await runAuthorizationScenarios(
    { node, cli, dir: TOOLS_DIR },
    {
      issuer: stack.controlPlaneUrl,
      resource: `${stack.gatewayUrl}/api/v2/mcp/aei/${String(aei.id)}`,
      person: { name: 'conformance', password },
    },
  );
  if (!passed) failed = true;
  // The client auth scenarios: the control plane as the OAuth client of the suite's upstreams.
  const upstreamAuth = await runUpstreamAuthScenarios(suite, {
    controlPlaneUrl: stack.controlPlaneUrl,
    gatewayUrl: stack.gatewayUrl,
    token,
  });
  if (!upstreamAuth) failed = true;
} finally {
  await stack.close();
}
process.exit(failed ? 1 : 0);
