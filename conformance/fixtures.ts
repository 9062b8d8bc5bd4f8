/**
 * The conformance suite's tools, as Bindery custom tools (JavaScript run in Bindery's sandbox), and
 * what each must answer (the suite's scenario descriptions, `list --server --verbose`).
 */

// A 1x1 PNG and a tiny WAV, base64.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=';

const tool = (name: string, description: string, body: string, properties: Record<string, unknown> = {}) => ({
  kind: 'custom',
  name,
  description,
  code: `export default async function (args, ctx) {\n${body}\n}\n`,
  input_schema: { type: 'object', properties },
});

export const CUSTOM_TOOLS = [
  tool(
    'test_simple_text',
    'Returns simple text content',
    `return { content: [{ type: 'text', text: 'This is a simple text response for testing.' }] };`,
  ),
  tool(
    'test_image_content',
    'Returns image content',
    `return { content: [{ type: 'image', data: '${PNG}', mimeType: 'image/png' }] };`,
  ),
  tool(
    'test_audio_content',
    'Returns audio content',
    `return { content: [{ type: 'audio', data: '${WAV}', mimeType: 'audio/wav' }] };`,
  ),
  tool(
    'test_embedded_resource',
    'Returns an embedded resource',
    `return { content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] };`,
  ),
  tool(
    'test_multiple_content_types',
    'Returns text, image and resource content',
    `return { content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: '${PNG}', mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
    ] };`,
  ),
  tool(
    'test_error_handling',
    'Returns an error',
    `return { isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] };`,
  ),
  tool(
    'test_tool_with_progress',
    'Reports progress',
    `for (const done of [0, 50, 100]) {
      ctx.progress(done, 100);
      if (typeof setTimeout === 'function') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { content: [{ type: 'text', text: 'Progress complete' }] };`,
  ),
  tool(
    'test_tool_with_logging',
    'Sends log messages',
    `for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
      ctx.log('info', data);
      if (typeof setTimeout === 'function') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { content: [{ type: 'text', text: 'Logging complete' }] };`,
  ),
];
