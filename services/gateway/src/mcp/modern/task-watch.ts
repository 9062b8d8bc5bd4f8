/**
 * `notifications/tasks` on a listen stream (SEP-2663 "Task Status Notifications"; decision 071):
 * the tasks a stream names in `notifications.taskIds` are followed by polling them through the
 * control plane (tasks/get, as the agent would), and each change of one (its status, its last
 * update, what it asks) is sent as the whole task, as tasks/get would answer it, until it ends.
 * Polling rather than relaying the upstream's own notifications: it works for every upstream
 * (one that sends none, too), costs nothing per task when no stream listens, and is bounded: at most
 * MAX_LISTEN_TASKS tasks a stream, each polled at its `pollIntervalMs` held between MIN_POLL_MS and
 * MAX_POLL_MS, each poll after the first spending the key's execute budget (none left: the poll
 * waits for the next turn), and nothing once the stream closes.
 */
import { TERMINAL_TASK_STATUSES } from '@bindery/contracts';

/** Tasks one listen stream may follow. */
export const MAX_LISTEN_TASKS = 16;
const MIN_POLL_MS = 500;
const MAX_POLL_MS = 30_000;
const DEFAULT_POLL_MS = 1_000;

/**
 * A task's state now (tasks/get), undefined when it is not found for this caller, or `later` when
 * a follow-up poll (`followUp`) finds the key's budget spent.
 */
export type TaskPoll = (
  taskId: string,
  followUp: boolean,
) => Promise<Record<string, unknown> | undefined | 'later'>;

/** What tells a change of a task apart: its status, message, last update and outstanding requests. */
function versionOf(task: Record<string, unknown>): string {
  const asked = task.inputRequests;
  return JSON.stringify([
    task.status,
    task.statusMessage,
    task.lastUpdatedAt,
    typeof asked === 'object' && asked !== null ? Object.keys(asked).sort() : [],
  ]);
}

const pollDelay = (task: Record<string, unknown>) => {
  const asked = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : DEFAULT_POLL_MS;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, asked));
};

export class TaskWatch {
  #stopped = false;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly poll: TaskPoll,
    private readonly send: (task: Record<string, unknown>) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * Looks each task up once: answers the found ones (the stream acknowledges those) with their
   * state now, the others are left out.
   */
  async admit(taskIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    await Promise.all(
      taskIds.map(async (taskId) => {
        try {
          const task = await this.poll(taskId, false);
          if (task && task !== 'later') found.set(taskId, task);
        } catch (error) {
          this.onError(error);
        }
      }),
    );
    return found;
  }

  /** Sends each task's state now, then follows it until it ends or the watch stops. */
  follow(tasks: Map<string, Record<string, unknown>>): void {
    for (const [taskId, task] of tasks) {
      this.send(task);
      this.#next(taskId, task);
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #next(taskId: string, last: Record<string, unknown>): void {
    if (this.#stopped || TERMINAL_TASK_STATUSES.has(String(last.status))) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.#check(taskId, last);
    }, pollDelay(last));
    timer.unref();
    this.#timers.add(timer);
  }

  async #check(taskId: string, last: Record<string, unknown>): Promise<void> {
    let task: Record<string, unknown> | undefined | 'later';
    try {
      task = await this.poll(taskId, true);
    } catch (error) {
      // The control plane or the upstream failed this once: asked again at the next turn.
      this.onError(error);
      this.#next(taskId, last);
      return;
    }
    if (task === 'later') {
      this.#next(taskId, last);
      return;
    }
    // Gone (expired, forgotten): nothing more will be said of it.
    if (!task || this.#stopped) return;
    if (versionOf(task) !== versionOf(last)) this.send(task);
    this.#next(taskId, task);
  }
}
