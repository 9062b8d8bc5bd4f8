// The CLI `bindery` (packages/bindery-mcp) against a real gateway, with an exposure's api_key:
// its usage and exit codes (0 success, 1 a tool's or the gateway's error, 2 a usage error);
// resources, a resource's contents and prompts over MCP; and over the REST entry the tool list,
// a tool's help with every argument's type (required ones first, then by name), and calls whose
// flags are typed by the input schema (integers, numbers, booleans, arrays by repeating the flag
// or as JSON, objects as JSON, enums; a value starting with "-" as --name=value), or given whole
// with --json; a flag without a value or given twice is a usage error. With a personal key, --caller
// picks the profile. stdout carries only the answer; messages go to stderr.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, twoTableExposure, unusedApiKey, type Exposed, type Stack } from '@bindery/test-support';

const CLI = fileURLToPath(new URL('../bin/bindery.js', import.meta.url));
const CONTEXT = 'bindery://tools/find_customers/context';
const CUSTOMERS = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
];
const ECHO_SCHEMA = {
  type: 'object',
  properties: {
    count: { type: 'integer', description: 'how many', default: 1 },
    ratio: { type: 'number' },
    loud: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' }, description: 'labels\nrepeat the flag for more' },
    ids: { type: 'array', items: { type: 'integer' } },
    options: { type: 'object' },
    mode: { type: 'string', enum: ['fast', 'safe'] },
    note: { type: ['string', 'null'] },
  },
  required: ['count'],
};

let stack: Stack;
let exposed: Exposed;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `bindery ...args` with the exposure's credentials (or `env` instead). */
function bindery(args: string[], env?: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        ...(env ?? { BINDERY_URL: stack.gatewayUrl, BINDERY_KEY: exposed.apiKey }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, exposed.token);
  const echo = await as('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'echo',
    description: 'Answers its arguments.\nA second line that tools does not show.',
    code: 'export default (args) => args',
    input_schema: ECHO_SCHEMA,
  });
  await as('POST', `/api/v2/aeis/${exposed.aeiId}/bindings`, { adi_id: echo.id, tool_name: 'echo' });
  await as('POST', `/api/v2/aeis/${exposed.aeiId}/prompts`, {
    name: 'review_customer',
    description: 'Asks for a review\nof one customer',
    arguments: [{ name: 'customer', required: true }, { name: 'tone' }],
    messages: [{ role: 'user', text: 'Review customer {{customer}} in a {{tone}} tone.' }],
  });
});
afterAll(() => stack?.close());

