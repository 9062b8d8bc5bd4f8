/**
 * The REST entry (seed 000's REST exposure, seed 004's tool-call JSON): the same tools as the MCP
 * endpoints, for agent frameworks that call functions over plain HTTP.
 * - `GET /api/v2/rest/tools`: the profile and its tools (names, descriptions, JSON Schemas);
 * - `POST /api/v2/rest/tool-calls`: one `{id, tool_name, arguments, source?}` or an array of them,
 *   run concurrently (each under the per-call time limit, like execute_apis), answered as
 *   `[{id, tool_name, source_used, ok, result | error}]` in the order sent;
 * - `POST /api/v2/rest/tools/{tool}`: the arguments as the body, one call's item as the answer
 *   (what the OpenAPI document's operations are);
 * - `GET /api/v2/rest/openapi.json`: an OpenAPI 3.1 document with one operation per tool.
 * Credentials: `Authorization: Bearer <api_key>` of an exposure (or a playground key of one, the
 * admin console's, served alike and audited as the caller `console`), or a personal key with the
 * caller in `X-Bindery-Caller` (none: the default profile). Browsers may call it from an origin the
 * origin guard allows (CORS, `http/cors.ts`). Names are routed as on MCP
 * (`mcp/tools/source-routing.ts`). Errors are the gateway's REST error body; a tool's own failure is an
 * item with `ok: false`, never an HTTP error.
 */
