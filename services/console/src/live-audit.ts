/**
 * Follows `GET /api/v2/audit/stream`: fetch() with the admin token in the Authorization header (an
 * EventSource cannot send one, and the token never goes in a URL), the body read as it comes and
 * cut into server-sent events. When the stream drops it reconnects with backoff, sending the last
 * event's id as Last-Event-ID so the server sends what was missed meanwhile.
 */
import type { AuditEvent, ErrorBody } from '@bindery/contracts';
import { storedToken, withQuery } from './api.ts';

export interface AuditFilters {
  aei_id?: string;
  tool_name?: string;
  caller?: string;
  status?: string;
}

export type StreamState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; inMs: number; reason: string }
  | { kind: 'error'; message: string };

export interface AuditFollower {
  stop(): void;
  /** The id of the last event received (where a new stream with the same filters resumes). */
  lastEventId(): string | undefined;
}

const BACKOFF_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000];
/** The server sends a keep-alive every 15 s: this long without a byte means the stream is gone. */
const SILENCE_MS = 45_000;

async function messageOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as Partial<ErrorBody>;
    if (body.error?.message) return `${body.error.message} (${body.error.code}, HTTP ${response.status})`;
  } catch {
    // not JSON: the text itself, or the status
  }
  return text.trim() || `HTTP ${response.status}`;
}

/** Parses the complete events in `buffer`; answers them and what is left of it. */
export function parseEvents(buffer: string): {
  events: { event: string; id: string | undefined; data: string }[];
  rest: string;
} {
  const events: { event: string; id: string | undefined; data: string }[] = [];
  let rest = buffer.replace(/\r\n?/g, '\n');
  for (let end = rest.indexOf('\n\n'); end >= 0; end = rest.indexOf('\n\n')) {
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) events.push({ event, id, data: data.join('\n') });
  }
  return { events, rest };
}

export function followAudit(
  filters: AuditFilters,
  resumeAfter: string | undefined,
  handlers: {
    onEvents(events: AuditEvent[]): void;
    onState(state: StreamState): void;
    /** The token was refused: the app logs out. */
    onUnauthorized(): void;
  },
): AuditFollower {
  let last = resumeAfter;
  let stopped = false;
  let attempt = 0;
  let controller: AbortController | undefined;
  let retry: number | undefined;

  const reconnect = (reason: string) => {
    if (stopped) return;
    const base = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
    // A little jitter, so tabs that lost the same server do not all come back in one instant.
    const inMs = Math.round(base * (0.8 + Math.random() * 0.4));
    attempt += 1;
    handlers.onState({ kind: 'reconnecting', inMs, reason });
    retry = window.setTimeout(() => void connect(), inMs);
  };

  const connect = async () => {
    if (stopped) return;
    const mine = new AbortController();
    controller = mine;
    let silence: number | undefined;
    const heard = () => {
      window.clearTimeout(silence);
      silence = window.setTimeout(() => mine.abort(), SILENCE_MS);
    };
    if (attempt === 0) handlers.onState({ kind: 'connecting' });
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      const token = storedToken();
      if (token) headers.authorization = `Bearer ${token}`;
      if (last !== undefined) headers['last-event-id'] = last;
      heard();
      const response = await fetch(withQuery('/api/v2/audit/stream', { ...filters }), {
        headers,
        cache: 'no-store',
        signal: mine.signal,
      });
      if (!response.ok || !response.body) {
        const message = await messageOf(response);
        if (response.status === 401) {
          stopped = true;
          handlers.onUnauthorized();
        } else if (response.status === 429 || response.status >= 500) {
          reconnect(message);
        } else {
          stopped = true;
          handlers.onState({ kind: 'error', message });
        }
        return;
      }
      attempt = 0;
      handlers.onState({ kind: 'live' });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        heard();
        const parsed = parseEvents(buffer + value);
        buffer = parsed.rest;
        const events: AuditEvent[] = [];
        for (const sse of parsed.events) {
          if (sse.event !== 'audit') continue;
          events.push(JSON.parse(sse.data) as AuditEvent);
          if (sse.id !== undefined) last = sse.id;
        }
        if (events.length > 0) handlers.onEvents(events);
      }
      reconnect('the server ended the stream');
    } catch {
      reconnect(mine.signal.aborted ? 'nothing heard from the server for 45 s' : 'the connection was lost');
    } finally {
      window.clearTimeout(silence);
    }
  };

  void connect();
  return {
    stop() {
      stopped = true;
      window.clearTimeout(retry);
      controller?.abort();
    },
    lastEventId: () => last,
  };
}
