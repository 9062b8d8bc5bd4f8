// Pins the batcher's own rules, with the exchange played by functions the test controls (the
// end-to-end behaviour, against a real control plane, is gateway.execute-batch.happy.test.ts):
// calls of one turn share an exchange and a lone call goes alone; each call gets its own line's
// answer; a call cancelled while queued is never sent; a call past its time limit or cancelled
// while its batch runs ends alone, the others still get theirs; a failed exchange fails only the
// unanswered calls and never sends them again; a batch refused whole is sent again call by call
// and no batch goes for a while (also when a proxy refuses it in HTML, through the real client);
// every answer counts for the breaker, a server error as a failure; no two batches of a process share
// a name.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  EXECUTE_BATCH_ID_RE,
  type ExecuteBatchAnswer,
  type ExecuteRequest,
  type ToolResult,
} from '@bindery/contracts';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../src/control-plane/client.ts';
import { ControlPlaneError } from '../src/control-plane/errors.ts';
import { ExecuteBatcher, type ExecuteBatcherOptions } from '../src/control-plane/execute-batcher.ts';
import { createMetrics } from '../src/metrics.ts';

const ADI = 'adi_1';
const request = (n: number): ExecuteRequest => ({
  aei_id: 'aei_1',
  binding_id: `bnd_${n}`,
  arguments: { n },
});
const result = (text: string): ToolResult => ({ content: [{ type: 'text', text }] });

interface Exchange {
  lines: { adiId: string; request: ExecuteRequest }[];
  onAnswer(answer: ExecuteBatchAnswer): void;
  signal: AbortSignal;
  batchId: string;
  /** Ends the exchange; `instance` names the control-plane process that answered. */
  end(outcome: { status: number; body: unknown; instance?: string } | Error): void;
}

function harness(options: Partial<ExecuteBatcherOptions> = {}) {
  const exchanges: Exchange[] = [];
  const alone: { adiId: string; request: ExecuteRequest }[] = [];
  const records: boolean[] = [];
  const cancels: { batchId: string; lines: number[] }[] = [];
  let timeouts = 0;
  const batcher = new ExecuteBatcher({
    maxCalls: 32,
    timeoutMs: 10_000,
    alone: async (adiId, req) => {
      alone.push({ adiId, request: req });
      return result(`alone ${req.binding_id}`);
    },
    exchange: (text, onAnswer, signal, batchId) =>
      new Promise((resolve, reject) => {
        const lines = text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => {
            const tab = l.indexOf('\t');
            return { adiId: l.slice(0, tab), request: JSON.parse(l.slice(tab + 1)) as ExecuteRequest };
          });
        exchanges.push({
          lines,
          onAnswer,
          signal,
          batchId,
          end: (outcome) =>
            outcome instanceof Error ? reject(outcome) : resolve({ instance: undefined, ...outcome }),
        });
      }),
    cancel: async (batchId, lines) => {
      cancels.push({ batchId, lines });
      return { status: 200, instance: undefined };
    },
    answer: (status, body) => {
      if (status >= 500) throw new ControlPlaneError(`answered ${status}`, 'error-answer', false, status);
      if (status !== 200) throw new ControlPlaneError(`refused ${status}`, 'refused', false, status);
      return body as ToolResult;
    },
    record: (ok) => records.push(ok),
    timedOut: () => timeouts++,
    observe: () => {},
    batchSize: () => {},
    log: Fastify({ logger: { level: 'silent' } }).log,
    ...options,
  });
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  return { batcher, exchanges, alone, records, cancels, turn, timeouts: () => timeouts };
}

/** The outcome of a call, as data: its text, or its error's message and delivery. */
const outcome = (p: Promise<ToolResult>) =>
  p.then(
    (r) => ({ text: (r.content[0] as { text: string }).text }),
    (e: ControlPlaneError) => ({ error: e.message, delivery: e.delivery }),
  );

