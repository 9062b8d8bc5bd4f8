/**
 * A reference point for the tools/list benchmark: a bare Node.js server that answers each POST
 * with the bytes of a file of `ANSWER_DIR` (`POST /direct.json` answers `ANSWER_DIR/direct.json`),
 * all read once at start, with no parsing, checks or work of any kind. What a list costs through
 * it is what moving those bytes over HTTP costs on the machine at hand, with the same client; what
 * the gateway costs above it is the gateway's own work.
 *
 *   ANSWER_DIR=/tmp/answers tsx support/static-answer.ts
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const dir = process.env.ANSWER_DIR;
if (!dir) throw new Error('set ANSWER_DIR');
const answers = new Map(readdirSync(dir).map((name) => [`/${name}`, readFileSync(join(dir, name))]));

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const answer = answers.get(req.url ?? '');
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    res.end(answer);
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`Server listening at http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
