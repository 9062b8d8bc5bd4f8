/**
 * Custom tool write attack benchmark (issue: hardening, round 2).
 *   pnpm --filter @bindery/bench bench:custom-tool-writes [-- --engine pglite]
 * Starts the real control plane on a fresh database. One user (the attacker) owns a custom tool with
 * a writable context whose code runs 16 concurrent loops of `await ctx.context.write('update', ...)`
 * until a write fails or its time runs out; another user (the victim) owns a cheap context `query`
 * tool on a table of its own. The victim's calls (POST /internal/adi/{id}/execute, one at a time)
 * and `GET /healthz` are timed on the idle control plane (the in-run reference), then while 8 attack
 * calls are kept running. Prints p50/p95 of each, the ratio of the p50 under attack to the idle p50
 * (target: at most 2x), the writes committed meanwhile and the control plane's CPU per write
 * beyond what the idle phase used, and how the attack calls ended. Environment: BENCH_SAMPLES
 * (victim calls per phase, default 300), BENCH_ATTACKERS (8), BENCH_LOOPS (write loops per call, 16),
 * BENCH_WRITES_PER_SECOND (the control plane's CUSTOM_TOOL_WRITES_PER_SECOND; its default otherwise).
 */
import { parseArgs } from 'node:util';
import { ADMIN_TOKEN, INTERNAL_TOKEN, startControlPlane } from './support/control-plane.ts';
import { benchArgs } from './support/args.ts';
import { cpuMs, ms, percentile } from './support/stats.ts';

const { values } = parseArgs({
  args: benchArgs(),
  options: { engine: { type: 'string', default: 'postgres' } },
});
const engine = values.engine === 'pglite' ? 'pglite' : 'postgres';
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 8);
const LOOPS = Number(process.env.BENCH_LOOPS ?? 16);
const TARGET_RATIO = 2;

const PACE = process.env.BENCH_WRITES_PER_SECOND;

const cp = await startControlPlane(engine, PACE ? { CUSTOM_TOOL_WRITES_PER_SECOND: PACE } : {});

