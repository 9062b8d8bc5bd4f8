/**
 * A reference point for the gateway and HTTP tool benchmarks: the least a Node.js HTTP hop can do.
 * It forwards every request (method, path, authorization, an API key header, body) to
 * `UPSTREAM_URL` over an undici keep-alive pool and sends the answer back, with no parsing,
 * checks, cache or metrics. What it adds to a call is the floor any Node.js proxy pays on the
 * machine at hand; what the gateway adds above it is the gateway's own work.
 *
 *   UPSTREAM_URL=http://127.0.0.1:4000 tsx support/reference-proxy.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const upstream = process.env.UPSTREAM_URL;
if (!upstream) throw new Error('set UPSTREAM_URL');
const pool = new Pool(upstream, { connections: 128 });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    pool
      .request({
        method: req.method as 'GET' | 'POST',
        path: req.url ?? '/',
        headers: {
          ...(req.headers.authorization && { authorization: req.headers.authorization }),
          ...(req.headers['content-type'] && { 'content-type': req.headers['content-type'] }),
          ...(req.headers['x-api-key'] && { 'x-api-key': req.headers['x-api-key'] }),
        },
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      })
      .then(async (answer) => {
        const body = await answer.body.text();
        res.writeHead(answer.statusCode, { 'content-type': 'application/json' });
        res.end(body);
      })
      .catch((error: unknown) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`Server listening at http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => server.close(() => void pool.close().then(() => process.exit(0))));
