/**
 * Gateway memory benchmark (issue: hardening, bounded gateway memory).
 *   pnpm --filter @bindery/bench bench:gateway-memory
 * Starts the real control plane (fresh PostgreSQL database) with BENCH_KEYS exposures of
 * BENCH_TOOLS tools each (one made through the admin API, the others copied from it in SQL with
 * keys of their own: through the API, 10,000 take about ten minutes here), then, for each of two gateway processes (one with caps above the load,
 * one with caps below it), prints the gateway's RSS and heap (after a full GC) idle, after it has
 * cached 1,000 / 5,000 / all keys' configs, and after 1,000 / 5,000 / BENCH_SESSIONS sessions,
 * each with the difference from the same gateway idle, and once more after 20 idle seconds.
 * Sessions are opened with a raw initialize each, spread over the keys (no GET stream: the figures
 * are the gateway's session objects). For the gateway with caps below the load it also prints the
 * bound its caps set on RSS (see `rssBound`) next to the highest RSS measured.
 * BENCH_RUNS=above|below runs one of the two gateways; BENCH_CAPPED_SESSIONS and
 * BENCH_CAPPED_CACHE_MB set the caps of the second (2,000 sessions and the default 128 MiB);
 * BENCH_DETAIL=1 adds V8's committed heap and external memory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  databaseUrl,
  spawnService,
  startControlPlane,
} from './support/control-plane.ts';
import { readMetrics } from '@bindery/test-support';

const GATEWAY_DIR = fileURLToPath(new URL('../services/gateway', import.meta.url));
const GC_PRELOAD = fileURLToPath(new URL('./support/gc-on-signal.mjs', import.meta.url));
const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000);
const TOOLS = Number(process.env.BENCH_TOOLS ?? 10);
const CONCURRENCY = 16;
const MiB = 1024 * 1024;

/**
 * The bound the caps set on the gateway's RSS (bench/README.md, docs/reference/gateway.md "Memory"): its RSS
 * idle plus twice what the caps let it keep, since V8's committed heap (and malloc's, for Buffers)
 * runs ahead of what is live (RSS grew by 1.04 to 2.1 times the heap in the runs measured):
 *   config cache     CONFIG_CACHE_MAX_BYTES (configs at twice their JSON, their tools/list pages)
 *   sessions         GATEWAY_MAX_SESSIONS x 48 KiB (measured: about 32 KB each, without a stream)
 *   progressive      CATALOG_SESSION_MAX_BYTES (session states, without Redis)
 *   fixed tables     64 MiB: rate-limit buckets (at most 100,000 in each of three limiters, per
 *                    key, per client address and for execute_apis, about 210 bytes each) and
 *                    the unknown-key LRU (10,000 entries)
 * Requests in flight hold their bodies on top (GATEWAY_BODY_LIMIT_BYTES each at most).
 */
const SESSION_BYTES = 48 * 1024;
const FIXED_TABLES_BYTES = 64 * MiB;
const RSS_FACTOR = 2;
const DEFAULT_CATALOG_BYTES = 64 * MiB;

function rssBound(idleRss: number, caps: { cacheBytes: number; sessions: number; catalogBytes: number }) {
  const kept = caps.cacheBytes + caps.sessions * SESSION_BYTES + caps.catalogBytes + FIXED_TABLES_BYTES;
  return { kept, bound: idleRss + RSS_FACTOR * kept };
}

const cp = await startControlPlane('postgres');

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${cp.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Runs `fn(i)` for i in [from, to) with CONCURRENCY at once. */
async function each(from: number, to: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < to) await fn(next++);
    }),
  );
}

/** Where to print: 1,000, 5,000, then every 10,000, and the total. */
const steps = (total: number) => {
  const at = [1_000, 5_000];
  for (let n = 10_000; n < total; n += 10_000) at.push(n);
  return [...new Set([...at.filter((n) => n < total), total])];
};

interface Sample {
  rss: number;
  heap: number;
  heapTotal: number;
  external: number;
  sessions: number;
  cached: number;
  cacheBytes: number;
}

async function sample(gateway: {
  url: string;
  child: import('node:child_process').ChildProcess;
}): Promise<Sample> {
  gateway.child.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 500));
  const metrics = await readMetrics(gateway.url);
  return {
    rss: metrics.value('gateway_process_resident_memory_bytes'),
    heap: metrics.value('gateway_nodejs_heap_size_used_bytes'),
    heapTotal: metrics.value('gateway_nodejs_heap_size_total_bytes'),
    external: metrics.value('gateway_nodejs_external_memory_bytes'),
    sessions: metrics.value('gateway_sessions'),
    cached: metrics.value('gateway_config_cache_entries'),
    cacheBytes: metrics.value('gateway_config_cache_bytes'),
  };
}

