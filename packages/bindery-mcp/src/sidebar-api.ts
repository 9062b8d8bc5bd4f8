/**
 * The control plane's sidebar routes (`/api/v2/sidebar/sessions/{id}/...`) as `bindery-mcp
 * --sidebar` uses them: the session's token as a bearer header, every request bounded in time.
 * Every failure is a ControlPlaneError whose message is ready for the agent (the control plane's
 * own `code: message` when it refused), and never holds the token.
 */
import type { Proposal, SidebarCommandAnswer } from '@bindery/contracts';
import { answerJson, networkReason, refusalMessage, type SidebarSettings } from './settings.ts';

/** How long a request may take besides a write's wait for the verdict. */
const REQUEST_TIMEOUT_MS = 30_000;

export class ControlPlaneError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export class SidebarApi {
  readonly #settings: SidebarSettings;
  readonly #base: string;

  constructor(settings: SidebarSettings) {
    this.#settings = settings;
    this.#base = `${settings.url}/api/v2/sidebar/sessions/${encodeURIComponent(settings.sessionId)}`;
  }

  /**
   * Runs one command line; a write waits up to the settings' `waitMs` for the person's verdict.
   * A command's own fault (a bad path, an unknown verb) is the answer's `error`, not a throw.
   */
  command(command: string, signal?: AbortSignal): Promise<SidebarCommandAnswer> {
    const waitMs = this.#settings.waitMs;
    return this.#request(
      'POST',
      '/commands',
      { command, ...(waitMs > 0 && { wait_ms: waitMs }) },
      waitMs + REQUEST_TIMEOUT_MS,
      signal,
    ) as Promise<SidebarCommandAnswer>;
  }

  /** The session's proposals, newest first (the control plane answers its last 100). */
  async proposals(signal?: AbortSignal): Promise<Proposal[]> {
    const answer = (await this.#request('GET', '/proposals', undefined, REQUEST_TIMEOUT_MS, signal)) as {
      items?: unknown;
    };
    if (!Array.isArray(answer.items)) {
      throw new ControlPlaneError(`the control plane's answer to GET .../proposals has no items`);
    }
    return answer.items as Proposal[];
  }

  async #request(
    method: string,
    path: string,
    body: unknown,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const url = this.#settings.url;
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#settings.token}`,
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      if (signal?.aborted) throw new ControlPlaneError('the request was cancelled');
      if (timeout.aborted) {
        throw new ControlPlaneError(
          `the control plane at ${url} did not answer within ${Math.round(timeoutMs / 1000)} s` +
            (method === 'POST'
              ? '; a write may still have made its proposal (sidebar_proposals lists them)'
              : ''),
        );
      }
      throw new ControlPlaneError(`the control plane at ${url} is unreachable (${networkReason(error)})`);
    }
    const parsed = answerJson(text);
    if (!response.ok) {
      const message = refusalMessage(parsed, response.status, text);
      throw new ControlPlaneError(message, response.status);
    }
    if (parsed === null || typeof parsed !== 'object') {
      throw new ControlPlaneError(
        `the control plane at ${url} answered ${method} ${path} with no JSON object (HTTP ${response.status})`,
      );
    }
    return parsed;
  }
}
