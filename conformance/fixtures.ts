/**
 * The conformance suite's tools, as Bindery custom tools (JavaScript run in Bindery's sandbox), and
 * what each must answer (the suite's scenario descriptions, `list --server --verbose`).
 */

// A 1x1 PNG and a tiny WAV, base64.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=';

const tool = (
  name: string,
  description: string,
  body: string,
  properties: Record<string, unknown> = {},
  required: string[] = [],
) => ({
  kind: 'custom',
  name,
  description,
  code: `export default async function (args, ctx) {\n${body}\n}\n`,
  input_schema: { type: 'object', properties, ...(required.length > 0 && { required }) },
});

const NAME = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
const text = (expression: string) => `return { content: [{ type: 'text', text: ${expression} }] };`;
const USER_MESSAGE = (prompt: string, maxTokens: number) =>
  `{ messages: [{ role: 'user', content: { type: 'text', text: ${prompt} } }], maxTokens: ${maxTokens} }`;
// What the elicitation scenarios of the 2025-11-25 suite ask for (SEP-1034 defaults, SEP-1330 enums).
const DEFAULTS_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', default: 'John Doe' },
    age: { type: 'integer', default: 30 },
    score: { type: 'number', default: 95.5 },
    status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', default: true },
  },
};
const ENUMS_SCHEMA = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
};
const ELICITED = `'Elicitation completed: action=' + answer.action + ', content=' + JSON.stringify(answer.content ?? {})`;

// The input schema the json-schema-2020-12 scenario looks for (SEP-1613, SEP-2106): listed as
// written, `$schema`, `$defs`, `$anchor`, composition and conditional keywords included.
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

