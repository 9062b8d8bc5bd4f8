/**
 * The least an HTTP/1.1 client can do, for benchmarks of large answers: one keep-alive connection,
 * one request at a time, the answer's body counted as it arrives and never parsed or copied.
 * Answers must carry a Content-Length (both servers the tools/list benchmark measures send one).
 *
 * Why not undici or node:http: on these 2-core hosts, which the client shares with the servers
 * it measures, reading a 712 KiB answer cost the client about 1 ms of CPU through either (undici's
 * parser runs in WebAssembly and copies the body in and out of it; node:http emits it through a
 * stream), and about 0.3 ms through a plain socket. A heavier client measures itself.
 */
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  /** Bytes of the body. */
  bytes: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export class RawHttpConnection {
  readonly #socket: Socket;
  readonly #host: string;
  #head: Buffer | undefined;
  #status = 0;
  #length = 0;
  /** Body bytes still to come; -1 while the head is being read. */
  #remaining = -1;
  #pending: { resolve(answer: RawAnswer): void; reject(error: Error): void } | undefined;

  private constructor(socket: Socket, host: string) {
    this.#socket = socket;
    this.#host = host;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('the server closed the connection')));
    // An answer that stops arriving fails its request instead of hanging the benchmark.
    socket.setTimeout(30_000, () => {
      this.#fail(new Error('no byte of the answer for 30 s'));
      socket.destroy();
    });
  }

  /** A connection to `url`'s host and port (http only). */
  static open(url: string): Promise<RawHttpConnection> {
    const { hostname, port, host } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => resolve(new RawHttpConnection(socket, host)));
      socket.setNoDelay(true);
      socket.once('error', reject);
    });
  }

  /** POSTs `body` (JSON) to `path` and resolves once the whole answer has arrived. */
  post(path: string, headers: Record<string, string>, body: string): Promise<RawAnswer> {
    if (this.#pending) return Promise.reject(new Error('one request at a time'));
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#socket.write(
        `POST ${path} HTTP/1.1\r\nhost: ${this.#host}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n${lines.join('')}\r\n${body}`,
      );
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  #read(chunk: Buffer): void {
    if (this.#remaining < 0) {
      const head = this.#head ? Buffer.concat([this.#head, chunk]) : chunk;
      const end = head.indexOf(HEADER_END);
      if (end < 0) {
        this.#head = head;
        return;
      }
      this.#head = undefined;
      const text = head.subarray(0, end).toString('latin1');
      const length = /\r\ncontent-length: *(\d+)/i.exec(text)?.[1];
      if (length === undefined) {
        this.#fail(new Error(`an answer without a Content-Length: ${text.slice(0, 200)}`));
        return;
      }
      this.#status = Number(text.slice(9, 12));
      this.#length = Number(length);
      this.#remaining = this.#length - (head.length - end - HEADER_END.length);
    } else {
      this.#remaining -= chunk.length;
    }
    if (this.#remaining === 0) {
      this.#remaining = -1;
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.resolve({ status: this.#status, bytes: this.#length });
    } else if (this.#remaining < 0) {
      this.#fail(new Error('more bytes than the Content-Length said'));
    }
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
  }
}
