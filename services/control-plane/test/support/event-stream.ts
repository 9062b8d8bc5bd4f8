/**
 * A client of `GET /api/v2/audit/stream` as the console is one: fetch() with the admin token in
 * the Authorization header, the body read as it comes and cut into server-sent events.
 */
import type { AuditEvent } from '@bindery/contracts';
import { Agent, fetch } from 'undici';

export interface ServerSentEvent {
  event: string;
  id: string | undefined;
  data: string;
}

export interface OpenStream {
  status: number;
  headers: Headers;
  /** The answer's body when it is not a stream (an error). */
  // Error bodies are arbitrary JSON; tests assert the fields they care about.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  error: any;
  /** The next audit event, or an error when none comes within `timeoutMs`. */
  next(timeoutMs?: number): Promise<AuditEvent & { sse_id: string | undefined }>;
  /** Resolves to true when no audit event comes within `ms` (and keeps any that does for next()). */
  quiet(ms: number): Promise<boolean>;
  /** Comment lines received so far (": keep-alive" and the like), without the colon. */
  comments: string[];
  close(): void;
}

export async function openStream(
  baseUrl: string,
  token: string,
  query: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  const controller = new AbortController();
  const search = new URLSearchParams(query).toString();
  // A connection of its own, closed with the stream: an aborted stream leaves none open behind it
  // in a shared pool (the app's close would wait for it).
  const agent = new Agent({ connections: 1 });
  const res = await fetch(`${baseUrl}/api/v2/audit/stream${search ? `?${search}` : ''}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
    signal: controller.signal,
    dispatcher: agent,
  });
  const comments: string[] = [];
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const text = await res.text();
    await agent.close();
    return {
      status: res.status,
      headers: res.headers,
      error: text ? JSON.parse(text) : undefined,
      next: () => Promise.reject(new Error(`no stream: ${res.status} ${text}`)),
      quiet: () => Promise.resolve(true),
      comments,
      close: () => {},
    };
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const events: ServerSentEvent[] = [];
  let pending: ReturnType<typeof reader.read> | undefined;
  let ended = false;

  /** Reads until an event is buffered or `deadline` passes; false when none came. */
  async function fill(deadline: number): Promise<boolean> {
    while (events.length === 0) {
      if (ended) throw new Error('the stream ended');
      const left = deadline - Date.now();
      if (left <= 0) return false;
      if (!pending) {
        pending = reader.read();
        // Closing the stream rejects a read left waiting: that is no failure.
        pending.catch(() => {});
      }
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        pending,
        new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), left))),
      ]);
      clearTimeout(timer);
      if (chunk === undefined) return false;
      pending = undefined;
      if (chunk.done) {
        ended = true;
        continue;
      }
      buffer += chunk.value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) comments.push(line.slice(1).trim());
          else {
            const colon = line.indexOf(':');
            fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
          }
        }
        if (fields.data !== undefined) {
          events.push({ event: fields.event ?? 'message', id: fields.id, data: fields.data });
        }
      }
    }
    return true;
  }

  return {
    status: res.status,
    headers: res.headers,
    error: undefined,
    comments,
    async next(timeoutMs = 2_000) {
      if (!(await fill(Date.now() + timeoutMs))) throw new Error(`no audit event within ${timeoutMs} ms`);
      const sse = events.shift()!;
      if (sse.event !== 'audit') throw new Error(`unexpected event ${sse.event}`);
      return { ...(JSON.parse(sse.data) as AuditEvent), sse_id: sse.id };
    },
    async quiet(ms) {
      return !(await fill(Date.now() + ms));
    },
    close() {
      controller.abort();
      reader.cancel().catch(() => {});
      agent.destroy().catch(() => {});
    },
  };
}