export const CUSTOM_TOOLS = [
  {
    ...tool('json_schema_2020_12_tool', 'Takes arguments described in JSON Schema 2020-12', text(`'ok'`)),
    input_schema: JSON_SCHEMA_2020_12,
  },
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
  // Asking the client (ctx.elicit, ctx.sample, ctx.roots): a legacy session is asked on the call's
  // stream; a modern client is answered input_required and retries with its answers.
  tool(
    'test_sampling',
    'Asks the client for LLM sampling',
    `const answer = await ctx.sample(${USER_MESSAGE('args.prompt', 100)});
    ${text("'LLM response: ' + answer.content.text")}`,
    { prompt: { type: 'string' } },
    ['prompt'],
  ),
  tool(
    'test_elicitation',
    'Asks the user for input',
    `const answer = await ctx.elicit(args.message, ${JSON.stringify({
      type: 'object',
      properties: {
        username: { type: 'string', description: "User's response" },
        email: { type: 'string', description: "User's email address" },
      },
      required: ['username', 'email'],
    })});
    ${text("'User response: action=' + answer.action + ', content=' + JSON.stringify(answer.content ?? {})")}`,
    { message: { type: 'string' } },
    ['message'],
  ),
  tool(
    'test_elicitation_sep1034_defaults',
    'Asks with default values of every primitive type',
    `const answer = await ctx.elicit('Please review and update the form fields with defaults', ${JSON.stringify(DEFAULTS_SCHEMA)});
    ${text(ELICITED)}`,
  ),
  tool(
    'test_elicitation_sep1330_enums',
    'Asks with every enum form',
    `const answer = await ctx.elicit('Please select options from the enum fields', ${JSON.stringify(ENUMS_SCHEMA)});
    ${text(ELICITED)}`,
  ),
  tool(
    'test_input_required_result_elicitation',
    'Asks for a name (MRTR)',
    `const answer = await ctx.elicit('What is your name?', ${JSON.stringify(NAME)}, { key: 'user_name' });
    ${text("'Hello, ' + (answer.content ? answer.content.name : 'stranger') + '!'")}`,
  ),
  tool(
    'test_input_required_result_sampling',
    'Asks the client’s model (MRTR)',
    `const answer = await ctx.sample(${USER_MESSAGE("'What is the capital of France?'", 100)}, { key: 'capital_question' });
    ${text('answer.content.text')}`,
  ),
  tool(
    'test_input_required_result_list_roots',
    'Asks for the client’s roots (MRTR)',
    `const roots = await ctx.roots({ key: 'client_roots' });
    ${text("'Roots: ' + roots.map((root) => root.uri).join(', ')")}`,
  ),
  tool(
    'test_input_required_result_request_state',
    'Asks for a confirmation; the retry’s state is checked (MRTR)',
    `const answer = await ctx.elicit('Please confirm', ${JSON.stringify({
      type: 'object',
      properties: { ok: { type: 'boolean' } },
      required: ['ok'],
    })}, { key: 'confirm' });
    // Only a retry whose requestState verified (signature, call, expiry) gets this far.
    ${text("'state-ok: confirmed=' + String(answer.content && answer.content.ok)")}`,
  ),
  tool(
    'test_input_required_result_multiple_inputs',
    'Asks three things at once (MRTR)',
    `const [name, greeting, roots] = await Promise.all([
      ctx.elicit('What is your name?', ${JSON.stringify(NAME)}, { key: 'user_name' }),
      ctx.sample(${USER_MESSAGE("'Generate a greeting'", 50)}, { key: 'greeting' }),
      ctx.roots({ key: 'client_roots' }),
    ]);
    ${text("greeting.content.text + ' ' + name.content.name + ' (' + roots.length + ' roots)'")}`,
  ),
  tool(
    'test_input_required_result_multi_round',
    'Asks in two rounds (MRTR)',
    `const first = await ctx.elicit('Step 1: What is your name?', ${JSON.stringify(NAME)}, { key: 'step1' });
    const second = await ctx.elicit('Step 2: What is your favorite color?', ${JSON.stringify({
      type: 'object',
      properties: { color: { type: 'string' } },
      required: ['color'],
    })}, { key: 'step2' });
    ${text("first.content.name + ' likes ' + second.content.color")}`,
  ),
  tool(
    'test_input_required_result_tampered_state',
    'Asks for a confirmation; an altered state is refused (MRTR)',
    `const answer = await ctx.elicit('Please confirm', ${JSON.stringify({
      type: 'object',
      properties: { ok: { type: 'boolean' } },
    })}, { key: 'confirm' });
    ${text("'confirmed: ' + String(answer.content && answer.content.ok)")}`,
  ),
  tool(
    'test_input_required_result_capabilities',
    'Asks only what the client declared (MRTR)',
    `const asks = [];
    if (ctx.client.elicitation) asks.push(ctx.elicit('What is your name?', ${JSON.stringify(NAME)}, { key: 'user_name' }));
    if (ctx.client.sampling) asks.push(ctx.sample(${USER_MESSAGE("'Say hello'", 20)}, { key: 'hello' }));
    if (ctx.client.roots) asks.push(ctx.roots({ key: 'client_roots' }));
    const answers = await Promise.all(asks);
    ${text("'answered ' + answers.length")}`,
  ),
  // The stateless scenario's diagnostic tools (2026-07-28).
  tool(
    'test_missing_capability',
    'Needs sampling, whatever the client declared',
    `const answer = await ctx.sample(${USER_MESSAGE("'Say hello'", 20)});
    ${text('answer.content.text')}`,
  ),
  tool(
    'test_streaming_elicitation',
    'Asks for a name while it runs',
    `ctx.log('info', 'asking');
    const answer = await ctx.elicit('What is your name?', ${JSON.stringify(NAME)});
    ${text("'Hello, ' + answer.content.name")}`,
  ),
  tool(
    'test_logging_tool',
    'Logs three lines',
    `for (const data of ['one', 'two', 'three']) ctx.log('info', data);
    ${text("'logged'")}`,
  ),
  // An argument mirrored into a header (x-mcp-header, SEP-2243): http-custom-header-server-validation.
  tool(
    'test_header_param',
    'Answers the region it was asked for, which also travels in the Mcp-Param-Region header',
    text("'region ' + args.region"),
    { region: { type: 'string', 'x-mcp-header': 'Region' } },
    ['region'],
  ),
];

/**
 * A tool that changes a list of its own exposure (what the stateless scenario's
 * `test_trigger_tool_change` and `test_trigger_prompt_change` do): it PATCHes `field` of the item
 * at `url` through the admin API with the owner's token (the secret `conformance_admin`).
 */
export function triggerTool(name: string, url: string, field: string, controlPlaneUrl: string) {
  return {
    ...tool(
      name,
      `Changes ${field} of an item of this exposure`,
      `const res = await ctx.fetch(${JSON.stringify(url)}, {
        method: 'PATCH',
        headers: { authorization: 'Bearer ' + ctx.secrets.conformance_admin, 'content-type': 'application/json' },
        body: JSON.stringify({ ${field}: 'changed at ' + Date.now() }),
      });
      ${text("'changed: HTTP ' + res.status")}`,
    ),
    allowed_hosts: [new URL(controlPlaneUrl).host],
    secrets: ['conformance_admin'],
  };
}

/** The suite's text prompts, as the exposure's own prompt templates (the others come upstream). */
export const PROMPTS = [
  {
    name: 'test_simple_prompt',
    description: 'A simple prompt',
    arguments: [],
    messages: [{ role: 'user', text: 'This is a simple prompt for testing.' }],
  },
  {
    name: 'test_prompt_with_arguments',
    description: 'A prompt with arguments',
    arguments: [
      {
        name: 'arg1',
        description: 'First test argument',
        required: true,
        choices: ['paris', 'park', 'party'],
      },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    messages: [{ role: 'user', text: "Prompt with arguments: arg1='{{arg1}}', arg2='{{arg2}}'" }],
  },
];
