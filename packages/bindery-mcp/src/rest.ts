/**
 * The gateway's REST entry (`/api/v2/rest`) as the CLI and `bindery-mcp --check` use it: the
 * key as a bearer token, with a personal key the caller in `x-bindery-caller`. Every failure is a
 * GatewayError whose message is ready for stderr.
 */
import { REST_PATH } from '@bindery/contracts/entries';
import { answerJson, authHeaders, networkReason, refusalMessage, type Credentials } from './settings.ts';

/** How long one REST request may take. */
const REQUEST_TIMEOUT_MS = 60_000;

export class GatewayError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface RestProfile {
  aei_id: string;
  aei_name: string;
  caller: string | null;
  via: 'map' | 'default' | 'key';
}

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
  description?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

export interface RestTool {
  name: string;
  description?: string;
  input_schema?: JsonSchema;
}

export interface RestTools {
  profile: RestProfile;
  tools: RestTool[];
}

export interface ToolCallAnswer {
  id: string;
  tool_name: string;
  source_used?: unknown;
  ok: boolean;
  result?: unknown;
  error?: { code: string; message: string; details?: unknown };
}

export class RestClient {
  constructor(
    private readonly credentials: Credentials,
    private readonly caller: string | undefined,
    private readonly timeoutMs = REQUEST_TIMEOUT_MS,
  ) {}

  tools(): Promise<RestTools> {
    return this.request('GET', '/tools') as Promise<RestTools>;
  }

  async callTool(tool: string, args: Record<string, unknown>): Promise<ToolCallAnswer> {
    const answer = await this.request('POST', '/tool-calls', {
      id: 'cli-1',
      tool_name: tool,
      arguments: args,
    });
    const first = Array.isArray(answer) ? (answer[0] as ToolCallAnswer | undefined) : undefined;
    if (!first || typeof first.ok !== 'boolean') {
      throw new GatewayError(`the gateway's answer to POST ${REST_PATH}/tool-calls is not a list of results`);
    }
    return first;
  }

  async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const url = `${this.credentials.url}${REST_PATH}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          ...authHeaders(this.credentials, this.caller),
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new GatewayError(
        `the Bindery gateway at ${this.credentials.url} is unreachable (${networkReason(error)})`,
      );
    }
    const text = await response.text();
    const parsed = answerJson(text);
    if (!response.ok) {
      const message = refusalMessage(parsed, response.status, text);
      throw new GatewayError(`${method} ${REST_PATH}${path}: ${message}`, response.status);
    }
    if (parsed === undefined) {
      throw new GatewayError(
        `${method} ${REST_PATH}${path}: the gateway answered no JSON (HTTP ${response.status})`,
      );
    }
    return parsed;
  }
}
