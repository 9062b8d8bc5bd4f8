/**
 * The playground's MCP session: the SDK's own Client over Streamable HTTP to the real gateway,
 * authenticated with a short-lived playground key (never the exposure's api_key). Loaded only when
 * the playground opens (a chunk of its own).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Prompt, Resource, Tool } from '@modelcontextprotocol/sdk/types.js';

export type {
  CallToolResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** Pages of a list read at most (of the gateway's pages of 200). */
const MAX_PAGES = 10;

export interface Catalog {
  tools: Tool[];
  resources: Resource[];
  prompts: Prompt[];
  /** Some list had more pages than were read. */
  truncated: boolean;
}

export async function connect(mcpUrl: string, key: string): Promise<Client> {
  const client = new Client({ name: 'bindery-console', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

async function allPages<T>(
  list: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await list(cursor);
    items.push(...answer.items);
    if (!answer.nextCursor) return { items, truncated: false };
    cursor = answer.nextCursor;
  }
  return { items, truncated: true };
}

/** What the session offers: its tools, and its resources and prompts when it serves them. */
export async function catalog(client: Client): Promise<Catalog> {
  const capabilities = client.getServerCapabilities() ?? {};
  const tools = await allPages(async (cursor) => {
    const answer = await client.listTools(cursor ? { cursor } : {});
    return { items: answer.tools, nextCursor: answer.nextCursor };
  });
  const resources = capabilities.resources
    ? await allPages(async (cursor) => {
        const answer = await client.listResources(cursor ? { cursor } : {});
        return { items: answer.resources, nextCursor: answer.nextCursor };
      })
    : { items: [], truncated: false };
  const prompts = capabilities.prompts
    ? await allPages(async (cursor) => {
        const answer = await client.listPrompts(cursor ? { cursor } : {});
        return { items: answer.prompts, nextCursor: answer.nextCursor };
      })
    : { items: [], truncated: false };
  return {
    tools: tools.items,
    resources: resources.items,
    prompts: prompts.items,
    truncated: tools.truncated || resources.truncated || prompts.truncated,
  };
}

export type { Client };