describe('ExecuteBatcher', () => {
  it('sends the calls of one turn in one exchange, and each gets its own line’s answer', async () => {
    const h = harness();
    const calls = [0, 1, 2].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    await h.turn();
    expect(h.exchanges).toHaveLength(1);
    const ex = h.exchanges[0]!;
    expect(ex.lines.map((l) => l.request.binding_id)).toEqual(['bnd_0', 'bnd_1', 'bnd_2']);
    // Answered out of order: each still gets its own.
    ex.onAnswer({ i: 2, status: 200, body: result('two') });
    ex.onAnswer({ i: 0, status: 200, body: result('zero') });
    ex.onAnswer({ i: 1, status: 500, body: {} });
    ex.end({ status: 200, body: undefined });
    expect(await Promise.all(calls)).toEqual([
      { text: 'zero' },
      { error: 'answered 500', delivery: 'error-answer' },
      { text: 'two' },
    ]);
    expect(h.records).toEqual([true, true, false]);
    expect(ex.signal.aborted).toBe(false);
  });

  it('names every batch of the process differently, whichever batcher sends it', async () => {
    // Two gateways in one process (as tests build them) talk to one control plane: a name in use
    // there would make a batch unnamed, and a cut would reach the other's line.
    const [a, b] = [harness(), harness()];
    for (let round = 0; round < 3; round++) {
      for (const h of [a, b]) void [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n))));
      await a.turn();
    }
    const names = [...a.exchanges, ...b.exchanges].map((ex) => ex.batchId);
    expect(names).toHaveLength(6);
    expect(new Set(names).size).toBe(6);
    for (const name of names) expect(name).toMatch(EXECUTE_BATCH_ID_RE);
    for (const ex of [...a.exchanges, ...b.exchanges]) ex.end(new Error('done'));
  });

  it('a lone call goes alone, as does a call too large for a batch', async () => {
    const h = harness();
    expect(await outcome(h.batcher.execute(ADI, request(0)))).toEqual({ text: 'alone bnd_0' });
    const big = { ...request(1), arguments: { blob: 'x'.repeat(70 * 1024) } };
    const both = [outcome(h.batcher.execute(ADI, big)), outcome(h.batcher.execute(ADI, request(2)))];
    expect(await Promise.all(both)).toEqual([{ text: 'alone bnd_1' }, { text: 'alone bnd_2' }]);
    expect(h.exchanges).toHaveLength(0);
  });

  it('a call cancelled while queued is never sent', async () => {
    const h = harness();
    const cancel = new AbortController();
    const gone = outcome(h.batcher.execute(ADI, request(0), cancel.signal));
    const kept = [1, 2].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    cancel.abort();
    await h.turn();
    expect(await gone).toMatchObject({ delivery: 'no-answer', error: expect.stringMatching(/cancelled/) });
    expect(h.exchanges).toHaveLength(1);
    expect(h.exchanges[0]!.lines.map((l) => l.request.binding_id)).toEqual(['bnd_1', 'bnd_2']);
    h.exchanges[0]!.onAnswer({ i: 0, status: 200, body: result('one') });
    h.exchanges[0]!.onAnswer({ i: 1, status: 200, body: result('two') });
    h.exchanges[0]!.end({ status: 200, body: undefined });
    expect(await Promise.all(kept)).toEqual([{ text: 'one' }, { text: 'two' }]);
  });

  it('a call past its time limit, or cancelled in flight, ends alone; the exchange ends once none waits', async () => {
    const h = harness({ timeoutMs: 50 });
    const cancel = new AbortController();
    const slow = outcome(h.batcher.execute(ADI, request(0)));
    const cancelled = outcome(h.batcher.execute(ADI, request(1), cancel.signal));
    const answered = outcome(h.batcher.execute(ADI, request(2)));
    await h.turn();
    const ex = h.exchanges[0]!;
    ex.onAnswer({ i: 2, status: 200, body: result('two') });
    cancel.abort();
    expect(await cancelled).toMatchObject({
      delivery: 'no-answer',
      error: expect.stringMatching(/cancelled/),
    });
    expect(ex.signal.aborted).toBe(false);
    expect(await slow).toEqual({
      error: 'control plane did not answer execute within 50 ms',
      delivery: 'no-answer',
    });
    expect(h.timeouts()).toBe(1);
    // Nothing waits for it any more: the exchange is closed.
    expect(ex.signal.aborted).toBe(true);
    expect(await answered).toEqual({ text: 'two' });
    // A late answer changes nothing.
    ex.onAnswer({ i: 0, status: 200, body: result('late') });
    ex.end(new Error('aborted'));
  });

  it('a call whose kind can be cut is cut alone when cancelled in flight; a context call is only dropped', async () => {
    const h = harness();
    const cut = new AbortController();
    const dropped = new AbortController();
    const calls = [
      outcome(h.batcher.execute(ADI, request(0), cut.signal, true)),
      outcome(h.batcher.execute(ADI, request(1), dropped.signal, false)),
      outcome(h.batcher.execute(ADI, request(2), undefined, true)),
    ];
    await h.turn();
    const ex = h.exchanges[0]!;
    expect(ex.batchId).toMatch(/^[A-Za-z0-9_-]{16,64}$/);
    cut.abort();
    dropped.abort();
    // The cuttable call's line of this batch, once; nothing for the context call.
    expect(h.cancels).toEqual([{ batchId: ex.batchId, lines: [0] }]);
    ex.onAnswer({ i: 2, status: 200, body: result('two') });
    ex.end({ status: 200, body: undefined });
    expect(await Promise.all(calls)).toEqual([
      { error: 'the client cancelled the execute request', delivery: 'no-answer' },
      { error: 'the client cancelled the execute request', delivery: 'no-answer' },
      { text: 'two' },
    ]);
    // The exchange stayed open for the call still waiting.
    expect(ex.signal.aborted).toBe(false);
  });

  it('once two control-plane processes answered behind one address, calls that can be cut go alone', async () => {
    const h = harness();
    for (const instance of ['cp-a', 'cp-b']) {
      const pair = [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n), undefined, true)));
      await h.turn();
      const ex = h.exchanges.at(-1)!;
      ex.onAnswer({ i: 0, status: 200, body: result('a') });
      ex.onAnswer({ i: 1, status: 200, body: result('b') });
      ex.end({ status: 200, body: undefined, instance });
      await Promise.all(pair);
    }
    expect(h.exchanges).toHaveLength(2);
    const cuttable = [2, 3].map((n) => outcome(h.batcher.execute(ADI, request(n), undefined, true)));
    const context = [4, 5].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    await h.turn();
    expect(await Promise.all(cuttable)).toEqual([{ text: 'alone bnd_2' }, { text: 'alone bnd_3' }]);
    // Context calls still share an exchange (a cancel never stopped them anyway).
    expect(h.exchanges).toHaveLength(3);
    const ex = h.exchanges[2]!;
    expect(ex.lines.map((l) => l.request.binding_id)).toEqual(['bnd_4', 'bnd_5']);
    ex.onAnswer({ i: 0, status: 200, body: result('four') });
    ex.onAnswer({ i: 1, status: 200, body: result('five') });
    ex.end({ status: 200, body: undefined, instance: 'cp-a' });
    expect(await Promise.all(context)).toEqual([{ text: 'four' }, { text: 'five' }]);
  });

  it('after a batch answer that names no process (an older control plane), calls that can be cut go alone', async () => {
    const h = harness();
    const pair = [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n), undefined, true)));
    await h.turn();
    const ex = h.exchanges[0]!;
    ex.onAnswer({ i: 0, status: 200, body: result('a') });
    ex.onAnswer({ i: 1, status: 200, body: result('b') });
    ex.end({ status: 200, body: undefined });
    await Promise.all(pair);
    const next = [2, 3].map((n) => outcome(h.batcher.execute(ADI, request(n), undefined, true)));
    await h.turn();
    expect(await Promise.all(next)).toEqual([{ text: 'alone bnd_2' }, { text: 'alone bnd_3' }]);
    expect(h.exchanges).toHaveLength(1);
  });

  it('a call that can be cut and runs past its time limit is cut on its own', async () => {
    const h = harness({ timeoutMs: 50 });
    const slow = outcome(h.batcher.execute(ADI, request(0), undefined, true));
    const other = outcome(h.batcher.execute(ADI, request(1), undefined, true));
    await h.turn();
    const ex = h.exchanges[0]!;
    // Line 1 answers in time; line 0 does not.
    ex.onAnswer({ i: 1, status: 200, body: result('one') });
    expect(await other).toEqual({ text: 'one' });
    expect(await slow).toMatchObject({ delivery: 'no-answer' });
    // The exchange had ended for nobody else: the last open call's time limit closes it, which
    // cuts it; a cut is sent only while others still wait.
    expect(ex.signal.aborted).toBe(true);
    const h2 = harness({ timeoutMs: 50 });
    const late = outcome(h2.batcher.execute(ADI, request(0), undefined, true));
    const waiting = h2.batcher.execute(ADI, request(1), undefined, true);
    await h2.turn();
    expect(await late).toMatchObject({ delivery: 'no-answer' });
    // Both timed out at once: the first one's cut went while the second still waited.
    expect(h2.cancels).toEqual([{ batchId: h2.exchanges[0]!.batchId, lines: [0] }]);
    await waiting.catch(() => undefined);
  });

  it('a failed exchange fails the calls it did not answer, with its failure, and sends nothing again', async () => {
    const h = harness();
    const calls = [0, 1, 2].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    await h.turn();
    h.exchanges[0]!.onAnswer({ i: 1, status: 200, body: result('one') });
    h.exchanges[0]!.end(new ControlPlaneError('control plane unreachable (ECONNRESET)', 'no-answer', false));
    expect(await Promise.all(calls)).toEqual([
      { error: 'control plane unreachable (ECONNRESET)', delivery: 'no-answer' },
      { text: 'one' },
      { error: 'control plane unreachable (ECONNRESET)', delivery: 'no-answer' },
    ]);
    expect(h.alone).toHaveLength(0);
    expect(h.exchanges).toHaveLength(1);
  });

  it('an answer that ends without a call’s line fails that call as an error answer', async () => {
    const h = harness();
    const calls = [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    await h.turn();
    h.exchanges[0]!.onAnswer({ i: 0, status: 200, body: result('zero') });
    h.exchanges[0]!.end({ status: 200, body: undefined });
    expect(await Promise.all(calls)).toEqual([
      { text: 'zero' },
      { error: 'the control plane ended the batch without answering the call', delivery: 'error-answer' },
    ]);
  });

  for (const status of [404, 413]) {
    it(`a batch refused whole (${status}) is sent again call by call, and no batch goes for a while`, async () => {
      const h = harness();
      const calls = [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n))));
      await h.turn();
      h.exchanges[0]!.end({ status, body: { error: { code: 'NOT_FOUND', message: 'no route' } } });
      expect(await Promise.all(calls)).toEqual([{ text: 'alone bnd_0' }, { text: 'alone bnd_1' }]);
      const later = [2, 3].map((n) => outcome(h.batcher.execute(ADI, request(n))));
      expect(await Promise.all(later)).toEqual([{ text: 'alone bnd_2' }, { text: 'alone bnd_3' }]);
      expect(h.exchanges).toHaveLength(1);
    });
  }

  it('any other refusal of the whole batch is each call’s own refusal, as alone', async () => {
    const h = harness();
    const calls = [0, 1].map((n) => outcome(h.batcher.execute(ADI, request(n))));
    await h.turn();
    h.exchanges[0]!.end({ status: 401, body: { error: { code: 'UNAUTHORIZED', message: 'bad token' } } });
    expect(await Promise.all(calls)).toEqual([
      { error: 'refused 401', delivery: 'refused' },
      { error: 'refused 401', delivery: 'refused' },
    ]);
    expect(h.alone).toHaveLength(0);
  });

  it('an ADI id a line cannot carry goes alone', async () => {
    const h = harness();
    const both = ['bad id', 'ok_id'].map((id) => outcome(h.batcher.execute(id, request(0))));
    await h.turn();
    expect(h.alone.map((a) => a.adiId)).toEqual(['bad id', 'ok_id']);
    expect(await Promise.all(both)).toEqual([{ text: 'alone bnd_0' }, { text: 'alone bnd_0' }]);
  });
});

