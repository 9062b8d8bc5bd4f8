/**
 * A small JSON API for the HTTP tool benchmark, in a process of its own so the benchmark's direct
 * calls and the gateway path reach the same server: `GET /items/{id}?q=` answers a small JSON
 * object naming what it received, after `API_DELAY_MS` (0 = at once; a real API takes tens of
 * milliseconds). It checks the key header, as an API would.
 *
 *   API_DELAY_MS=50 tsx support/json-api.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const delayMs = Number(process.env.API_DELAY_MS ?? 0);
const key = process.env.API_KEY ?? '';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const answer = () => {
      if (req.headers['x-api-key'] !== key) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return void res.end('{"error":"bad key"}');
      }
      const url = new URL(req.url ?? '/', 'http://api');
      const body = JSON.stringify({
        id: url.pathname.split('/').at(-1),
        q: url.searchParams.get('q'),
        items: [1, 2, 3],
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
// Keep-alive connections from the control plane and the benchmark stay open between calls.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`Server listening at http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
