// Acceptance: the MCP Inspector's CLI (`mcp-inspector-cli --cli <url> --transport http --method
// tools/list`, the command `npx @modelcontextprotocol/inspector --cli` runs) lists an AEI's tools
// through the real gateway, each with its title and its annotations (readOnlyHint and the rest),
// and calls one. The CLI runs as a child process in its own process group, killed with the group
// when it overruns its deadline and in any case when the test ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const CLI = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/inspector-cli/build/cli.js', import.meta.url),
);
const DEADLINE_MS = 30_000;

let stack: Stack;
let exposed: Exposed;
const running = new Set<ChildProcess>();

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
});
afterEach(() => {
  for (const child of running) reap(child);
});
afterAll(() => stack.close());

/** Kills the CLI and whatever it started (it runs its client as a child of its own). */
function reap(child: ChildProcess): void {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  running.delete(child);
}

/** Runs the CLI with `args`; its exit code and output, or a rejection after the deadline. */
function inspector(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--cli', ...args], {
      // The CLI reads its own package.json as `../package.json` from its working directory.
      cwd: dirname(CLI),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      reap(child);
      reject(new Error(`the inspector CLI did not finish within ${DEADLINE_MS} ms:\n${stdout}\n${stderr}`));
    }, DEADLINE_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reap(child);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reap(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON document the CLI printed on stdout. */
function printed(stdout: string): Json {
  return JSON.parse(stdout.slice(stdout.indexOf('{')));
}

describe('MCP Inspector CLI', () => {
  it('lists tools with titles and annotations', { timeout: DEADLINE_MS + 10_000 }, async () => {
    const url = `${stack.gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`;
    const run = await inspector([url, '--transport', 'http', '--method', 'tools/list']);
    expect(run.code, run.stderr).toBe(0);
    const tools: Json[] = printed(run.stdout).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(['find_customers', 'peek_orders']);
    for (const tool of tools) {
      expect(tool.title, tool.name).toEqual(expect.any(String));
      expect(tool.title.length, tool.name).toBeGreaterThan(3);
      expect(tool.annotations, tool.name).toMatchObject({
        title: tool.title,
        readOnlyHint: true,
        openWorldHint: false,
      });
      expect(tool.inputSchema).toMatchObject({ type: 'object' });
    }
  });

  it(
    'calls a tool with the key in a header on the bearer route',
    { timeout: DEADLINE_MS + 10_000 },
    async () => {
      const run = await inspector([
        `${stack.gatewayUrl}/api/v2/mcp/server`,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${exposed.apiKey}`,
        '--method',
        'tools/call',
        '--tool-name',
        'find_customers',
        '--tool-arg',
        'query=[1].name',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const result = printed(run.stdout);
      expect(result.isError).toBeUndefined();
      expect(result.content[0].text).toContain('Grace');
    },
  );
});
