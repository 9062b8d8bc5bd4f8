// Pins that the trees served from disk (the console under /console/, the docs' assets under
// /docs/static/) give nothing outside them and fail quietly: a path climbing out with `..`, as
// sent or percent-encoded, is a 404 with the one error body and discloses no file; a Range past a
// file's end or a failed If-Match is the caller's 4xx; none of them logs at error level.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { rawRequest } from './support/raw-request.ts';

let root: string;
let t: TestApp;
const logged: { level: number; msg?: string }[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bindery-console-'));
  const build = join(root, 'dist');
  await mkdir(join(build, 'assets'), { recursive: true });
  await writeFile(join(build, 'index.html'), '<!doctype html><title>console</title>');
  await writeFile(join(build, 'assets', 'app-1.js'), 'console.log("console");');
  // A file beside the build: what a climbing path would reach.
  await writeFile(join(root, 'outside.txt'), 'outside the build');
  t = await startTestApp({
    consoleDir: build,
    logStream: { write: (line) => logged.push(JSON.parse(line) as { level: number; msg?: string }) },
  });
});
beforeEach(() => {
  logged.length = 0;
});
afterAll(async () => {
  await t?.close();
  await rm(root, { recursive: true, force: true });
});

/** Pino's error level: a line at it (or above) pages someone. */
const ERROR_LEVEL = 50;

describe('static paths with ..', () => {
  const climbing = [
    '/console/../../etc/passwd',
    '/console/%2e%2e/%2e%2e/etc/passwd',
    '/console/..%2f..%2fetc/passwd',
    '/console/..%5c..%5cetc%5cpasswd',
    '/console/assets/../../outside.txt',
    '/console/..',
    '/console/%2E%2E/outside.txt?x=1',
    '/docs/static/..%2f..%2fpackage.json',
    '/docs/static/../../package.json',
    '/docs/static/%2e%2e/%2e%2e/package.json',
    '/docs/static/..',
  ];

  it.each(climbing)('%s is a 404 with the error body, and nothing logged at error level', async (path) => {
    const answer = await rawRequest(t.baseUrl, { method: 'GET', path });
    expect(answer.status).toBe(404);
    const body = JSON.parse(answer.text) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 'NOT_FOUND', request_id: expect.any(String) });
    expect(body.error.message).toEqual(expect.stringContaining('no file'));
    expect(answer.text).not.toContain('root:');
    expect(answer.text).not.toContain('outside the build');
    expect(answer.text).not.toContain('"dependencies"');
    expect(logged.filter((line) => line.level >= ERROR_LEVEL)).toEqual([]);
  });

  it('files inside the trees are still served', async () => {
    expect((await rawRequest(t.baseUrl, { method: 'GET', path: '/console/assets/app-1.js' })).status).toBe(
      200,
    );
    expect((await rawRequest(t.baseUrl, { method: 'GET', path: '/docs/static/swagger-ui.css' })).status).toBe(
      200,
    );
    // A name with dots that is not a `..` segment is an ordinary (missing) asset.
    expect((await rawRequest(t.baseUrl, { method: 'GET', path: '/console/assets/..app.js' })).status).toBe(
      404,
    );
  });
});

describe("the file sender's refusals", () => {
  it('a Range past the end is a 400 and a failed If-Match a 412, with the error body', async () => {
    for (const path of ['/console/assets/app-1.js', '/docs/static/swagger-ui.css']) {
      const range = await rawRequest(t.baseUrl, {
        method: 'GET',
        path,
        headers: { range: 'bytes=99999999-' },
      });
      expect(range.status, path).toBe(400);
      expect(JSON.parse(range.text).error.code, path).toBe('VALIDATION_FAILED');
      const ifMatch = await rawRequest(t.baseUrl, {
        method: 'GET',
        path,
        headers: { 'if-match': '"other"' },
      });
      expect(ifMatch.status, path).toBe(412);
      expect(JSON.parse(ifMatch.text).error.code, path).toBe('PRECONDITION_FAILED');
    }
    expect(logged.filter((line) => line.level >= ERROR_LEVEL)).toEqual([]);
  });
});
