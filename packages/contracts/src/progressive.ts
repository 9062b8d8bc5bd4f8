/**
 * The tools an AEI in `progressive` mode exposes instead of its bindings (DESIGN.md §7): an agent
 * walks app -> categories -> APIs -> details -> batch execute, loading only what it needs. The
 * gateway serves them; the control plane's tool preview lists them.
 */

import type { ToolAnnotations } from './tool-kinds/tool-annotations.ts';

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
}

/**
 * The catalog tools only read the session's catalog (initialize_session remembers the chosen app
 * in the session, nothing else); execute_apis runs APIs, which may write (each API's own
 * annotations are in get_api_details).
 */
const BROWSE: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const RUN: ToolAnnotations = { readOnlyHint: false };

const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  ...(required.length > 0 && { required }),
  additionalProperties: false,
});

export const PROGRESSIVE_TOOL_NAMES = [
  'initialize_session',
  'get_categories',
  'get_apis_by_category',
  'get_api_details',
  'execute_apis',
] as const;

export const SEARCH_TOOL_NAME = 'search_apis';

/** Most executions one execute_apis call may carry. */
export const MAX_BATCH_EXECUTIONS = 50;

export const PROGRESSIVE_TOOLS: readonly ToolDefinition[] = [
  {
    name: 'initialize_session',
    title: 'Choose an app',
    annotations: { title: 'Choose an app', ...BROWSE },
    description:
      'Start here. Chooses the app (a project) whose APIs this session works with; call again to switch. ' +
      'The error of an unknown app lists the apps available.',
    inputSchema: object(
      { app_id: { type: 'string', description: 'the app: a project id or slug, or "default"' } },
      ['app_id'],
    ),
  },
  {
    name: 'get_categories',
    title: 'List API categories',
    annotations: { title: 'List API categories', ...BROWSE },
    description: 'Lists the categories of APIs in the session’s app: [{id, name, description}].',
    inputSchema: object({}),
  },
  {
    name: 'get_apis_by_category',
    title: 'List the APIs of a category',
    annotations: { title: 'List the APIs of a category', ...BROWSE },
    description: 'Lists the APIs of one category: [{name, description, category_id}].',
    inputSchema: object({ category_id: { type: 'string', description: 'an id from get_categories' } }, [
      'category_id',
    ]),
  },
  {
    name: 'get_api_details',
    title: 'Describe APIs',
    annotations: { title: 'Describe APIs', ...BROWSE },
    description:
      'Describes APIs by name: their parameters (name, type, required, description, default) and response schema.',
    inputSchema: object(
      {
        api_names: {
          type: 'array',
          items: { type: 'string' },
          minItems: 1,
          maxItems: 100,
          description: 'names from get_apis_by_category',
        },
      },
      ['api_names'],
    ),
  },
  {
    name: 'execute_apis',
    title: 'Run APIs',
    annotations: { title: 'Run APIs', ...RUN },
    description:
      'Runs APIs of the session’s app, concurrently. Answers one result per execution, in order: ' +
      '{api_name, success, data, error}; one failing execution never fails the others.',
    inputSchema: object(
      {
        executions: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_BATCH_EXECUTIONS,
          items: object(
            {
              api_name: { type: 'string', description: 'the API to run' },
              parameters: {
                type: 'object',
                description: 'its parameters, as get_api_details describes them',
              },
              idempotency_key: {
                type: 'string',
                minLength: 1,
                maxLength: 255,
                pattern: '^[\\x21-\\x7E]+$',
                description:
                  'for a write: your name for this one write (1-255 visible ASCII characters); sent again ' +
                  'with the same key it answers the first outcome instead of writing twice',
              },
            },
            ['api_name'],
          ),
          description: 'what to run',
        },
      },
      ['executions'],
    ),
  },
];

export const SEARCH_TOOL: ToolDefinition = {
  name: SEARCH_TOOL_NAME,
  title: 'Search APIs',
  annotations: { title: 'Search APIs', ...BROWSE },
  description: 'Searches the session’s app for APIs by keywords in their names and descriptions, best first.',
  inputSchema: object(
    {
      query: { type: 'string', minLength: 1, maxLength: 500, description: 'keywords' },
      limit: { type: 'integer', minimum: 1, maximum: 50, default: 10, description: 'most results' },
    },
    ['query'],
  ),
};

/** The tools a progressive AEI lists, with search_apis when it enables catalog search. */
export function progressiveTools(catalogSearch: boolean): readonly ToolDefinition[] {
  return catalogSearch ? [...PROGRESSIVE_TOOLS, SEARCH_TOOL] : PROGRESSIVE_TOOLS;
}
