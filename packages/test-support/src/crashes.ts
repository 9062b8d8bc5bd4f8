/**
 * The crash drill of a scaled-out deployment under load, one way for the test that pins it and the
 * benchmark that measures it: SIGKILL to the first control plane, then (once the survivors answer
 * again) a start of a new one in its place; then the same for the first gateway, until the new
 * gateway takes calls. "Answer again" means reads and writes succeeding after the load's last
 * failure, so the drill moves on only once the error window of a kill has closed.
 */
import type { LoadRun } from './ledger-load.ts';
import type { Replicas } from './replicas.ts';

export interface Crash {
  what: 'control plane' | 'gateway';
  /** performance.now() when it was killed, when its restart began and when the new one was up. */
  killedAt: number;
  restartedAt: number;
  upAt: number;
}

export interface CrashOptions {
  /** Successful reads, and writes, after the last failure that count as answering again (20). */
  answered?: number;
  /** How long answering again (or a restarted gateway's first calls) may take (20 s). */
  timeoutMs?: number;
  /** How long a killed replica stays down at least (0): a benchmark watches the survivors a while. */
  downMs?: number;
}

/** Kills and restarts control plane 0, then gateway 0, under `run`; answers when each happened. */
export async function crashEach(
  replicas: Replicas,
  run: LoadRun,
  options: CrashOptions = {},
): Promise<Crash[]> {
  const { answered = 20, timeoutMs = 20_000, downMs = 0 } = options;
  const answering = (since: number) => {
    const { reads, writes } = run.answeredSince(Math.max(since, run.lastFailure()));
    return reads >= answered && writes >= answered;
  };
  const crashes: Crash[] = [];
  const drill = async (what: Crash['what'], kill: () => Promise<void>, restart: () => Promise<void>) => {
    const killedAt = performance.now();
    await kill();
    await run.until(
      `the survivors answer after the ${what} was killed`,
      () => answering(killedAt),
      timeoutMs,
    );
    const held = killedAt + downMs - performance.now();
    if (held > 0) await new Promise((resolve) => setTimeout(resolve, held));
    const restartedAt = performance.now();
    await restart();
    crashes.push({ what, killedAt, restartedAt, upAt: performance.now() });
  };

  await run.until('the load answers', () => answering(0), timeoutMs);
  await drill(
    'control plane',
    () => replicas.killControlPlane(0),
    () => replicas.restartControlPlane(0),
  );
  await drill(
    'gateway',
    () => replicas.killGateway(0),
    () => replicas.restartGateway(0),
  );
  // Connections reach it again as the load's connections close and open again.
  const upAt = crashes.at(-1)!.upAt;
  const port = replicas.gateways[0]!.port;
  await run.until(
    'the restarted gateway takes calls',
    () => replicas.gatewayBalancer.handedTo(port) >= 5 && answering(upAt),
    timeoutMs,
  );
  return crashes;
}
