/**
 * Who is told, in this process, that a sidebar session's proposals changed: the person's open
 * event stream and an agent's command waiting for a verdict. Other control planes' changes reach
 * them by polling the database (sidebar-routes.ts, proposals.ts), so nothing depends on a change
 * being made on the same process.
 */
export class SidebarEvents {
  readonly #listeners = new Map<string, Set<() => void>>();

  /** Calls `listener` after each change of the session's proposals here; answers how to stop. */
  listen(sessionId: string, listener: () => void): () => void {
    let set = this.#listeners.get(sessionId);
    if (!set) {
      set = new Set();
      this.#listeners.set(sessionId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(sessionId);
    };
  }

  changed(sessionId: string): void {
    for (const listener of this.#listeners.get(sessionId) ?? []) listener();
  }

  /**
   * Resolves on the next change of the session's proposals here, after `pollMs` (a change made by
   * another control plane), or when `signal` aborts; whichever comes first.
   */
  next(sessionId: string, pollMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      const stop = this.listen(sessionId, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