const mb = (bytes: number) => (bytes / MiB).toFixed(1).padStart(7);
const signed = (bytes: number) =>
  `${bytes >= 0 ? '+' : '-'}${(Math.abs(bytes) / MiB).toFixed(1)}`.padStart(8);

function row(label: string, s: Sample, idle: Sample) {
  console.log(
    `  ${label.padEnd(26)} sessions ${String(s.sessions).padStart(6)}  cached keys ${String(s.cached).padStart(6)}` +
      `  cache ${mb(s.cacheBytes)} MB  RSS ${mb(s.rss)} MB (${signed(s.rss - idle.rss)})` +
      `  heap ${mb(s.heap)} MB (${signed(s.heap - idle.heap)})` +
      (process.env.BENCH_DETAIL ? `  heap total ${mb(s.heapTotal)} MB  external ${mb(s.external)} MB` : ''),
  );
}

async function run(
  title: string,
  env: Record<string, string>,
  keys: string[],
  caps?: { cacheBytes: number; sessions: number; catalogBytes: number },
) {
  console.log(`\n${title}`);
  const gateway = await spawnService(
    GATEWAY_DIR,
    {
      GATEWAY_PORT: '0',
      CONTROL_PLANE_URL: cp.url,
      INTERNAL_TOKEN,
      RATE_LIMIT_PER_SECOND: '0',
      UNKNOWN_KEY_LOOKUPS_PER_SECOND: '0',
      UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND: '0',
      CONFIG_CACHE_MAX: '1000000',
      ...env,
    },
    ['--expose-gc', '--import', GC_PRELOAD],
    'dist/server.js',
  );
  try {
    // Wait for the gateway to reach the control plane.
    for (let i = 0; i < 200; i++) {
      const ready = (await (await fetch(`${gateway.url}/readyz`)).json()) as { status: string };
      if (ready.status === 'ready') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const post = (key: string, body: unknown) =>
      fetch(`${gateway.url}/api/v2/mcp/server/${key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(body),
      });
    const idle = await sample(gateway);
    row('idle (reference)', idle, idle);
    let highest = idle.rss;
    const measured = async (label: string) => {
      const s = await sample(gateway);
      highest = Math.max(highest, s.rss);
      row(label, s, idle);
    };

    let done = 0;
    for (const upTo of steps(keys.length)) {
      // A stateless tools/list per key: the gateway looks the key up and caches its config.
      await each(done, upTo, async (i) => {
        const res = await post(keys[i]!, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
        await res.text();
        if (res.status !== 200) throw new Error(`tools/list for key ${i}: ${res.status}`);
      });
      done = upTo;
      await measured(`${upTo} keys' configs`);
    }
    let opened = 0;
    for (const upTo of steps(SESSIONS)) {
      await each(opened, upTo, async (i) => {
        const res = await post(keys[i % keys.length]!, {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'mem', version: '1' },
          },
        });
        await res.text();
        if (res.status !== 200) throw new Error(`initialize ${i}: ${res.status}`);
      });
      opened = upTo;
      await measured(`+ ${upTo} sessions`);
    }
    // RSS runs ahead of the heap while sessions churn: V8 gives freed pages back once idle.
    await new Promise((r) => setTimeout(r, 20_000));
    await measured('20 s later, idle');
    if (caps) {
      const { kept, bound } = rssBound(idle.rss, caps);
      console.log(
        `  RSS bound for these caps: idle ${mb(idle.rss).trim()} MB + ${RSS_FACTOR} x ${mb(kept).trim()} MB ` +
          `(config cache ${mb(caps.cacheBytes).trim()} + ${caps.sessions} sessions x ${SESSION_BYTES / 1024} KiB ` +
          `+ progressive states ${mb(caps.catalogBytes).trim()} + fixed tables ${mb(FIXED_TABLES_BYTES).trim()}) ` +
          `= ${mb(bound).trim()} MB; highest RSS measured ${mb(highest).trim()} MB: ` +
          `${highest <= bound ? 'within the bound' : 'OVER THE BOUND'}`,
      );
    }
  } finally {
    await gateway.stop();
  }
}

