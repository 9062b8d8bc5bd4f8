/**
 * One MCP server per session (or per request, for a session another replica opened): tools/list
 * from the cached config alone, tools/call through the control plane's executor, logging at the
 * level the client set, list_changed announced by the session registry.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type LoggingLevel,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import { ControlPlaneError } from '../control-plane/errors.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { unansweredCall } from './tools/call-failures.ts';
import { WireError } from './wire-error.ts';
import { unstorableArguments } from './unstorable-arguments.ts';
import {
  DEFAULT_LOG_LEVEL,
  allows,
  finishLines,
  refusalLine,
  startLine,
  type LogLine,
} from './tools/call-log.ts';
import {
  completePromptArgument,
  getPrompt,
  getUpstreamPrompt,
  listPrompts,
  promptsDigest,
  upstreamPrompt,
} from './prompts.ts';
import { listResources, listResourceTemplates, readResource, resourcesDigest } from './resources.ts';
import type { ResourceSubscriptions } from './resource-subscriptions.ts';
import { listPage, type ListPage } from './tools/list.ts';
import { idempotencyKeyOf } from './requests.ts';
import { callCatalogTool, isCatalogTool, type ProgressiveDeps } from './tools/progressive.ts';
import { routeTool, sourceHintOf, unknownToolRefusal } from './tools/source-routing.ts';
import { toolIndex } from './tools/tool-index.ts';
import { SOURCE_META_KEY, progressiveTools, toolError, type ToolProgress } from '@bindery/contracts';

export interface McpServerDeps {
  client: ControlPlaneClient;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
  toolsPageSize: number;
  /** Counts bytes derived from a cached exposure (its tools/list pages) with it in the cache. */
  charge(exposure: Exposure, bytes: number): void;
  /** The exposure as it is now (the cache decides whether that needs the control plane). */
  exposure(): Promise<Exposure>;
  progressive: ProgressiveDeps;
  /** The session id the client sent, for requests served without a session of this replica. */
  sessionIdHint: string | undefined;
  /** The exposure as the session starts: what its lists' list_changed notifications compare with. */
  initial?: Exposure | undefined;
  /** This gateway's resource subscriptions (resources/subscribe needs a session it holds). */
  subscriptions: ResourceSubscriptions;
}

/** Milliseconds since `started` (a performance.now() reading), to two decimals. */
const msSince = (started: number) => Math.round((performance.now() - started) * 100) / 100;

const SERVER_INFO = { name: 'bindery-gateway', version: '0.1.0' };

/**
 * One session's MCP server, plus its two hot handlers for the gateway's fast path (plain JSON
 * answers to tools/list and tools/call on a session it holds), which run the very same code.
 */
export interface McpEndpoint {
  server: Server;
  /**
   * The tools/list page `cursor` names, built once per config (`mcp/tools/list.ts`). `known`: the
   * exposure the caller already resolved for this request, saving a second lookup.
   */
  listPage(cursor: string | undefined, known?: Exposure): Promise<ListPage>;
  /**
   * Which of the exposure's prompt and resource lists differ from those this session last saw
   * (both when it is not known what it saw, or the exposure cannot be resolved now); remembers the
   * current ones.
   */
  listsChanged(): Promise<{ prompts: boolean; resources: boolean }>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    call: {
      sessionId: string | undefined;
      requestId: string;
      /** `params._meta["bindery/idempotency_key"]`: a write sent again with it writes once. */
      idempotencyKey?: string | undefined;
      notify?: (n: ServerNotification) => Promise<void>;
      known?: Exposure;
      /** Aborted when the client cancels the call (notifications/cancelled) or goes away. */
      signal?: AbortSignal;
      /** The client's `_meta.progressToken`: progress reports of the call are sent with it. */
      progressToken?: string | number;
      /** `_meta["bindery/source"]`: where the client thinks the tool lives (mcp/tools/source-routing.ts). */
      sourceHint?: string | undefined;
    },
  ): Promise<CallToolResult>;
}

