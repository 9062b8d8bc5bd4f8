/**
 * A load of reads and keyed writes on one table, as agents behind a balancer send it, and what
 * tests and benchmarks read from it afterwards: every failed call (when, around a crash), and
 * whether each write the load saw acknowledged is in the table exactly once.
 *
 * The exposure is a ledger: `add_entry` appends a value to `/entries`, `last_entry` reads the last
 * one (`[-1]`: its cost does not grow with the table, so every read stays in the control plane's
 * in-process query slice however long the load runs), `probe` (a read of its own) is there to be renamed by a test. Writers append
 * values no one else writes (markers), one after another; a write that fails (an error answer, no
 * answer, a cut connection, its time limit) is sent again with the same idempotency key until it
 * is acknowledged, so a crash never leaves the agent unsure whether to write again. Readers read,
 * one read after another, at once with the writers. Calls are MCP
 * `tools/call` of the 2026-07-28 era (no session: any gateway serves any call) as raw JSON-RPC
 * over kept-alive HTTP connections, each closed after a number of calls so that connections
 * spread again over replicas that come back.
 */
import { Agent, request } from 'node:http';
import { IDEMPOTENCY_META_KEY } from '@bindery/contracts';
import type { Json } from './admin.ts';

export interface Ledger {
  tableId: string;
  aeiId: string;
  apiKey: string;
  /** Binding ids by tool name (`add_entry`, `last_entry`, `probe`). */
  bindings: Record<string, string>;
  /** The MCP path of the exposure on a gateway (`/api/v2/mcp/server/<api_key>`). */
  path: string;
}

/** Makes the ledger's table (no entries), its ADIs and an AEI binding them, through `admin`. */
export async function ledgerExposure(
  admin: (method: string, path: string, body?: unknown) => Promise<Json>,
): Promise<Ledger> {
  const table = await admin('POST', '/api/v2/tables', { name: 'ledger', data: { entries: [] } });
  const add = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/entries',
    operation_type: 'create',
  });
  const last = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/entries',
    operation_type: 'query',
  });
  // An ADI is bound once per AEI: the probe reads through one of its own.
  const probe = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/entries',
    operation_type: 'query',
  });
  const aei = await admin('POST', '/api/v2/aeis', { name: 'ledger-agent' });
  const bound = await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, [
    { adi_id: add.id, tool_name: 'add_entry' },
    { adi_id: last.id, tool_name: 'last_entry' },
    { adi_id: probe.id, tool_name: 'probe' },
  ]);
  const bindings: Record<string, string> = {};
  for (const item of bound.items as { id: string; tool_name: string }[]) bindings[item.tool_name] = item.id;
  return {
    tableId: table.id,
    aeiId: aei.id,
    apiKey: aei.api_key,
    bindings,
    path: `/api/v2/mcp/server/${aei.api_key}`,
  };
}

export interface LoadOptions {
  /** Where calls go: a gateway's base URL, or a balancer's. */
  url: string;
  ledger: Ledger;
  /**
   * Workers appending, each one write after another (writes to one table take turns: their rate
   * is bounded by the table, not by the replicas in front of it).
   */
  writers: number;
  /** Workers reading, each one read after another. */
  readers: number;
  /** How long a call may take before it counts as failed (a write is then sent again): 10 s by default. */
  attemptTimeoutMs?: number;
  /** Calls on one connection before it is closed (50 by default). */
  callsPerConnection?: number;
  /** A word in this run's markers, so several runs can share a ledger. */
  label?: string;
}

export interface Attempt {
  kind: 'read' | 'write';
  /** performance.now() when it was sent and when it ended. */
  start: number;
  end: number;
  ok: boolean;
  /** Why it failed: the error code of the answer, or what happened to the request. */
  problem?: string;
}

export interface LoadRun {
  label: string;
  /** Every call, in the order they ended. */
  attempts: Attempt[];
  /** Markers whose write was acknowledged (a tool result that is not an error). */
  acknowledged: string[];
  /** Every marker whose write was sent at least once. */
  sent: Set<string>;
  /** Writes acknowledged only after one or more failed attempts (sent again with their key). */
  retriedWrites(): number;
  /** Successful reads and acknowledged writes that ended after `since` (performance.now()). */
  answeredSince(since: number): { reads: number; writes: number };
  /** When the last failed call ended (0 when none failed). */
  lastFailure(): number;
  /** Resolves once `predicate` holds (checked every 25 ms); rejects after `timeoutMs` naming `what`. */
  until(what: string, predicate: () => boolean, timeoutMs: number): Promise<void>;
  /**
   * Starts no new call; a write being retried goes on until acknowledged, for up to `drainMs`
   * (10 s by default). Resolves once every worker is done.
   */
  stop(drainMs?: number): Promise<void>;
}