try {
  const started = performance.now();
  const table = await admin('POST', '/api/v2/tables', {
    name: 'memory',
    data: { customers: Array.from({ length: 10 }, (_, i) => ({ id: i, name: `c${i}` })) },
  });
  const adis: string[] = [];
  for (let t = 0; t < TOOLS; t++) {
    const adi = await admin('POST', '/api/v2/adis', {
      table_id: table.id,
      json_path: '/customers',
      operation_type: 'query',
      name: `query_${t}`,
    });
    adis.push(adi.id as string);
  }
  const first = await admin('POST', '/api/v2/aeis', { name: 'agent-0' });
  await admin(
    'POST',
    `/api/v2/aeis/${first.id as string}/bindings`,
    adis.map((adi_id) => ({ adi_id })),
  );
  const keys = [first.api_key as string];
  for (let i = 1; i < KEYS; i++) keys.push(`bnd_key_${randomBytes(24).toString('base64url')}`);
  const hashes = keys.map((k) => createHash('sha256').update(k).digest('hex'));
  const db = new pg.Client({ connectionString: databaseUrl(cp.database) });
  await db.connect();
  try {
    // Copies of the first exposure and its bindings, each with its own id, name and key.
    await db.query(
      `INSERT INTO aei (id, user_id, type, name, api_key_hash, api_key_prefix, status, exposure_mode,
                        catalog_search, config_version)
       SELECT a.id || '_' || k.n, a.user_id, a.type, 'agent-' || k.n, k.hash, left(k.key, 12), a.status,
              a.exposure_mode, a.catalog_search, a.config_version
       FROM aei a, unnest($2::text[], $3::text[]) WITH ORDINALITY AS k(key, hash, n)
       WHERE a.id = $1`,
      [first.id, keys.slice(1), hashes.slice(1)],
    );
    await db.query(
      `INSERT INTO aei_binding (id, aei_id, adi_id, tool_name, tool_name_inherited, tool_description,
                                input_schema, enabled)
       SELECT b.id || '_' || c.n, b.aei_id || '_' || c.n, b.adi_id, b.tool_name, b.tool_name_inherited,
              b.tool_description, b.input_schema, b.enabled
       FROM aei_binding b, generate_series(1, $2::int) AS c(n)
       WHERE b.aei_id = $1`,
      [first.id, KEYS - 1],
    );
  } finally {
    await db.end();
  }
  const config = await fetch(`${cp.url}/internal/keys/${keys[0]}/config`, {
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
  });
  const configBytes = Buffer.byteLength(await config.text());
  console.log(
    `${KEYS} exposures of ${TOOLS} tools each (config JSON ${(configBytes / 1024).toFixed(1)} KiB each), ` +
      `set up in ${((performance.now() - started) / 1000).toFixed(0)} s; ${SESSIONS} sessions over them`,
  );

  const runs = (process.env.BENCH_RUNS ?? 'above,below').split(',');
  if (runs.includes('above'))
    await run(
      'Caps above the load (GATEWAY_MAX_SESSIONS=1000000, CONFIG_CACHE_MAX_BYTES=64 GiB):',
      {
        GATEWAY_MAX_SESSIONS: '1000000',
        GATEWAY_MAX_SESSIONS_PER_KEY: '1000000',
        CONFIG_CACHE_MAX_BYTES: String(64 * 1024 * MiB),
      },
      keys,
    );
  const maxSessions = Number(process.env.BENCH_CAPPED_SESSIONS ?? 2_000);
  const maxCacheMb = Number(process.env.BENCH_CAPPED_CACHE_MB ?? 128);
  if (runs.includes('below'))
    await run(
      `Caps below the load (GATEWAY_MAX_SESSIONS=${maxSessions}, CONFIG_CACHE_MAX_BYTES=${maxCacheMb} MiB):`,
      {
        GATEWAY_MAX_SESSIONS: String(maxSessions),
        GATEWAY_MAX_SESSIONS_PER_KEY: String(maxSessions),
        CONFIG_CACHE_MAX_BYTES: String(maxCacheMb * MiB),
        CATALOG_SESSION_MAX_BYTES: String(DEFAULT_CATALOG_BYTES),
      },
      keys,
      { cacheBytes: maxCacheMb * MiB, sessions: maxSessions, catalogBytes: DEFAULT_CATALOG_BYTES },
    );
} finally {
  await cp.stop();
}