/** A fresh low-level MCP server for one session of one exposure. */
export function createMcpServer(deps: McpServerDeps): McpEndpoint {
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
      completions: {},
      logging: {},
    },
    instructions: 'Tools over JSON data. Every failure comes back as {"error": {code, message, details}}.',
  });

  // The client's logging/setLevel, for this session (mcp/tools/call-log.ts says what is sent at which level).
  let logLevel: LoggingLevel = DEFAULT_LOG_LEVEL;
  const log = async (notify: ((n: ServerNotification) => Promise<void>) | undefined, line: LogLine) => {
    if (!notify || !allows(logLevel, line.level)) return;
    // Sent on the call's own stream, so it reaches the client before the result does.
    await notify({ method: 'notifications/message', params: line }).catch((error: unknown) =>
      deps.log.debug({ err: error }, 'log message not delivered to the client'),
    );
  };
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    logLevel = request.params.level;
    return {};
  });

  // The prompts and resources this session's client was last served, to announce their
  // list_changed only when an invalidation changed them.
  const digestsOf = (exposure: Exposure) => ({
    prompts: promptsDigest(exposure),
    resources: resourcesDigest(exposure),
  });
  let seen: { prompts: string; resources: string } | undefined = deps.initial && digestsOf(deps.initial);
  // Lookups of concurrent invalidations may finish out of order: only the latest one's counts.
  let asked = 0;
  async function exposureOf(known?: Exposure): Promise<Exposure> {
    const exposure = known ?? (await deps.exposure());
    seen ??= digestsOf(exposure);
    return exposure;
  }
  async function listsChanged(): Promise<{ prompts: boolean; resources: boolean }> {
    const mine = ++asked;
    let now;
    try {
      now = digestsOf(await deps.exposure());
    } catch {
      // Not known: announce both, unless a newer lookup will tell.
      return mine === asked ? { prompts: true, resources: true } : { prompts: false, resources: false };
    }
    if (mine !== asked) return { prompts: false, resources: false };
    const changed = { prompts: now.prompts !== seen?.prompts, resources: now.resources !== seen?.resources };
    seen = now;
    return changed;
  }

  async function listPageOf(cursor: string | undefined, known?: Exposure): Promise<ListPage> {
    const exposure = await exposureOf(known);
    return listPage(exposure, cursor, {
      pageSize: deps.toolsPageSize,
      client: deps.client,
      charge: deps.charge,
    });
  }

  const callTool: McpEndpoint['callTool'] = async (name, args, call) => {
    const exposure = await exposureOf(call.known);
    const index = toolIndex(exposure, deps.client);
    const progressive = exposure.kind === 'aei' && exposure.config.aei.exposure_mode === 'progressive';
    if (progressive && isCatalogTool(name, exposure.config)) {
      await log(call.notify, startLine(name));
      const started = performance.now();
      const result = await callCatalogTool(
        name,
        args,
        exposure.config,
        index,
        call.sessionId,
        deps.progressive,
        call.requestId,
      );
      deps.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
      for (const line of finishLines(name, result, msSince(started))) await log(call.notify, line);
      return result;
    }
    const routed = progressive ? undefined : routeTool(index, name, call.sourceHint);
    if (routed?.ignoredHint !== undefined) {
      deps.log.info({ tool: name, source: routed.ignoredHint }, 'unknown source hint ignored');
    }
    const tool = routed && 'tool' in routed ? routed.tool : undefined;
    if (!tool) {
      deps.metrics.toolCalls.inc({ status: 'unknown_tool' });
      const refusal = unknownToolRefusal(name, routed, () =>
        progressive
          ? progressiveTools(exposure.kind === 'aei' && exposure.config.aei.catalog_search).map((t) => t.name)
          : index.list.map((t) => t.name),
      );
      await log(call.notify, refusalLine(name, refusal.message));
      throw new WireError(ErrorCode.InvalidParams, refusal.message, refusal.details);
    }
    // A number that overflowed to Infinity would reach the control plane as null: only here can
    // it still be seen, so the gateway refuses it as the control plane refuses a NUL.
    const unstorable = unstorableArguments(args);
    if (unstorable) {
      deps.metrics.toolCalls.inc({ status: 'error' });
      const refused: CallToolResult = toolError(unstorable);
      for (const line of finishLines(name, refused, 0)) await log(call.notify, line);
      return refused;
    }
    await log(call.notify, startLine(name));
    const started = performance.now();
    let result: CallToolResult;
    try {
      const token = call.progressToken;
      const notify = call.notify;
      result = (await tool.run(args, call.requestId, {
        idempotencyKey: call.idempotencyKey,
        signal: call.signal,
        sessionId: call.sessionId,
        sourceHint: call.sourceHint,
        // The client sent a progress token: each report of the tool reaches it on this call's stream.
        ...(token !== undefined &&
          notify && {
            progress: (report: ToolProgress) => {
              notify({ method: 'notifications/progress', params: { progressToken: token, ...report } }).catch(
                (error: unknown) => deps.log.debug({ err: error }, 'progress not delivered to the client'),
              );
            },
          }),
      })) as CallToolResult;
      deps.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
    } catch (error) {
      if (!(error instanceof ControlPlaneError)) throw error;
      deps.metrics.toolCalls.inc({ status: 'upstream_failed' });
      deps.log.warn({ tool: name, err: error.message }, 'tool call failed upstream');
      const failure = unansweredCall(error, { readOnly: tool.readOnly, idempotencyKey: call.idempotencyKey });
      result = toolError(failure);
    }
    for (const line of finishLines(name, result, msSince(started))) await log(call.notify, line);
    return result;
  };

  // The SDK path sends the page's prebuilt result; it serialises it itself.
  server.setRequestHandler(
    ListToolsRequestSchema,
    async (request) => (await listPageOf(request.params?.cursor)).result,
  );
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const sessionId = extra.sessionId ?? deps.sessionIdHint;
    return callTool(request.params.name, request.params.arguments ?? {}, {
      sessionId,
      requestId: `${sessionId ?? 'stateless'}:${String(extra.requestId)}`,
      idempotencyKey: idempotencyKeyOf(request.params),
      sourceHint: sourceHintOf(request.params, SOURCE_META_KEY),
      notify: (n) => extra.sendNotification(n),
      signal: extra.signal,
      ...(request.params._meta?.progressToken !== undefined && {
        progressToken: request.params._meta.progressToken,
      }),
    });
  });

  server.setRequestHandler(ListPromptsRequestSchema, async (request) =>
    listPrompts(await exposureOf(), request.params?.cursor, deps.toolsPageSize),
  );
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const exposure = await exposureOf();
    const { name, arguments: args = {} } = request.params;
    const upstream = exposure.kind === 'aei' ? upstreamPrompt(exposure, name) : undefined;
    if (exposure.kind !== 'aei' || !upstream) return getPrompt(exposure, name, args);
    const sessionId = extra.sessionId ?? deps.sessionIdHint;
    return getUpstreamPrompt(exposure, upstream, args, {
      client: deps.client,
      requestId: `${sessionId ?? 'stateless'}:${String(extra.requestId)}`,
      sessionId,
      signal: extra.signal,
    });
  });
  server.setRequestHandler(ListResourcesRequestSchema, async (request) =>
    listResources(await exposureOf(), request.params?.cursor, deps.toolsPageSize),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (request) =>
    listResourceTemplates(await exposureOf(), request.params?.cursor),
  );
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const sessionId = extra.sessionId ?? deps.sessionIdHint;
    return readResource(
      await exposureOf(),
      request.params.uri,
      deps.client,
      `${sessionId ?? 'stateless'}:${String(extra.requestId)}`,
      extra.signal,
      sessionId,
    );
  });
  // Updates go on the session's standing stream (the GET it keeps open), as sendResourceUpdated does.
  server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    deps.subscriptions.subscribe({
      sessionId: extra.sessionId,
      uri: request.params.uri,
      exposure: await exposureOf(),
      resolve: deps.exposure,
      notify: (uri) => server.sendResourceUpdated({ uri }),
    });
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request, extra) => {
    deps.subscriptions.unsubscribe(extra.sessionId, request.params.uri);
    return {};
  });
  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    // No resource templates take completions (yet): nothing to offer, which is a valid answer.
    if (ref.type !== 'ref/prompt') return { completion: { values: [], total: 0, hasMore: false } };
    return completePromptArgument(await exposureOf(), ref.name, argument);
  });

  return {
    server,
    listPage: listPageOf,
    listsChanged,
    callTool,
  };
}