const ERA = '2026-07-28';
const RETRY_DELAY_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** POSTs `body`; resolves with the status and the whole answer, rejects on a cut or the time limit. */
function post(
  agent: Agent,
  url: URL,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', reject);
        res.on('close', () =>
          res.complete
            ? resolve({ status: res.statusCode ?? 0, text })
            : reject(new Error('answer cut short')),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The JSON-RPC answer to `id` in a JSON body or an event stream's `data:` lines. */
function answerTo(text: string, id: number): Json {
  const messages: Json[] = text.trimStart().startsWith('{')
    ? [JSON.parse(text)]
    : text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => JSON.parse(line.slice(5)));
  return messages.find((m) => m?.id === id);
}

/** Starts the load; it runs until `stop()`. */
export function startLoad(options: LoadOptions): LoadRun {
  const {
    ledger,
    writers,
    readers,
    attemptTimeoutMs = 10_000,
    callsPerConnection = 50,
    label = 'load',
  } = options;
  const url = new URL(`${options.url}${ledger.path}`);
  const agent = new Agent({ keepAlive: true, maxSockets: writers + readers });
  const attempts: Attempt[] = [];
  const acknowledged: string[] = [];
  const sent = new Set<string>();
  let retried = 0;
  let lastFailure = 0;
  let stopping = false;
  let drainUntil = Number.POSITIVE_INFINITY;
  let id = 0;

  /** One call; true when it answered a tool result that is not an error. */
  const call = async (
    kind: Attempt['kind'],
    name: string,
    args: Json,
    key: string | undefined,
    close: boolean,
  ) => {
    const callId = ++id;
    const start = performance.now();
    let problem: string | undefined;
    try {
      const res = await post(
        agent,
        url,
        JSON.stringify({
          jsonrpc: '2.0',
          id: callId,
          method: 'tools/call',
          params: {
            name,
            arguments: args,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': ERA,
              'io.modelcontextprotocol/clientCapabilities': {},
              'io.modelcontextprotocol/clientInfo': { name: 'ledger-load', version: '1' },
              ...(key !== undefined && { [IDEMPOTENCY_META_KEY]: key }),
            },
          },
        }),
        {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': ERA,
          'mcp-method': 'tools/call',
          'mcp-name': name,
          ...(close && { connection: 'close' }),
        },
        attemptTimeoutMs,
      );
      const answer = res.status === 200 ? answerTo(res.text, callId) : undefined;
      if (answer?.result && answer.result.isError !== true) problem = undefined;
      else if (answer?.result) {
        const text = answer.result.content?.[0]?.text;
        problem = String((JSON.parse(text ?? '{}') as Json)?.error?.code ?? 'tool error');
      } else problem = answer?.error ? `JSON-RPC ${answer.error.code}` : `HTTP ${res.status}`;
    } catch (error) {
      problem = (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));
    }
    const end = performance.now();
    attempts.push({ kind, start, end, ok: problem === undefined, ...(problem && { problem }) });
    if (problem !== undefined) lastFailure = end;
    return problem === undefined;
  };

  const writer = async (w: number) => {
    let calls = 0;
    for (let n = 0; !stopping; n++) {
      const marker = `${label}-${w}-${n}`;
      sent.add(marker);
      for (let attempt = 0; ; attempt++) {
        const close = ++calls % callsPerConnection === 0;
        if (await call('write', 'add_entry', { value: marker }, `key-${marker}`, close)) {
          acknowledged.push(marker);
          if (attempt > 0) retried += 1;
          break;
        }
        if (performance.now() > drainUntil) return;
        await sleep(RETRY_DELAY_MS);
      }
    }
  };
  const reader = async () => {
    for (let calls = 1; !stopping; calls++) {
      const close = calls % callsPerConnection === 0;
      if (!(await call('read', 'last_entry', { query: '[-1]' }, undefined, close))) {
        await sleep(RETRY_DELAY_MS);
      }
    }
  };
  const running = Promise.all([
    ...Array.from({ length: writers }, (_, w) => writer(w)),
    ...Array.from({ length: readers }, () => reader()),
  ]);

  // Attempts are kept in the order they ended: the recent ones are at the end.
  const answeredSince = (since: number) => {
    let reads = 0;
    let writes = 0;
    for (let i = attempts.length - 1; i >= 0 && attempts[i]!.end >= since; i--) {
      if (!attempts[i]!.ok) continue;
      if (attempts[i]!.kind === 'read') reads += 1;
      else writes += 1;
    }
    return { reads, writes };
  };
  return {
    label,
    attempts,
    acknowledged,
    sent,
    retriedWrites: () => retried,
    answeredSince,
    lastFailure: () => lastFailure,
    async until(what, predicate, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (!predicate()) {
        if (performance.now() > deadline) {
          const failed = attempts.filter((a) => !a.ok);
          throw new Error(
            `${what}: not within ${timeoutMs} ms (${attempts.length} calls, ${failed.length} failed, ` +
              `last problems: ${failed
                .slice(-5)
                .map((a) => a.problem)
                .join(', ')})`,
          );
        }
        await sleep(25);
      }
    },
    async stop(drainMs = 10_000) {
      stopping = true;
      drainUntil = performance.now() + drainMs;
      await running;
      agent.destroy();
    },
  };
}