// With the real client over HTTP: a proxy in front of the control plane (nginx with a small
// client_max_body_size, say) refuses a batch with its own HTML page. The status still says nothing
// ran, so the calls go again one by one and get their answers.
describe('a batch refused whole by a proxy, in its own words', () => {
  it('is sent again call by call, each call answered', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url ?? '');
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/internal/execute-batch') {
          res.writeHead(413, { 'content-type': 'text/html' });
          return void res.end('<html><body><h1>413 Request Entity Too Large</h1></body></html>');
        }
        const { binding_id: binding } = JSON.parse(body) as ExecuteRequest;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(result(`alone ${binding}`)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new ControlPlaneClient({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      internalToken: 'token',
      configTimeoutMs: 5_000,
      toolCallTimeoutMs: 5_000,
      batchMax: 32,
      idleProbeMs: 60_000,
      breaker: { failureThreshold: 5, cooldownMs: 1_000, maxCooldownMs: 10_000 },
      metrics: createMetrics(),
      log: Fastify({ logger: false }).log,
    });
    try {
      // Three calls in one turn: one batch, refused, then three calls alone.
      const answers = await Promise.all(
        [1, 2, 3].map((n) => client.execute(ADI, request(n), undefined, undefined, true)),
      );
      expect(answers).toEqual([1, 2, 3].map((n) => result(`alone bnd_${n}`)));
      expect(seen.filter((url) => url === '/internal/execute-batch')).toHaveLength(1);
      expect(seen.filter((url) => url === `/internal/adi/${ADI}/execute`)).toHaveLength(3);
    } finally {
      await client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