import {
  CALLER_HEADER,
  MAX_BATCH_EXECUTIONS,
  PERSONAL_KEY_PREFIX,
  PLAYGROUND_CALLER,
  REST_PATH,
  bearerToken,
  isCallerName,
  isIdempotencyKey,
  type ErrorCode,
  type ToolError,
} from '@bindery/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_TARGET_CHARS, servedInSpan } from '../http/request-span.ts';
import { admitKey, originRefusal } from '../auth/admission.ts';
import type { GatewayConfig } from '../config.ts';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import {
  credentialHash,
  keyHash,
  type Credential,
  type Exposure,
  type ExposureCache,
} from '../control-plane/exposure-cache.ts';
import { sendRestError } from '../http/rest-errors.ts';
import type { JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';
import { routeTool, unknownToolRefusal } from '../mcp/tools/source-routing.ts';
import { unstorableArguments } from '../mcp/unstorable-arguments.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { KeyLimiter, RateLimiter } from '../http/rate-limit.ts';
import { inPool, runWithin } from '../mcp/tools/batch.ts';
import { toolIndex, type ExposedTool } from '../mcp/tools/tool-index.ts';
import { openApiDocument } from './rest-openapi.ts';

export interface RestRouteDeps {
  config: GatewayConfig;
  cache: ExposureCache;
  client: ControlPlaneClient;
  limiter: KeyLimiter;
  /** Buckets for calls, per credential (the same as execute_apis items use). */
  executeLimiter: RateLimiter;
  metrics: GatewayMetrics;
}

/** One call as seed 004 writes it. */
interface CallItem {
  id: string | number;
  tool_name: string;
  arguments: Record<string, unknown>;
  source?: string | undefined;
  idempotency_key?: string | undefined;
}

/** One call's answer. */
export interface CallAnswer {
  id: string | number;
  tool_name: string;
  /** `native`, `mcp:{server slug}`, or null when no tool was found. */
  source_used: string | null;
  ok: boolean;
  result?: unknown;
  error?: ToolError['error'];
}

/** Who is calling, what they may see, and the key their budgets count by. */
interface Admitted {
  exposure: Exposure;
  /** The key's hash: a personal key's callers share its budgets. */
  owner: string;
  credential: Credential;
}

const ITEM_KEYS = new Set(['id', 'tool_name', 'arguments', 'source', 'idempotency_key']);

class BadRequest extends Error {}

/** A call item as sent, checked; `index` names it in a refusal. */
function callItem(raw: unknown, index: number | undefined): CallItem {
  const where = index === undefined ? 'the call' : `call ${index}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new BadRequest(`${where} must be an object {id, tool_name, arguments, source?}`);
  }
  const item = raw as Record<string, unknown>;
  const extra = Object.keys(item).find((k) => !ITEM_KEYS.has(k));
  if (extra !== undefined) throw new BadRequest(`${where} has an unknown member "${extra.slice(0, 64)}"`);
  const { id, tool_name: name, arguments: args, source, idempotency_key: key } = item;
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) {
    throw new BadRequest(`${where}: "tool_name" must be a string of 1-128 characters`);
  }
  if (id !== undefined && !(typeof id === 'string' && id.length <= 128) && !Number.isSafeInteger(id)) {
    throw new BadRequest(`${where}: "id" must be a string of at most 128 characters or an integer`);
  }
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
    throw new BadRequest(`${where}: "arguments" must be an object`);
  }
  if (source !== undefined && (typeof source !== 'string' || source.length > 128)) {
    throw new BadRequest(`${where}: "source" must be a string of at most 128 characters`);
  }
  if (key !== undefined && !isIdempotencyKey(key)) {
    throw new BadRequest(`${where}: "idempotency_key" must be 1-255 visible ASCII characters`);
  }
  return {
    id: (id as string | number | undefined) ?? index ?? 0,
    tool_name: name,
    arguments: (args as Record<string, unknown> | undefined) ?? {},
    source: source as string | undefined,
    idempotency_key: key as string | undefined,
  };
}

/** The body of `tool-calls` as items: one object, or an array of 1 to MAX_BATCH_EXECUTIONS. */
function callItems(body: unknown): CallItem[] {
  if (!Array.isArray(body)) return [callItem(body, undefined)];
  if (body.length === 0 || body.length > MAX_BATCH_EXECUTIONS) {
    throw new BadRequest(
      `a batch holds 1 to ${MAX_BATCH_EXECUTIONS} calls (this one has ${body.length}); send more in several requests`,
    );
  }
  const items = body.map((raw, i) => callItem(raw, i));
  const ids = new Set(items.map((i) => String(i.id)));
  if (ids.size !== items.length) throw new BadRequest('each call of a batch needs its own "id"');
  return items;
}

/** The profile a credential reached, as the REST answers name it. */
function profileOf(admitted: Admitted) {
  const { exposure } = admitted;
  if (exposure.kind === 'aei') {
    return {
      aei_id: exposure.config.aei.id,
      aei_name: exposure.config.aei.name,
      caller: exposure.caller?.name ?? (exposure.playground ? PLAYGROUND_CALLER : null),
      via: exposure.caller?.via ?? (exposure.playground ? 'playground' : 'key'),
    };
  }
  const id = exposure.kind === 'legacy' ? exposure.config.instance.id : '';
  return { aei_id: id, aei_name: 'legacy MCP instance', caller: null, via: 'key' };
}

/** A tool as the REST listing shows it. */
function restTool(tool: ExposedTool) {
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description,
    input_schema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { output_schema: tool.outputSchema }),
    ...(tool.annotations !== undefined && { annotations: tool.annotations }),
    source: tool.source,
  };
}

export async function restRoutes(app: FastifyInstance, deps: RestRouteDeps): Promise<void> {
  const { config, cache, client, limiter, executeLimiter, metrics } = deps;

  const refuse = (request: FastifyRequest, reply: FastifyReply, refusal: JsonRpcErrorAnswer) =>
    sendRestError(request, reply, {
      status: refusal.status,
      code: refusal.bindery as ErrorCode,
      message: refusal.message,
      ...(refusal.headers && { headers: refusal.headers }),
    });

  /** The request's credential admitted (Origin/Host, key, rate limit, exposure), or the refusal sent. */
  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<Admitted | undefined> {
    const foreign = originRefusal(config, request.headers);
    if (foreign) {
      refuse(request, reply, foreign);
      return undefined;
    }
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      sendRestError(request, reply, {
        status: 401,
        code: 'UNAUTHORIZED',
        message:
          'send an exposure’s api_key, or a personal MCP key (with the caller in X-Bindery-Caller), as "Authorization: Bearer <key>"',
        headers: { 'www-authenticate': 'Bearer' },
      });
      return undefined;
    }
    const header = request.headers[CALLER_HEADER];
    const caller = typeof header === 'string' && header !== '' ? header : undefined;
    if (caller !== undefined && !isCallerName(caller)) {
      sendRestError(request, reply, {
        status: 400,
        code: 'VALIDATION_FAILED',
        message: `${CALLER_HEADER}: a caller name is 1-64 characters: lower-case letters, digits, ".", "_" and "-", starting with a letter or digit`,
      });
      return undefined;
    }
    const credential: Credential = token.startsWith(PERSONAL_KEY_PREFIX)
      ? { kind: 'personal', personalKey: token, caller }
      : { kind: 'api_key', apiKey: token };
    const hash = credentialHash(credential);
    const admission = await admitKey(
      { limiter, cache, metrics, log: request.log },
      credential,
      hash,
      'v2',
      request.ip,
    );
    if (admission.refusal) {
      refuse(request, reply, admission.refusal);
      return undefined;
    }
    if (credential.kind === 'personal') request.log = request.log.child({ caller: caller ?? null });
    const owner = credential.kind === 'personal' ? keyHash(credential.personalKey) : hash;
    return { exposure: admission.exposure, owner, credential };
  }

  /** Runs the items, each answered (a refusal of one never fails the others). */
  async function runCalls(
    request: FastifyRequest,
    reply: FastifyReply,
    admitted: Admitted,
    items: CallItem[],
  ): Promise<CallAnswer[]> {
    const index = toolIndex(admitted.exposure, client);
    const cancel = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) cancel.abort('the client closed its request');
    });
    const answers: CallAnswer[] = new Array(items.length);
    await inPool(items.length, config.progressive.concurrency, async (i) => {
      const item = items[i]!;
      const failed = (code: ErrorCode, message: string, details?: Record<string, unknown>, source?: string) =>
        (answers[i] = {
          id: item.id,
          tool_name: item.tool_name,
          source_used: source ?? null,
          ok: false,
          error: { code, message, ...(details && { details }) },
        });
      const routed = routeTool(index, item.tool_name, item.source);
      if (routed.ignoredHint !== undefined) {
        request.log.info({ tool: item.tool_name, source: routed.ignoredHint }, 'unknown source hint ignored');
      }
      if (!('tool' in routed)) {
        metrics.toolCalls.inc({ status: 'unknown_tool' });
        const refusal = unknownToolRefusal(item.tool_name, routed, () => index.list.map((t) => t.name));
        return failed(refusal.ambiguous ? 'CONFLICT' : 'NOT_FOUND', refusal.message, refusal.details);
      }
      const tool = routed.tool;
      const unstorable = unstorableArguments(item.arguments);
      if (unstorable) return failed(unstorable.code, unstorable.message, unstorable.details, tool.source);
      const outcome = await runWithin(
        tool,
        item.arguments,
        `rest:${String(request.id)}:${i}`,
        { idempotencyKey: item.idempotency_key, sourceHint: item.source, signal: cancel.signal },
        config.progressive.itemTimeoutMs,
      );
      metrics.toolCalls.inc({ status: outcome.ok ? 'ok' : 'error' });
      answers[i] = outcome.ok
        ? { id: item.id, tool_name: item.tool_name, source_used: tool.source, ok: true, result: outcome.data }
        : {
            id: item.id,
            tool_name: item.tool_name,
            source_used: tool.source,
            ok: false,
            error: outcome.error,
          };
    });
    return answers;
  }

  /** Spends `count` call tokens of the credential; false (refusal sent) when they are not there. */
  function charge(request: FastifyRequest, reply: FastifyReply, admitted: Admitted, count: number): boolean {
    const wait = executeLimiter.take(`key:${admitted.owner}`, Date.now(), count);
    if (wait <= 0) return true;
    sendRestError(request, reply, {
      status: 429,
      code: 'RATE_LIMITED',
      message: `too many tool calls; retry in ${wait} s`,
      headers: { 'retry-after': String(wait) },
    });
    return false;
  }

  app.get(`${REST_PATH}/tools`, async (request, reply) => {
    const admitted = await admit(request, reply);
    if (!admitted) return reply;
    const { list } = toolIndex(admitted.exposure, client);
    return { profile: profileOf(admitted), tools: list.map(restTool) };
  });

  /** What `parse` makes of the request, or undefined once its BadRequest was answered (400). */
  function parsed<T>(request: FastifyRequest, reply: FastifyReply, parse: () => T): T | undefined {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      sendRestError(request, reply, { status: 400, code: 'VALIDATION_FAILED', message: error.message });
      return undefined;
    }
  }

  // Each call's spans are children of its request's span (http/request-span.ts), which continues
  // the caller's `traceparent` header.
  app.post(`${REST_PATH}/tool-calls`, (request, reply) =>
    servedInSpan(
      request,
      reply,
      'POST tool-calls',
      undefined,
      { 'http.route': `${REST_PATH}/tool-calls` },
      async () => {
        const items = parsed(request, reply, () => callItems(request.body));
        if (!items) return reply;
        const admitted = await admit(request, reply);
        if (!admitted || !charge(request, reply, admitted, items.length)) return reply;
        return runCalls(request, reply, admitted, items);
      },
    ),
  );

  app.post<{ Params: { tool: string } }>(`${REST_PATH}/tools/:tool`, (request, reply) => {
    // A name longer than any tool's (the path is not yet checked) is left out of the span.
    const tool = request.params.tool.length <= MAX_TARGET_CHARS ? request.params.tool : undefined;
    return servedInSpan(
      request,
      reply,
      tool === undefined ? 'tools/call' : `tools/call ${tool}`,
      undefined,
      { 'http.route': `${REST_PATH}/tools/:tool`, ...(tool !== undefined && { 'gen_ai.tool.name': tool }) },
      () => callOne(request, reply),
    );
  });

  async function callOne(request: FastifyRequest<{ Params: { tool: string } }>, reply: FastifyReply) {
    const item = parsed(request, reply, () =>
      callItem({ id: 0, tool_name: request.params.tool, arguments: request.body ?? {} }, undefined),
    );
    if (!item) return reply;
    const admitted = await admit(request, reply);
    if (!admitted) return reply;
    // Only exposed names here: an operation of the OpenAPI document is one tool, no routing.
    if (!toolIndex(admitted.exposure, client).byName.has(item.tool_name)) {
      return sendRestError(request, reply, {
        status: 404,
        code: 'NOT_FOUND',
        message: `no tool "${item.tool_name}" in this profile (GET ${REST_PATH}/tools lists them)`,
      });
    }
    if (!charge(request, reply, admitted, 1)) return reply;
    const [answer] = await runCalls(request, reply, admitted, [item]);
    return answer;
  }

  app.get(`${REST_PATH}/openapi.json`, async (request, reply) => {
    const admitted = await admit(request, reply);
    if (!admitted) return reply;
    const profile = profileOf(admitted);
    const { list } = toolIndex(admitted.exposure, client);
    return openApiDocument({
      title: profile.aei_name,
      version: admitted.exposure.kind === 'aei' ? String(admitted.exposure.config.aei.config_version) : '1',
      serverUrl: `${request.protocol}://${request.host}`,
      tools: list,
      caller: admitted.credential.kind === 'personal' ? (admitted.credential.caller ?? null) : undefined,
    });
  });
}
