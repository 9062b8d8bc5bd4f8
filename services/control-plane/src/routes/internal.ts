/**
 * The internal API for gateways: what an api_key exposes (one lookup for AEI and legacy keys, with
 * ETag / If-None-Match), what a caller entry serves (a personal key and a caller name), tool execution, and requests to the upstream servers attached to an AEI
 * (resources/read, prompts/get). Tool failures are 200 answers carrying `isError`, like
 * MCP results; HTTP errors are for the request itself (auth, shape). The two older config routes
 * stay for gateways of the previous version during a rolling upgrade.
 */
import { randomBytes } from 'node:crypto';
import { carriedTraceId, noteRequestTrace } from '@bindery/service-kit';
import {
  CONTROL_PLANE_INSTANCE_HEADER,
  AdiIdParams,
  ApiKeyParams,
  CallerConfig,
  CallerConfigQuery,
  ConfigV2,
  PERSONAL_KEY_HEADER,
  ExecuteRequest,
  IdParams,
  KeyConfig,
  KeyConfigQuery,
  LegacyConfig,
  LegacyExecuteRequest,
  ToolResult,
  UpstreamRequestAnswer,
  TaskAnswer,
  TaskRequestBody,
  UpstreamRequestBody,
  UpstreamWatchAnswer,
  UpstreamWatchBody,
  type LogLevel,
  type ToolLogLine,
  type ToolProgress,
} from '@bindery/contracts';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { lookupCaller } from '../exposure/callers.ts';
import { executeBinding, executeLegacy, type ExecutorOptions } from '../execution/executor.ts';
import {
  configForApiKey,
  configVersionOf,
  legacyConfigForApiKey,
  lookupApiKey,
} from '../exposure/exposure-config.ts';
import { ClashLog } from '../exposure/upstream-catalog.ts';
import { upstreamRequest, watchUpstreamResources } from '../execution/upstream-requests.ts';
import { upstreamTask } from '../execution/upstream-tasks.ts';
import { DomainError } from '../domain/errors.ts';
import { executeBatchRoute } from './execute-batch.ts';
import { abortedOnClose } from '../http/caller-gone.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { errorResponses } from '../http/schemas.ts';

const internalSecurity = [{ internalToken: [] }];
const AeiIdParams = Type.Object({ aei_id: Type.String({ maxLength: 64 }) });
/** Why a call is cancelled when its gateway closes the request (an upstream MCP server is told so). */
export const CALLER_GONE = 'the caller closed its request';

/** Whether an If-None-Match header names this ETag (`"7"`, `W/"7"`, a list, or `*`). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim().replace(/^W\//, '');
    return t === '*' || t === etag;
  });
}

/**
 * A call that asked for progress or log lines: NDJSON, one `{"progress": ...}` line per report and
 * one `{"log": {level, data}}` per log line at `logLevel` or above as the tool sends them, then
 * `{"result": ToolResult}` (or, for a fault of this server, `{"error": {code, message}}`).
 */
async function streamWithNotices(
  reply: FastifyReply,
  log: FastifyBaseLogger,
  wants: { progress: boolean; logLevel: LogLevel | undefined },
  run: (heard: {
    progress?: (report: ToolProgress) => void;
    log?: { level: LogLevel; send(line: ToolLogLine): void };
  }) => Promise<ToolResult>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  const send = (line: object) => {
    if (!raw.writableEnded) raw.write(`${JSON.stringify(line)}\n`);
  };
  const { logLevel } = wants;
  let line: string;
  try {
    const result = await run({
      ...(wants.progress && { progress: (report: ToolProgress) => send({ progress: report }) }),
      ...(logLevel !== undefined && {
        log: { level: logLevel, send: (entry: ToolLogLine) => send({ log: entry }) },
      }),
    });
    line = JSON.stringify({ result });
  } catch (error) {
    log.error({ err: error }, 'tool call failed');
    line = JSON.stringify({ error: { code: 'INTERNAL', message: 'internal error' } });
  }
  raw.end(`${line}\n`);
}

