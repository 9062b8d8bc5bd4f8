/**
 * The client side of the tools/list benchmark, in a worker thread of its own: plain-socket
 * connections (`raw-http-client.ts`), one per concurrent loop and path, sending tools/list and
 * counting the answers' bytes. Measured here, a client thread that had also loaded the MCP SDK
 * spent 0.7 ms of CPU per 712 KiB answer instead of 0.3 ms (collections set off by the answers'
 * buffers walk a larger heap), so the thread that sends the load loads nothing else.
 *
 * `loadThread(paths)` starts it; `throughput` runs loops at once and answers calls per second and
 * the client's CPU per call; `turns` runs one call per path in turn and answers each call's ms.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { RawHttpConnection } from './raw-http-client.ts';

export interface LoadPath {
  url: string;
  path: string;
  /** Headers of each connection (its own session, say); one connection per entry. */
  headers: Record<string, string>[];
}

type Job =
  { kind: 'throughput'; path: string; total: number } | { kind: 'turns'; paths: string[]; calls: number };

export interface Throughput {
  perSecond: number;
  /** CPU time (user + system) per call of the client's whole process: this thread does the work. */
  clientCpuMs: number;
}

export interface LoadThread {
  throughput(path: string, total: number): Promise<Throughput>;
  /** For each path, the milliseconds of each of `calls` calls, the paths taking turns call by call. */
  turns(paths: string[], calls: number): Promise<number[][]>;
  close(): Promise<void>;
}

/** Starts the client thread with connections for `paths` (by name). */
export function loadThread(paths: Record<string, LoadPath>): LoadThread {
  // The thread loads this module through tsx, as the benchmark itself is loaded.
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`,
    { eval: true, workerData: paths },
  );
  let queue = Promise.resolve<unknown>(undefined);
  // A thread that fails or ends fails the job in hand (and every later one), so the benchmark's
  // clean-up runs rather than the process dying with its services left behind.
  let broken: Error | undefined;
  let current: ((error: Error) => void) | undefined;
  const breaks = (error: Error) => {
    broken ??= error;
    current?.(broken);
  };
  worker.on('error', breaks);
  worker.on('exit', (code) => breaks(new Error(`the load thread exited (${code})`)));
  const ask = <T>(job: Job): Promise<T> => {
    const answer = queue.then(
      () =>
        new Promise<T>((resolve, reject) => {
          if (broken) return reject(broken);
          current = reject;
          worker.once('message', (message: { error?: string; value?: T }) =>
            message.error === undefined ? resolve(message.value as T) : reject(new Error(message.error)),
          );
          worker.postMessage(job);
        }),
    );
    queue = answer.catch(() => undefined);
    return answer;
  };
  return {
    throughput: (path, total) => ask<Throughput>({ kind: 'throughput', path, total }),
    turns: (names, calls) => ask<number[][]>({ kind: 'turns', paths: names, calls }),
    close: async () => {
      await worker.terminate();
    },
  };
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  const paths = workerData as Record<string, LoadPath>;
  const connections = new Map<string, RawHttpConnection[]>();
  for (const [name, path] of Object.entries(paths)) {
    connections.set(name, await Promise.all(path.headers.map(() => RawHttpConnection.open(path.url))));
  }
  let id = 1;
  const list = async (name: string, w: number) => {
    const path = paths[name]!;
    const connection = connections.get(name)![w]!;
    const body = `{"jsonrpc":"2.0","id":${id++},"method":"tools/list"}`;
    const answer = await connection.post(path.path, path.headers[w]!, body);
    if (answer.status !== 200) throw new Error(`${name}: HTTP ${answer.status}`);
  };
  const run = async (job: Job): Promise<unknown> => {
    if (job.kind === 'throughput') {
      const workers = connections.get(job.path)!.length;
      const perWorker = Math.ceil(job.total / workers);
      const cpu = process.cpuUsage();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: workers }, async (_, w) => {
          for (let i = 0; i < perWorker; i++) await list(job.path, w);
        }),
      );
      const elapsed = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const calls = workers * perWorker;
      return { perSecond: (calls * 1000) / elapsed, clientCpuMs: (used.user + used.system) / 1000 / calls };
    }
    const samples = job.paths.map(() => [] as number[]);
    for (let i = 0; i < job.calls; i++) {
      for (const [k, name] of job.paths.entries()) {
        const t0 = performance.now();
        await list(name, 0);
        samples[k]!.push(performance.now() - t0);
      }
    }
    return samples;
  };
  port.on('message', (job: Job) => {
    run(job).then(
      (value) => port.postMessage({ value }),
      (error: unknown) => port.postMessage({ error: String(error) }),
    );
  });
}