describe('bindery: usage', () => {
  it('--help prints the usage on stdout (exit 0); no command prints it too, with exit 2', async () => {
    const help = await bindery(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: bindery \[--caller <name>\] <command>/);
    expect(help.stdout).toContain('call <tool> [--name value ...]');
    expect(help.stderr).toBe('');
    const none = await bindery([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe(help.stdout);
  });

  it('usage errors exit 2 with a message and a short usage on stderr', async () => {
    const unknown = await bindery(['tool']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^bindery: unknown command "tool"; did you mean tools\?\nusage: bindery /);
    const caller = await bindery(['--caller', 'Visual Studio', 'tools']);
    expect(caller.code).toBe(2);
    expect(caller.stderr).toContain('"Visual Studio" is not a caller name');
    const noKey = await bindery(['tools'], { BINDERY_URL: stack.gatewayUrl });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('BINDERY_KEY is not set');
    const extra = await bindery(['read']);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('read takes one resource URI');
    const noValue = await bindery(['prompt', 'review_customer', '--customer']);
    expect(noValue.code).toBe(2);
    expect(noValue.stderr).toContain('bindery: --customer needs a value');
  });
});

describe('bindery: resources and prompts (over MCP)', () => {
  it('resources: uri<TAB>name, one per line', async () => {
    const run = await bindery(['resources']);
    expect(run).toEqual({ code: 0, stdout: `${CONTEXT}\tfind_customers\n`, stderr: '' });
  });

  it('read <uri>: the contents, JSON pretty-printed', async () => {
    const run = await bindery(['read', `${CONTEXT}`]);
    expect(run).toEqual({ code: 0, stdout: `${JSON.stringify(CUSTOMERS, null, 2)}\n`, stderr: '' });
    const one = await bindery(['read', `${CONTEXT}/1/name`]);
    expect(one.stdout).toBe('"Grace"\n');
  });

  it('prompts and prompt <name> --arg value: the messages as JSON', async () => {
    const list = await bindery(['prompts']);
    expect(list).toEqual({ code: 0, stdout: 'review_customer\tAsks for a review\n', stderr: '' });
    const run = await bindery(['prompt', 'review_customer', '--customer', 'c-7', '--tone=formal']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      { role: 'user', content: { type: 'text', text: 'Review customer c-7 in a formal tone.' } },
    ]);
  });

  it('the gateway’s refusals exit 1 with its message on stderr', async () => {
    const missing = await bindery(['prompt', 'review_customer']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('needs the argument "customer"');
    const unknownUri = await bindery(['read', 'bindery://tools/nope/context']);
    expect(unknownUri.code).toBe(1);
    const wrongKey = await bindery(['resources'], {
      BINDERY_URL: stack.gatewayUrl,
      BINDERY_KEY: unusedApiKey(),
    });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^bindery: the gateway refused \(HTTP 401\): /);
  });
});

// These need the gateway's REST entry (/api/v2/rest/tools and /tool-calls).
describe('bindery: tools (over the REST entry)', () => {
  it('tools: name<TAB>first line of the description, one per line', async () => {
    const run = await bindery(['tools']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.map((l) => l.split('\t')[0])).toEqual(['find_customers', 'peek_orders', 'echo']);
    expect(lines[2]).toBe('echo\tAnswers its arguments.');
    for (const line of lines) expect(line.split('\t')).toHaveLength(2);
  });

  it('help <tool>: the description and every argument with its type', async () => {
    const run = await bindery(['help', 'echo']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      [
        'echo',
        '',
        'Answers its arguments.',
        'A second line that tools does not show.',
        '',
        'Arguments:',
        '  --count    integer, required, default 1',
        '             how many',
        '  --ids      array<integer>, optional',
        '  --loud     boolean, optional',
        '  --mode     one of fast|safe, optional',
        '  --note     string or null, optional',
        '  --options  object, optional',
        '  --ratio    number, optional',
        '  --tags     array<string>, optional',
        '             labels',
        '             repeat the flag for more',
        '',
      ].join('\n'),
    );
  });

  it('help of an unknown tool: exit 2 naming the close ones', async () => {
    const run = await bindery(['help', 'find_customer']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('unknown tool "find_customer"; did you mean find_customers?');
  });

  it('call: flags typed by the input schema; the result as JSON on stdout', async () => {
    const run = await bindery([
      'call',
      'echo',
      '--count',
      '3',
      '--ratio=0.5',
      '--loud',
      '--tags',
      'a',
      '--tags',
      'b c',
      '--ids',
      '[1, 2]',
      '--options',
      '{"deep": {"x": true}}',
      '--mode',
      'safe',
      '--note',
      'null',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const expected = {
      count: 3,
      ratio: 0.5,
      loud: true,
      tags: ['a', 'b c'],
      ids: [1, 2],
      options: { deep: { x: true } },
      mode: 'safe',
      note: null,
    };
    expect(JSON.parse(run.stdout)).toEqual(expected);
    expect(run.stdout).toBe(`${JSON.stringify(JSON.parse(run.stdout), null, 2)}\n`);
    const json = await bindery(['call', 'echo', '--json', JSON.stringify(expected)]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(expected);
    const counted = await bindery(['call', 'find_customers', '--query', 'length(@)']);
    expect(counted).toEqual({ code: 0, stdout: '2\n', stderr: '' });
    // A value that starts with "-" goes as --name=value.
    const negative = await bindery(['call', 'echo', '--count=-2', '--ratio=-0.5', '--loud=false']);
    expect(JSON.parse(negative.stdout)).toEqual({ count: -2, ratio: -0.5, loud: false });
  });

  it('call: a flag the schema lacks, a value of the wrong type or a missing required one is a usage error', async () => {
    for (const [args, message] of [
      [['--count', '1', '--colour', 'red'], 'echo has no argument "colour"'],
      [['--count', 'three'], '--count expects an integer, not "three"'],
      [['--count', '1', '--loud', 'yes'], '--loud expects true or false, not "yes"'],
      [['--count', '1', '--mode', 'slow'], '--mode expects one of fast|safe, not "slow"'],
      [['--count', '1', '--options', '[1]'], '--options expects a JSON object'],
      [['--ratio', '2'], 'echo needs --count'],
      [['--json', '{"count": 1}', '--loud'], '--json takes the whole arguments object'],
      [['--count'], '--count needs a value (integer)'],
      [['--count', '-2'], 'one that starts with "-" goes as --count=<value>'],
      [['--count', '1', '--count', '2'], '--count is given twice'],
      [['--count', '1', 'loose'], 'unexpected "loose": arguments are given as --name value'],
    ] as const) {
      const run = await bindery(['call', 'echo', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(message);
    }
    const unknown = await bindery(['call', 'echos', '--count', '1']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('did you mean echo?');
  });

  it("call: a tool's failure exits 1 with code: message on stderr", async () => {
    const run = await bindery(['call', 'find_customers', '--query', '[?']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^INVALID_QUERY: .+\n$/);
  });

  it('a refused key exits 1 with the gateway’s message', async () => {
    const run = await bindery(['tools'], { BINDERY_URL: stack.gatewayUrl, BINDERY_KEY: unusedApiKey() });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^bindery: GET \/api\/v2\/rest\/tools: UNAUTHORIZED: /);
  });
});

// Needs the caller entry (personal keys, the caller map) and the REST entry, being added alongside.
describe('bindery with a personal key: --caller picks the profile', () => {
  let env: Record<string, string>;

  beforeAll(async () => {
    const key = (await stack.admin('POST', '/api/v2/mcp-keys', { name: 'shell' }, exposed.token)).key;
    await stack.admin('PUT', '/api/v2/callers/claude', { aei_id: exposed.aeiId }, exposed.token);
    env = { BINDERY_URL: stack.gatewayUrl, BINDERY_KEY: key };
  });

  it('tools and call: the mapped caller’s profile over REST; without --caller the default profile', async () => {
    const mapped = await bindery(['--caller', 'claude', 'tools'], env);
    expect(mapped.code).toBe(0);
    expect(mapped.stdout.split('\n').map((l) => l.split('\t')[0])).toEqual([
      'find_customers',
      'peek_orders',
      'echo',
      '',
    ]);
    const called = await bindery(['--caller=claude', 'call', 'find_customers', '--query', 'length(@)'], env);
    expect(called).toEqual({ code: 0, stdout: '2\n', stderr: '' });
    // The default profile: none of this exposure's tools.
    const unmapped = await bindery(['tools'], env);
    expect(unmapped.code).toBe(0);
    expect(unmapped.stdout).not.toContain('find_customers');
  });

  it('resources over MCP: the caller entry of the mapped caller (--caller after the command too)', async () => {
    const run = await bindery(['resources', '--caller', 'claude'], env);
    expect(run).toEqual({ code: 0, stdout: `${CONTEXT}\tfind_customers\n`, stderr: '' });
  });
});