/** The failed calls of a run that ended in [from, to), timed from `from` (a kill, say). */
export interface Disruption {
  failed: number;
  failedReads: number;
  failedWrites: number;
  /** When the first and the last failed call ended, in ms after `from` (undefined when none failed). */
  firstMs: number | undefined;
  lastMs: number | undefined;
  /** From the first failed call's end to the last's (0 when none or one failed). */
  windowMs: number;
  /** Calls that succeeded meanwhile. */
  answered: number;
  /** The failures' problems, with how many of each. */
  problems: Record<string, number>;
}

/** What a run's calls went through between `from` and `to` (performance.now() times). */
export function disruption(run: LoadRun, from: number, to: number): Disruption {
  const inside = run.attempts.filter((a) => a.end >= from && a.end < to);
  const failed = inside.filter((a) => !a.ok);
  const problems: Record<string, number> = {};
  for (const a of failed) problems[a.problem ?? '?'] = (problems[a.problem ?? '?'] ?? 0) + 1;
  const ends = failed.map((a) => a.end);
  const first = ends.length > 0 ? ends.reduce((a, b) => Math.min(a, b)) - from : undefined;
  const last = ends.length > 0 ? ends.reduce((a, b) => Math.max(a, b)) - from : undefined;
  return {
    failed: failed.length,
    failedReads: failed.filter((a) => a.kind === 'read').length,
    failedWrites: failed.filter((a) => a.kind === 'write').length,
    firstMs: first,
    lastMs: last,
    windowMs: first === undefined || last === undefined ? 0 : last - first,
    answered: inside.length - failed.length,
    problems,
  };
}

export interface LedgerCheck {
  /** Writes the runs saw acknowledged. */
  acknowledged: number;
  /** Entries in the table. */
  stored: number;
  /** Acknowledged markers not in the table. */
  missing: string[];
  /** Markers in the table more than once. */
  duplicated: string[];
  /** Entries no run ever sent. */
  foreign: string[];
  /** Markers sent and never acknowledged (each in the table at most once). */
  unacknowledged: string[];
}

/** Holds the table's entries against what the runs sent and saw acknowledged. */
export function checkLedger(entries: unknown[], runs: LoadRun[]): LedgerCheck {
  const counts = new Map<string, number>();
  for (const entry of entries) counts.set(String(entry), (counts.get(String(entry)) ?? 0) + 1);
  const acknowledged = new Set(runs.flatMap((run) => run.acknowledged));
  const sent = new Set(runs.flatMap((run) => [...run.sent]));
  return {
    acknowledged: acknowledged.size,
    stored: entries.length,
    missing: [...acknowledged].filter((m) => !counts.has(m)),
    duplicated: [...counts].filter(([, n]) => n > 1).map(([m]) => m),
    foreign: [...counts.keys()].filter((m) => !sent.has(m)),
    unacknowledged: [...sent].filter((m) => !acknowledged.has(m)),
  };
}
