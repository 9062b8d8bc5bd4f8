/**
 * A service (the control plane, the gateway, a benchmark's stand-in server) as its own process:
 * plain `node <entry>` in its folder for a built file (`dist/server.js` by default: what production
 * runs, and what every suite builds before it starts), `node --import tsx <entry>` for TypeScript
 * (a stand-in's source, say). It binds the port it is given (0 for any) and is
 * ready once it logs "Server listening at <url>" (Fastify's line at level info; the stand-ins print
 * the same), which also says its real port. Every process started here is killed when the test
 * process exits, and by `reapAll()` (call it in afterAll), also when a test failed halfway.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/;
const STOP_TIMEOUT_MS = 60_000;
/** A service's build, which it runs unless told otherwise. */
const BUILT_ENTRY = 'dist/server.js';

/** Every process still running, with a promise that resolves once it is gone. */
const running = new Map<ChildProcess, Promise<number | null>>();

// Whatever happens to a test, no process it started is left running (or stopped) behind it.
process.once('exit', () => {
  for (const child of running.keys()) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

export interface ServiceOptions {
  /** The folder it runs in (a service's, or the benchmarks'). */
  dir: string;
  /**
   * The file to run, relative to `dir` (`dist/server.js` by default): JavaScript with plain node,
   * TypeScript through tsx, which costs each start over a second of CPU more.
   */
  entry?: string;
  /** Its environment besides PATH and LOG_LEVEL=info (which this may override). */
  env?: Record<string, string>;
  /** Node flags before the entry (a CPU profile, say). */
  nodeArgs?: string[];
  /** How long it may take to listen before it is killed and the start fails. */
  timeoutMs?: number;
}

export interface ServiceProcess {
  /** Where it listens (http://127.0.0.1:<port>). */
  url: string;
  port: number;
  pid: number;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** True until it has exited. */
  running(): boolean;
  /** SIGTERM (continuing it first if frozen); resolves with its exit code once it is gone. */
  stop(): Promise<number | null>;
  /** SIGKILL: no shutdown at all, as in a crash. Resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: the process stays, its sockets stay open, nothing answers (a hung server). */
  freeze(): void;
  /** SIGCONT: it answers again (what it received meanwhile included). */
  thaw(): void;
}

function launch(options: ServiceOptions) {
  const { dir, entry = BUILT_ENTRY, env = {}, nodeArgs = [] } = options;
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, entry], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Gone once its output is read ('close'); but a process it started (a stdio upstream server) may
  // hold its stderr open after it died, so no longer than a moment after 'exit'.
  const gone = new Promise<number | null>((resolve) => {
    child.once('close', (code) => resolve(code));
    void exited.then((code) => setTimeout(() => resolve(code), 2_000).unref());
  }).finally(() => running.delete(child));
  running.set(child, gone);
  return { child, gone, stdout: () => stdout, stderr: () => stderr };
}

/**
 * Starts a service and resolves once it listens; rejects with its output if it exits first or
 * does not listen within the timeout (90 s by default; then it is killed).
 */
export function startService(options: ServiceOptions): Promise<ServiceProcess> {
  const { child, gone, stdout, stderr } = launch(options);
  const timeoutMs = options.timeoutMs ?? 90_000;
  // Interleaved as printed, for the tests that read a service's log.
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const name = `${options.dir}/${options.entry ?? BUILT_ENTRY}`;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = () => {
      const match = LISTENING.exec(stdout()) ?? LISTENING.exec(stderr());
      if (!match?.[1]) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      const url = match[1];
      const service: ServiceProcess = {
        url,
        port: Number(new URL(url).port),
        pid: child.pid!,
        child,
        output: () => output,
        running: () => child.exitCode === null && child.signalCode === null,
        async stop() {
          if (service.running()) {
            // A stopped process would hold SIGTERM until continued.
            child.kill('SIGCONT');
            child.kill('SIGTERM');
          }
          const timeout = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          try {
            const code = await gone;
            // Ended by a signal rather than by itself: say which, with its last words, for the
            // test that expected a clean exit.
            if (code === null) {
              process.stderr.write(
                `${name} (pid ${child.pid}) ended by ${String(child.signalCode)} after SIGTERM; its last output:\n` +
                  `${output.slice(-3000)}\n`,
              );
            }
            return code;
          } finally {
            clearTimeout(timeout);
          }
        },
        async kill() {
          child.kill('SIGKILL');
          await gone;
        },
        freeze: () => void child.kill('SIGSTOP'),
        thaw: () => void child.kill('SIGCONT'),
      };
      resolve(service);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    // Once its output is read: a refusal says why on its last line.
    void gone.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${output}`));
    });
  });
}

/**
 * Starts a service expected to refuse to start (or to finish by itself): resolves with its exit
 * code and output once it is gone; kills it after `timeoutMs` (60 s by default) and rejects.
 */
export function runToExit(
  options: ServiceOptions,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { child, gone, stdout, stderr } = launch(options);
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${timeoutMs} ms:\n${stdout()}${stderr()}`));
    }, timeoutMs);
    void gone.then((code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stdout(), stderr: stderr() });
    });
  });
}

/** Kills every process started here that still runs, and waits until each is gone. */
export async function reapAll(): Promise<void> {
  await Promise.all(
    [...running].map(([child, gone]) => {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      return gone;
    }),
  );
}
