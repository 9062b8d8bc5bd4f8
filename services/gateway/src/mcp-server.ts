/**
 * One MCP server per session (or per request, for a session another replica opened): tools/list
 * from the cached config alone, tools/call through the control plane's executor, logging at the
 * level the client set, list_changed announced by the session registry.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  SetLevelRequestSchema,
  type CallToolResult,
  type LoggingLevel,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { ControlPlaneClient } from './control-plane-client.ts';
import { UpstreamError } from './control-plane-client.ts';
import type { Exposure } from './exposure-cache.ts';
import type { GatewayMetrics } from './metrics.ts';
import { callCatalogTool, isCatalogTool, type ProgressiveDeps } from './progressive.ts';
import { closeMatches } from './tool-suggestions.ts';
import { toolIndex } from './tools.ts';
import { progressiveTools } from '@bindery/contracts';

export interface McpServerDeps {
  client: ControlPlaneClient;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
  toolsPageSize: number;
  /** The exposure as it is now (the cache decides whether that needs the control plane). */
  exposure(): Promise<Exposure>;
  progressive: ProgressiveDeps;
  /** The session id the client sent, for requests served without a session of this replica. */
  sessionIdHint: string | undefined;
}

const SERVER_INFO = { name: 'bindery-gateway', version: '0.1.0' };

function upstreamFailure(error: UpstreamError): CallToolResult {
  const code = error.timedOut ? 'TIMEOUT' : 'UPSTREAM_FAILED';
  const body = { error: { code, message: `${error.message}; try again shortly` } };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}

function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const offset = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!Number.isInteger(offset) || offset < 0) {
    throw new McpError(ErrorCode.InvalidParams, `invalid cursor "${cursor}"`);
  }
  return offset;
}

const LEVELS: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** A fresh low-level MCP server for one session of one exposure. */
export function createMcpServer(deps: McpServerDeps): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: true }, logging: {} },
    instructions: 'Tools over JSON data. Every failure comes back as {"error": {code, message, details}}.',
  });

  // The client's logging/setLevel, for this session; until it sets one, no tool logs are sent.
  let logLevel: LoggingLevel | undefined;
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    logLevel = request.params.level;
    return {};
  });

  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const exposure = await deps.exposure();
    if (exposure.kind === 'aei' && exposure.config.aei.exposure_mode === 'progressive') {
      return {
        tools: progressiveTools(exposure.config.aei.catalog_search).map((t) => ({
          ...t,
          inputSchema: t.inputSchema as never,
        })),
      };
    }
    const { list } = toolIndex(exposure, deps.client);
    const offset = decodeCursor(request.params?.cursor);
    const page = list.slice(offset, offset + deps.toolsPageSize);
    const next = offset + page.length;
    return {
      tools: page.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema as never,
      })),
      ...(next < list.length && { nextCursor: Buffer.from(String(next)).toString('base64url') }),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const exposure = await deps.exposure();
    const index = toolIndex(exposure, deps.client);
    const name = request.params.name;
    const progressive = exposure.kind === 'aei' && exposure.config.aei.exposure_mode === 'progressive';
    if (progressive && isCatalogTool(name, exposure.config)) {
      const result = await callCatalogTool(
        name,
        request.params.arguments ?? {},
        exposure.config,
        index,
        extra.sessionId ?? deps.sessionIdHint,
        deps.progressive,
        `${extra.sessionId ?? deps.sessionIdHint ?? 'stateless'}:${String(extra.requestId)}`,
      );
      deps.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
      return result;
    }
    const tool = progressive ? undefined : index.byName.get(name);
    if (!tool) {
      deps.metrics.toolCalls.inc({ status: 'unknown_tool' });
      const names = progressive
        ? progressiveTools(exposure.kind === 'aei' && exposure.config.aei.catalog_search).map((t) => t.name)
        : index.list.map((t) => t.name);
      const close = closeMatches(name, names);
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool "${name}"${close.length > 0 ? `; did you mean ${close.map((c) => `"${c}"`).join(', ')}?` : ''}`,
        { tool: name, close_matches: close },
      );
    }
    const started = performance.now();
    const requestId = `${extra.sessionId ?? 'stateless'}:${String(extra.requestId)}`;
    let result: CallToolResult;
    try {
      result = (await tool.run(request.params.arguments ?? {}, requestId)) as CallToolResult;
      deps.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      deps.metrics.toolCalls.inc({ status: 'upstream_failed' });
      deps.log.warn({ tool: name, err: error.message }, 'tool call failed upstream');
      result = upstreamFailure(error);
    }
    const ms = Math.round((performance.now() - started) * 100) / 100;
    const level: LoggingLevel = result.isError ? 'warning' : 'info';
    if (logLevel !== undefined && LEVELS.indexOf(level) >= LEVELS.indexOf(logLevel)) {
      // Sent on this request's own stream, so it reaches the client before the result does.
      await extra
        .sendNotification({
          method: 'notifications/message',
          params: {
            level,
            logger: 'bindery',
            data: { tool: name, status: result.isError ? 'error' : 'ok', duration_ms: ms },
          },
        })
        .catch((error: unknown) => deps.log.debug({ err: error }, 'log message not delivered to the client'));
    }
    return result;
  });

  return server;
}