export function internalRoutes(executor: ExecutorOptions) {
  return async function routes(app: AdminApp): Promise<void> {
    const ctx = app.domain;
    const db = ctx.prisma;
    const tags = ['internal'];
    // What attached upstream servers hide from each other, logged once per AEI config version.
    const clashes = new ClashLog(app.log);
    // Every answer names this process: a gateway learns whether its control-plane address leads
    // to one process or several (execute-batch.ts says why that matters).
    const instance = randomBytes(8).toString('hex');
    app.addHook('onSend', async (_request, reply) => {
      reply.header(CONTROL_PLANE_INSTANCE_HEADER, instance);
    });
    app.get(
      '/keys/:api_key/config',
      {
        schema: {
          tags,
          summary:
            'What an api_key exposes: an AEI (config v2, ETag = config_version; a live playground key ' +
            'answers its AEI, marked playground) or a legacy instance; ' +
            'flavor v1 looks at legacy instances only',
          security: internalSecurity,
          params: ApiKeyParams,
          querystring: KeyConfigQuery,
          headers: Type.Object({ 'if-none-match': Type.Optional(Type.String()) }),
          // 304 is answered without a body (and so without a schema): see the handler.
          response: { 200: KeyConfig, ...errorResponses(404) },
        },
      },
      async (request, reply) => {
        const ifNoneMatch = request.headers['if-none-match'];
        const found = await lookupApiKey(
          db,
          request.params.api_key,
          request.query.flavor ?? 'v2',
          (version) => matches(ifNoneMatch, `"${version}"`),
          clashes,
        );
        switch (found.kind) {
          case 'aei-unchanged':
            // The typed reply only knows the schema's statuses; 304 deliberately has none.
            return (reply as FastifyReply).status(304).header('etag', `"${found.configVersion}"`).send();
          case 'aei':
            return reply.header('etag', `"${found.config.aei.config_version}"`).send(found);
          case 'legacy':
            return reply.send(found);
          case 'unknown':
            // `kind: unknown` tells this answer apart from a 404 of a control plane without the route.
            throw new DomainError('NOT_FOUND', 'no exposure has this api_key', { kind: 'unknown' });
        }
      },
    );
    app.get(
      '/callers/config',
      {
        schema: {
          tags,
          summary:
            'What a caller entry serves: the profile (AEI) the caller maps to, else the default one, as ' +
            `config v2 with who asked; the personal key comes in ${PERSONAL_KEY_HEADER}, never in the URL ` +
            '(ETag = "{aei_id}.{config_version}")',
          security: internalSecurity,
          querystring: CallerConfigQuery,
          headers: Type.Object({
            [PERSONAL_KEY_HEADER]: Type.String({ maxLength: 256 }),
            'if-none-match': Type.Optional(Type.String()),
          }),
          // 304 is answered without a body (and so without a schema): see the handler.
          response: { 200: CallerConfig, ...errorResponses(404) },
        },
      },
      async (request, reply) => {
        const ifNoneMatch = request.headers['if-none-match'];
        const found = await lookupCaller(
          db,
          request.headers[PERSONAL_KEY_HEADER],
          request.query.caller ?? null,
          (etag) => matches(ifNoneMatch, etag),
          clashes,
        );
        switch (found.kind) {
          case 'aei-unchanged':
            // The typed reply only knows the schema's statuses; 304 deliberately has none.
            return (reply as FastifyReply).status(304).header('etag', found.etag).send();
          case 'aei':
            return reply
              .header('etag', found.etag)
              .send({ kind: 'aei', config: found.config, caller: found.caller });
          case 'unknown':
            // As for an unknown api_key: `kind: unknown` tells it apart from a route that is missing.
            throw new DomainError('NOT_FOUND', 'no personal MCP key matches', { kind: 'unknown' });
        }
      },
    );
    app.get(
      '/aei/mcp/:api_key/config',
      {
        schema: {
          tags,
          deprecated: true,
          summary:
            'Config v2 of the AEI behind an api_key; ETag is its config_version (gateways of the previous ' +
            'version; use /internal/keys/{api_key}/config)',
          security: internalSecurity,
          params: ApiKeyParams,
          headers: Type.Object({ 'if-none-match': Type.Optional(Type.String()) }),
          // 304 is answered without a body (and so without a schema): see the handler.
          response: { 200: ConfigV2, ...errorResponses(404) },
        },
      },
      async (request, reply) => {
        const version = await configVersionOf(db, request.params.api_key);
        if (version !== undefined && matches(request.headers['if-none-match'], `"${version}"`)) {
          // No payload at all: a serialised `null` would announce 4 bytes a 304 may not carry,
          // and clients that trust Content-Length would wait for them.
          // The typed reply only knows the schema's statuses; 304 deliberately has none.
          return (reply as FastifyReply).status(304).header('etag', `"${version}"`).send();
        }
        const config = await configForApiKey(db, request.params.api_key, clashes);
        return reply.header('etag', `"${config.aei.config_version}"`).send(config);
      },
    );
    app.get(
      '/mcp-instance/:api_key',
      {
        schema: {
          tags,
          deprecated: true,
          summary:
            'The v1 config of a legacy instance’s api_key (gateways of the previous version; use ' +
            '/internal/keys/{api_key}/config)',
          security: internalSecurity,
          params: ApiKeyParams,
          response: { 200: LegacyConfig, ...errorResponses(404) },
        },
      },
      async (request) => legacyConfigForApiKey(db, request.params.api_key),
    );
    app.post(
      '/adi/:adi_id/execute',
      {
        schema: {
          tags,
          summary: 'Run the tool of a binding; failures come back as isError results',
          security: internalSecurity,
          params: AdiIdParams,
          body: ExecuteRequest,
          response: { 200: ToolResult, ...errorResponses(413) },
        },
      },
      async (request, reply) => {
        // The gateway closing its request (its client cancelled, or went away) cancels the call
        // where a kind can pass that on.
        const signal = abortedOnClose(reply.raw, CALLER_GONE);
        // A call alone in its request: the request's own lines name its trace too.
        const traceId = carriedTraceId(request.body.trace);
        if (traceId !== undefined) noteRequestTrace(request, { trace_id: traceId });
        const wants = { progress: request.body.progress === true, logLevel: request.body.log_level };
        if (!wants.progress && wants.logLevel === undefined) {
          return executeBinding(ctx, request.params.adi_id, request.body, executor, signal);
        }
        return streamWithNotices(reply, request.log, wants, (heard) =>
          executeBinding(ctx, request.params.adi_id, request.body, executor, signal, heard),
        );
      },
    );
    // In a scope of its own: its text body parser is for this route alone.
    await app.register(async (scope: AdminApp) => executeBatchRoute(scope, executor, instance));
    app.post(
      '/aei/:aei_id/upstream-request',
      {
        schema: {
          tags,
          summary:
            'Read a resource or get a prompt of an upstream server attached to the AEI (only what the ' +
            'server listed at its last sync); failures come back as `error`',
          security: internalSecurity,
          params: AeiIdParams,
          body: UpstreamRequestBody,
          response: { 200: UpstreamRequestAnswer, ...errorResponses(413) },
        },
      },
      async (request, reply) => {
        // The gateway closing its request cancels the upstream's request (notifications/cancelled).
        const signal = abortedOnClose(reply.raw, CALLER_GONE);
        return upstreamRequest(ctx, request.params.aei_id, request.body, executor, signal);
      },
    );
    app.post(
      '/aei/:aei_id/tasks',
      {
        schema: {
          tags,
          summary:
            'tasks/get, tasks/update or tasks/cancel of a task an upstream server made for a call of the AEI ' +
            '(the handle is bound to the caller and credential); failures come back as `error`',
          security: internalSecurity,
          params: AeiIdParams,
          body: TaskRequestBody,
          response: { 200: TaskAnswer, ...errorResponses(413) },
        },
      },
      async (request, reply) => {
        const signal = abortedOnClose(reply.raw, CALLER_GONE);
        return upstreamTask(ctx, request.params.aei_id, request.body, executor, signal);
      },
    );
    app.post(
      '/aei/:aei_id/upstream-watch',
      {
        schema: {
          tags,
          summary:
            'Watch resources of an upstream server attached to the AEI for a gateway whose clients subscribed ' +
            '(renewed by sending it again); changes reach the gateways as `resource_updates`',
          security: internalSecurity,
          params: AeiIdParams,
          body: UpstreamWatchBody,
          response: { 200: UpstreamWatchAnswer, ...errorResponses(404) },
        },
      },
      async (request) => watchUpstreamResources(ctx, request.params.aei_id, request.body, executor),
    );
    app.post(
      '/mcp-instance/:id/execute',
      {
        schema: {
          tags,
          summary: 'Run a tool of a legacy v1 instance by its v1 name',
          security: internalSecurity,
          params: IdParams,
          body: LegacyExecuteRequest,
          response: { 200: ToolResult, ...errorResponses(413) },
        },
      },
      async (request) => executeLegacy(ctx, request.params.id, request.body, executor),
    );
  };
}
