/**
 * The conformance suite's resources and prompts, as an upstream MCP server (stdio) a Bindery
 * exposure attaches: Bindery's own resources are its contexts (`bindery://` URIs) and its prompts
 * are templates, so the suite's `test://` resources and its prompts with images and embedded
 * resources come through an attached server, as any upstream's do. Values as the suite's scenario
 * descriptions give them (`list --server --verbose`).
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

// A 1x1 PNG.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const server = new McpServer({ name: 'conformance-fixtures', version: '1.0.0' });

// Bindery lists an upstream's tools; this one is not exposed (the exposure's tools are its own).
server.registerTool('unused', { description: 'Not exposed' }, () => ({ content: [] }));

server.registerResource(
  'static-text',
  'test://static-text',
  { description: 'A static text resource', mimeType: 'text/plain' },
  async (uri) => ({
    contents: [
      { uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
    ],
  }),
);
server.registerResource(
  'static-binary',
  'test://static-binary',
  { description: 'A static binary resource', mimeType: 'image/png' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] }),
);
server.registerResource(
  'watched-resource',
  'test://watched-resource',
  { description: 'A resource that can be subscribed to', mimeType: 'text/plain' },
  async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }],
  }),
);
server.registerResource(
  'template',
  new ResourceTemplate('test://template/{id}/data', { list: undefined }),
  { description: 'A resource template', mimeType: 'application/json' },
  async (uri, { id }) => ({
    contents: [
      {
        uri: uri.href,
        mimeType: 'application/json',
        text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }),
      },
    ],
  }),
);

// The text prompts (test_simple_prompt, test_prompt_with_arguments) are the exposure's own
// prompt templates (fixtures.ts); these two need content a template cannot hold.
server.registerPrompt(
  'test_prompt_with_embedded_resource',
  { description: 'A prompt with an embedded resource', argsSchema: { resourceUri: z.string() } },
  ({ resourceUri }) => ({
    messages: [
      {
        role: 'user',
        content: {
          type: 'resource',
          resource: {
            uri: resourceUri,
            mimeType: 'text/plain',
            text: 'Embedded resource content for testing.',
          },
        },
      },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }),
);
server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
  messages: [
    { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
    { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
  ],
}));

// Subscriptions (the suite's resources-subscribe and -unsubscribe): what is subscribed is tracked,
// and a change to the watched resource would be announced to it (none happens during the suite).
const subscribed = new Set();
server.server.registerCapabilities({ resources: { subscribe: true } });
server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
  subscribed.add(request.params.uri);
  return {};
});
server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
  subscribed.delete(request.params.uri);
  return {};
});

await server.connect(new StdioServerTransport());