async function api(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${cp.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A table, one ADI on it and an AEI binding it, owned by the user of `token`. */
async function tool(token: string, table: unknown, adi: Record<string, unknown>) {
  const created = await api('POST', '/api/v2/tables', token, { name: 'bench', data: table });
  const made = await api('POST', '/api/v2/adis', token, {
    ...adi,
    ...('kind' in adi
      ? { context: { table_id: created.id, json_path: '', write: true } }
      : { table_id: created.id }),
  });
  const aei = await api('POST', '/api/v2/aeis', token, { name: 'bench' });
  const binding = await api('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, token, { adi_id: made.id });
  return {
    tableId: String(created.id),
    call: async (args: Record<string, unknown>) =>
      (await api('POST', `/internal/adi/${String(made.id)}/execute`, INTERNAL_TOKEN, {
        aei_id: aei.id,
        binding_id: binding.id,
        arguments: args,
      })) as { isError?: boolean; content?: { text: string }[] },
  };
}

// Each loop updates its own slot with a small value until a write is refused or the time runs out.
const ATTACK = `export default async (args, ctx) => {
  let writes = 0;
  const loop = async (k) => {
    for (let i = 0; ; i++) {
      await ctx.context.write('update', { path: '/slots/' + k, value: { i, at: 'x'.repeat(64) } });
      writes++;
    }
  };
  try {
    await Promise.all(Array.from({ length: ${LOOPS} }, (_, k) => loop(k)));
  } catch (error) {
    return { writes, error: String(error && error.code || error) };
  }
}`;

try {
  const victim = await api('POST', '/api/v2/users', ADMIN_TOKEN, { name: 'victim' });
  const attacker = await api('POST', '/api/v2/users', ADMIN_TOKEN, { name: 'attacker' });
  const cheap = await tool(
    String(victim.token),
    { items: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
    { json_path: '/items', operation_type: 'query' },
  );
  const attack = await tool(
    String(attacker.token),
    { slots: Array.from({ length: LOOPS }, () => ({ i: 0 })) },
    { kind: 'custom', name: 'writer', code: ATTACK, input_schema: { type: 'object' } },
  );
  const cheapCall = async () => {
    const answer = await cheap.call({ query: '[?id < `3`].name' });
    if (answer.isError) throw new Error(`the victim's call failed: ${JSON.stringify(answer.content)}`);
  };
  const health = async () => {
    const res = await fetch(`${cp.url}/healthz`);
    await res.arrayBuffer();
  };
  const timed = async (samples: number) => {
    const out = { cheap: [] as number[], health: [] as number[] };
    for (let i = 0; i < samples; i++) {
      let t0 = performance.now();
      await cheapCall();
      out.cheap.push(performance.now() - t0);
      t0 = performance.now();
      await health();
      out.health.push(performance.now() - t0);
    }
    return out;
  };
  const version = async () =>
    Number((await api('GET', `/api/v2/tables/${attack.tableId}`, String(attacker.token))).version);
  // Warm: JIT, pools, caches, both sandbox threads.
  for (let i = 0; i < 100; i++) await cheapCall();
  await Promise.all([attack.call({}), attack.call({})]);
  const idleCpu0 = cpuMs(cp.pid);
  const idle = await timed(SAMPLES);
  const idleCpu = cpuMs(cp.pid) - idleCpu0;

  const outcomes: Record<string, number> = {};
  let attacking = true;
  const attackLoop = async () => {
    while (attacking) {
      const answer = await attack.call({});
      const text = answer.content?.[0]?.text ?? '{}';
      const value = JSON.parse(text) as { error?: { code?: string } | string };
      const code = answer.isError
        ? ((typeof value.error === 'object' ? value.error.code : undefined) ?? 'error')
        : `ok (${typeof value.error === 'string' ? value.error : 'returned'})`;
      outcomes[code ?? 'error'] = (outcomes[code ?? 'error'] ?? 0) + 1;
    }
  };
  const attackers = Array.from({ length: ATTACKERS }, attackLoop);
  // The attack reaches its steady state before the measurement starts.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const [v0, cpu0, t0] = [await version(), cpuMs(cp.pid), performance.now()];
  const attacked = await timed(SAMPLES);
  const [v1, cpu1, t1] = [await version(), cpuMs(cp.pid), performance.now()];
  attacking = false;
  await Promise.all(attackers);

  const p50 = (samples: number[]) =>
    percentile(
      [...samples].sort((a, b) => a - b),
      50,
    );
  const row = (label: string, samples: number[], reference?: number[]) => {
    const sorted = [...samples].sort((a, b) => a - b);
    const ratio = reference ? p50(samples) / p50(reference) : undefined;
    console.log(
      `  ${label.padEnd(34)} n=${String(sorted.length).padEnd(4)} p50 ${ms(p50(samples)).padStart(10)}  p95 ${ms(percentile(sorted, 95)).padStart(10)}` +
        (ratio === undefined
          ? ''
          : `  ${ratio.toFixed(2)}x idle (target <= ${TARGET_RATIO}x: ${ratio <= TARGET_RATIO ? 'met' : 'NOT met'})`),
    );
  };
  console.log(
    `custom tool write attack: ${ATTACKERS} calls kept running, each ${LOOPS} concurrent ctx.context.write loops (${engine}, writes per second per call: ${PACE ?? 'default'})`,
  );
  row("victim's query call, idle", idle.cheap);
  row('GET /healthz, idle', idle.health);
  row("victim's query call, under attack", attacked.cheap, idle.cheap);
  row('GET /healthz, under attack', attacked.health, idle.health);
  const writes = v1 - v0;
  const seconds = (t1 - t0) / 1000;
  // The victim's calls cost the same CPU in both phases: what is left over is the attack's.
  console.log(
    `  while measured: ${writes} writes committed (${(writes / seconds).toFixed(0)}/s), control plane CPU beyond the idle phase's ${((cpu1 - cpu0 - idleCpu) / writes).toFixed(2)} ms per write`,
  );
  console.log(`  attack calls ended: ${JSON.stringify(outcomes)}`);
} finally {
  await cp.stop();
}
