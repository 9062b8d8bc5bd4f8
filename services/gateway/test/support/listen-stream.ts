/**
 * A modern `subscriptions/listen` stream opened by hand against a gateway, read as its events come:
 * the messages so far, a wait for the next one that matches, and the raw text (a refusal is a JSON
 * body, not events).
 */
import { request, type IncomingMessage } from 'node:http';

const VERSION = '2026-07-28';

/** A JSON-RPC message read off the stream. */
export interface Message {
  jsonrpc?: string;
  id?: string | number;
  method?: string;
  // Read as the tests read them: whatever the message carries.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  params?: Record<string, any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  result?: Record<string, any>;
}

export interface Stream {
  res: IncomingMessage;
  messages: Message[];
  /** Everything the answer's body held so far. */
  readonly text: string;
  /** Settles when the answer ends (a refusal at once, a stream when closed). */
  ended: Promise<void>;
  /** The first message after `from` (an index into messages) that `match` accepts. */
  next(match: (m: Message) => boolean, from?: number, timeoutMs?: number): Promise<Message>;
  close(): void;
}

/**
 * Opens a listen stream on `path` asking for `notifications`, as a client of `capabilities`
 * (none by default) would; `headers` go with it (a bearer key, say).
 */
export function openListen(
  gatewayUrl: string,
  path: string,
  id: string | number,
  notifications: Record<string, unknown>,
  options: { capabilities?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<Stream> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': VERSION,
        'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {},
      },
    },
  });
  const { port } = new URL(gatewayUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: {
          ...options.headers,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': String(Buffer.byteLength(body)),
          'mcp-protocol-version': VERSION,
          'mcp-method': 'subscriptions/listen',
        },
      },
      (res) => {
        const messages: Message[] = [];
        const waiters: (() => void)[] = [];
        let buffer = '';
        let text = '';
        const ended = new Promise<void>((settle) => {
          res.once('end', settle);
          res.once('close', settle);
        });
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          text += chunk;
          let end;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block.split('\n').find((line) => line.startsWith('data: '));
            if (data) messages.push(JSON.parse(data.slice(6)));
          }
          for (const wake of waiters.splice(0)) wake();
        });
        resolve({
          res,
          messages,
          get text() {
            return text;
          },
          ended,
          next(match, from = 0, timeoutMs = 5_000) {
            return new Promise((found, fail) => {
              const timer = setTimeout(
                () => fail(new Error(`no matching event within ${timeoutMs} ms`)),
                timeoutMs,
              );
              const check = () => {
                const hit = messages.slice(from).find(match);
                if (hit) {
                  clearTimeout(timer);
                  found(hit);
                } else waiters.push(check);
              };
              check();
            });
          },
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
