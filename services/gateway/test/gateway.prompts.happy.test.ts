// An AEI's prompt templates through the real gateway to the SDK Client: the capabilities declare
// prompts (with listChanged) and completions; prompts/list pages them by name; prompts/get fills
// the placeholders in and refuses a missing required argument with -32602 naming it, and unknown
// prompts or arguments with -32602 too; completion/complete offers an argument's declared choices;
// an admin change to the prompts reaches open sessions as prompts/list_changed, a change to
// something else does not; a cursor from before an admin change is -32602 telling the client to
// list again, and the fresh listing is whole.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ErrorCode,
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let path: string;

const PAGE = 200;
const REVIEW = {
  name: 'review_customer',
  title: 'Review a customer',
  description: 'Asks for a review of one customer in a tone',
  arguments: [
    { name: 'customer', description: 'the customer id', required: true },
    { name: 'tone', choices: ['friendly', 'formal', 'blunt', 'very formal'] },
  ],
  messages: [
    { role: 'user', text: 'Review customer {{customer}} in a {{ tone }} tone.' },
    { role: 'assistant', text: 'Reading {{customer}} first.' },
  ],
};

const admin = (method: string, url: string, body?: unknown) => stack.admin(method, url, body, exposed.token);
const promptsUrl = () => `/api/v2/aeis/${exposed.aeiId}/prompts`;

async function refusal(request: Promise<unknown>): Promise<McpError> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
  return error as McpError;
}

/** Counts the client's prompts/list_changed and tools/list_changed notifications. */
function countNotifications(client: Client) {
  const seen = { prompts: 0, tools: 0 };
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
    seen.prompts += 1;
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    seen.tools += 1;
  });
  return seen;
}

async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { TOOLS_PAGE_SIZE: String(PAGE) } });
  exposed = await twoTableExposure(stack);
  path = `/api/v2/mcp/server/${exposed.apiKey}`;
  await admin('POST', promptsUrl(), REVIEW);
});
afterAll(() => stack.close());

describe('prompts of an AEI', () => {
  it('are declared in the capabilities and listed with their arguments', async () => {
    const client = await stack.connect(path);
    expect(client.getServerCapabilities()).toMatchObject({ prompts: { listChanged: true }, completions: {} });
    const listed = await client.listPrompts();
    expect(listed).toEqual({
      prompts: [
        {
          name: REVIEW.name,
          title: REVIEW.title,
          description: REVIEW.description,
          arguments: [
            { name: 'customer', description: 'the customer id', required: true },
            { name: 'tone', required: false },
          ],
        },
      ],
    });
  });

  it('prompts/get fills in both arguments, and an absent optional one as nothing', async () => {
    const client = await stack.connect(path);
    const got = await client.getPrompt({
      name: REVIEW.name,
      arguments: { customer: 'c-7', tone: 'friendly' },
    });
    expect(got).toEqual({
      description: REVIEW.description,
      messages: [
        { role: 'user', content: { type: 'text', text: 'Review customer c-7 in a friendly tone.' } },
        { role: 'assistant', content: { type: 'text', text: 'Reading c-7 first.' } },
      ],
    });
    // A value is inserted as it is, never read for placeholders itself.
    const literal = await client.getPrompt({ name: REVIEW.name, arguments: { customer: '{{tone}}' } });
    expect(literal.messages[0]?.content).toEqual({
      type: 'text',
      text: 'Review customer {{tone}} in a  tone.',
    });
  });

  it('refuses a missing required argument, an unknown one and an unknown prompt with -32602', async () => {
    const client = await stack.connect(path);
    const missing = await refusal(client.getPrompt({ name: REVIEW.name, arguments: { tone: 'blunt' } }));
    expect(missing.message).toContain('needs the argument "customer"');
    expect(missing.data).toEqual({ missing_arguments: ['customer'] });
    const unknown = await refusal(
      client.getPrompt({ name: REVIEW.name, arguments: { customer: 'x', mood: 'y' } }),
    );
    expect(unknown.message).toContain('has no argument "mood"; its arguments: customer, tone');
    const typo = await refusal(client.getPrompt({ name: 'review_customers', arguments: {} }));
    expect(typo.message).toContain('unknown prompt "review_customers"; did you mean "review_customer"?');
    const huge = await refusal(
      client.getPrompt({ name: REVIEW.name, arguments: { customer: 'x'.repeat(70_000) } }),
    );
    expect(huge.message).toContain('more than the 65536 allowed');
  });

  it('completion/complete offers the declared choices, those starting with the typed text first', async () => {
    const client = await stack.connect(path);
    const complete = (value: string, name = 'tone') =>
      client.complete({ ref: { type: 'ref/prompt', name: REVIEW.name }, argument: { name, value } });
    expect((await complete('f')).completion).toEqual({
      values: ['friendly', 'formal', 'very formal'],
      total: 3,
      hasMore: false,
    });
    expect((await complete('FORM')).completion.values).toEqual(['formal', 'very formal']);
    expect((await complete('', 'customer')).completion.values).toEqual([]);
    await refusal(complete('x', 'nope'));
  });

  it('an admin change to the prompts reaches open sessions as prompts/list_changed; other changes do not', async () => {
    const client = await stack.connect(path);
    const seen = countNotifications(client);
    await client.listPrompts();
    // A change to a binding: the tool list changed, the prompts did not.
    await admin('PATCH', `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`, {
      tool_description: 'peek at orders, described anew',
    });
    await until('tools/list_changed', () => seen.tools === 1);
    // Its prompts check runs after the tools' notification: give it time to (wrongly) announce.
    await client.listPrompts();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.prompts).toBe(0);
    const added = await admin('POST', promptsUrl(), {
      name: 'hello',
      messages: [{ role: 'user', text: 'Hello!' }],
    });
    await until('prompts/list_changed', () => seen.prompts === 1);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['hello', REVIEW.name]);
    await admin('DELETE', `${promptsUrl()}/${added.id}`);
    await until('a second prompts/list_changed', () => seen.prompts === 2);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual([REVIEW.name]);
  });
});

describe('pagination of prompts', () => {
  it('pages of 200 by name in a stable order; a cursor from before a change is refused; the new listing is whole', async () => {
    const names = Array.from({ length: 2 * PAGE + 50 }, (_, i) => `p_${String(i).padStart(4, '0')}`);
    for (const name of names)
      await admin('POST', promptsUrl(), { name, messages: [{ role: 'user', text: name }] });
    const client = await stack.connect(path);
    const listAll = async () => {
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listPrompts(cursor === undefined ? {} : { cursor });
        pages.push(page.prompts.map((p) => p.name));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return pages;
    };
    const pages = await listAll();
    expect(pages.map((p) => p.length)).toEqual([PAGE, PAGE, 51]);
    expect(pages.flat()).toEqual([...names, REVIEW.name]);
    expect(await listAll()).toEqual(pages);

    const first = await client.listPrompts();
    const second = await client.listPrompts({ cursor: first.nextCursor! });
    await admin('POST', promptsUrl(), { name: 'p_new', messages: [{ role: 'user', text: 'new' }] });
    // The gateway hears of the change before the admin's answer: the next page is refused.
    const stale = await refusal(client.listPrompts({ cursor: second.nextCursor! }));
    expect(stale.message).toMatch(
      /the list changed since this cursor was handed out .*list again without a cursor/,
    );
    const fresh = (await listAll()).flat();
    expect(fresh).toEqual([...names, 'p_new', REVIEW.name]);
    await refusal(client.listPrompts({ cursor: 'bm90LWEtY3Vyc29y' }));
  });
});
