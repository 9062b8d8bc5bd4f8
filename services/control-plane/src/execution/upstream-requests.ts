/**
 * One resources/read, prompts/get or completion/complete of an upstream server attached to an AEI,
 * asked by a gateway (`POST /internal/aei/{aei_id}/upstream-request`): only an attached server, and
 * only what its snapshot lists (a resource, a URI one of its resource templates matches, a prompt,
 * a template) (kinds/mcp/upstream-snapshot.ts). Reads and prompts are metered and audited like a
 * tool call; completions (asked as a person types) are metered only.
 */
import {
  UPSTREAM_WATCH_TTL_MS,
  type ErrorCode,
  type UpstreamRequestAnswer,
  type UpstreamRequestBody,
  type UpstreamWatchAnswer,
  type UpstreamWatchBody,
} from '@bindery/contracts';
import { DomainError } from '../domain/errors.ts';
import { argumentsDigest, type AuditStatus } from '../audit/audit.ts';
import { RequestStateError, type StateOwner } from './request-state.ts';
import type { InputRequiredAnswer, UpstreamInput } from '../kinds/mcp/instance.ts';
import type { DomainContext } from '../domain/context.ts';
import type { ExecutorOptions } from './executor-options.ts';
import { OWNER_STATUS } from '../accounts/users.ts';
import { prefixedToolName } from '../kinds/mcp/upstream-names.ts';
import {
  matchesTemplate,
  shown,
  storedEntries,
  type PromptEntry,
  type ResourceEntry,
  type ResourceTemplateEntry,
} from '../kinds/mcp/upstream-snapshot.ts';

/** A failure as the gateway is answered it (200, `error`): its Bindery code, message and details. */
export function errorAnswer(error: DomainError): {
  error: { code: string; message: string; details?: Record<string, unknown> | null };
} {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details !== undefined && { details: error.details }),
    },
  };
}

/** A refusal before the upstream was asked: audited as `refused`. */
class Refused extends DomainError {}

/**
 * The attachment of the server to a serving AEI: Refused (FORBIDDEN) while the AEI or its owner is
 * disabled, NOT_FOUND when the server is not attached to it.
 */
function servingAttachment<T>(
  aei: { name: string; status: string; user: { disabledAt: Date | null } },
  attachment: T | null,
  serverId: string,
): T {
  if (aei.status !== 'enabled' || aei.user.disabledAt !== null)
    throw new Refused('FORBIDDEN', `exposure "${aei.name}" is disabled`);
  if (!attachment) {
    throw new Refused('NOT_FOUND', `upstream server ${serverId} is not attached to exposure "${aei.name}"`, {
      upstream_server_id: serverId,
    });
  }
  return attachment;
}

/** JSON-RPC codes an upstream answers with, as MCP uses them. */
export const INVALID_PARAMS = -32602;
const RESOURCE_NOT_FOUND = -32002;

/** An upstream's JSON-RPC refusal in Bindery's terms (the pool reports it as UPSTREAM_FAILED). */
function mapped(error: DomainError, kind: 'resource' | 'prompt'): DomainError {
  const rpc = error.details?.rpc_code;
  if (error.code !== 'UPSTREAM_FAILED' || typeof rpc !== 'number') return error;
  if (rpc === RESOURCE_NOT_FOUND || (kind === 'resource' && rpc === INVALID_PARAMS))
    return new DomainError('NOT_FOUND', error.message, error.details);
  if (kind === 'prompt' && rpc === INVALID_PARAMS)
    return new DomainError('VALIDATION_FAILED', error.message, error.details);
  return error;
}

/**
 * One resources/read or prompts/get of an upstream server attached to the AEI, for a gateway:
 * checked (AEI enabled, owner enabled, server attached, URI or prompt in its snapshot), asked
 * through the server's pool, audited and metered. Failures are answers (`error`), not throws.
 */
export async function upstreamRequest(
  ctx: DomainContext,
  aeiId: string,
  body: UpstreamRequestBody,
  options: ExecutorOptions,
  signal?: AbortSignal,
): Promise<UpstreamRequestAnswer> {
  const read = body.read_resource;
  const get = body.get_prompt;
  const given = [read, get, body.complete].filter((member) => member !== undefined).length;
  if (given !== 1) {
    throw new DomainError('VALIDATION_FAILED', 'give exactly one of read_resource, get_prompt and complete', {
      field: read === undefined ? 'read_resource' : 'get_prompt',
    });
  }
  if (body.complete !== undefined) return upstreamCompletion(ctx, aeiId, body, options, signal);
  const aei = await ctx.prisma.aei.findUnique({ where: { id: aeiId }, include: OWNER_STATUS });
  // Without an AEI there is no owner to audit for: answer without a trail.
  if (!aei) return { error: { code: 'NOT_FOUND', message: `AEI ${aeiId} not found` } };
  const attachment = await ctx.prisma.aeiAttachment.findFirst({
    where: { aeiId, upstreamServerId: body.upstream_server_id },
    select: {
      prefix: true,
      upstreamServer: { select: { resources: true, resourceTemplates: true, prompts: true } },
    },
  });
  const kind = read ? 'resource' : 'prompt';
  const args = read ? { uri: read.uri } : { name: get!.name, arguments: get!.arguments ?? {} };
  const subject = read ? read.uri : attachment ? prefixedToolName(attachment.prefix, get!.name) : get!.name;
  const operation = read ? 'read' : 'get';
  const meter = options.metrics.execution('mcp', operation);
  const started = performance.now();
  const finish = async (status: AuditStatus, errorCode: ErrorCode | null) => {
    const durationMs = performance.now() - started;
    meter[status].observe(durationMs / 1000);
    await options.audit.record({
      userId: aei.userId,
      action: read ? 'upstream.resource.read' : 'upstream.prompt.get',
      aeiId,
      toolName: shown(subject),
      operation,
      args,
      status,
      errorCode,
      durationMs,
      requestId: body.request_id ?? null,
      caller: body.caller ?? null,
    });
  };
  try {
    const server = servingAttachment(aei, attachment, body.upstream_server_id).upstreamServer;
    if (
      read &&
      !storedEntries<ResourceEntry>(server.resources).some((r) => r.uri === read.uri) &&
      !matchesTemplate(read.uri, storedEntries<ResourceTemplateEntry>(server.resourceTemplates))
    ) {
      throw new Refused(
        'NOT_FOUND',
        `the upstream server lists no resource or template for "${shown(read.uri)}"`,
        {
          upstream_server_id: body.upstream_server_id,
        },
      );
    }
    if (get && !storedEntries<PromptEntry>(server.prompts).some((p) => p.name === get.name)) {
      throw new Refused('NOT_FOUND', `the upstream server lists no prompt "${shown(get.name)}"`, {
        upstream_server_id: body.upstream_server_id,
      });
    }
    const upstreams = options.upstreams;
    if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
    // The agent can be asked for input: a modern upstream may answer input_required, its own
    // state carried in ours (signed, bound to this request), and the retry's answers go to it.
    const owner: StateOwner = {
      aeiId,
      bindingId: `upstream:${body.upstream_server_id}:${kind}:${read ? read.uri : get!.name}`,
      caller: body.caller ?? null,
      argsDigest: argumentsDigest(args),
    };
    const input = body.input && upstreamInput(body.input, owner, options);
    const call = {
      signal,
      // The MCP session's own instance in per_session mode, the one its tool calls use.
      session: body.session_id === undefined ? undefined : `${aeiId}:${body.session_id}`,
      input,
    };
    let result: Record<string, unknown>;
    try {
      result = (
        read
          ? await upstreams.readResource(body.upstream_server_id, read.uri, call)
          : await upstreams.getPrompt(body.upstream_server_id, get!.name, get!.arguments ?? {}, call)
      ) as Record<string, unknown>;
    } catch (error) {
      throw error instanceof DomainError ? mapped(error, kind) : error;
    }
    const limit = options.limits.maxResultBytes;
    const size = Buffer.byteLength(JSON.stringify(result));
    if (result.resultType === 'input_required') {
      if (size > limit) {
        throw new DomainError(
          'RESULT_TOO_LARGE',
          `the upstream's input requests take ${size} bytes of JSON, more than the ${limit} allowed`,
          { limit_bytes: limit },
        );
      }
      await finish('input_required', null);
      const asked = result as unknown as InputRequiredAnswer;
      return {
        input_required: {
          requests: asked.inputRequests,
          state: options.requestStates.seal(owner, { upstream_state: asked.requestState ?? null }),
        },
      };
    }
    if (size > limit) {
      throw new DomainError(
        'RESULT_TOO_LARGE',
        `the upstream's answer takes ${size} bytes of JSON, more than the ${limit} allowed`,
        { limit_bytes: limit },
      );
    }
    await finish('ok', null);
    return { result };
  } catch (error) {
    if (!(error instanceof DomainError)) {
      meter.error.observe((performance.now() - started) / 1000);
      throw error;
    }
    await finish(error instanceof Refused ? 'refused' : 'error', error.code);
    return errorAnswer(error);
  }
}

/**
 * What the upstream is told of the agent: its capabilities, the retry's answers, and the upstream's
 * own state of the previous round, from our signed state once it is shown to be this request's
 * (VALIDATION_FAILED otherwise, which the gateway answers as -32602).
 */
function upstreamInput(
  input: NonNullable<UpstreamRequestBody['input']>,
  owner: StateOwner,
  options: ExecutorOptions,
): UpstreamInput {
  let state: string | undefined;
  if (input.state !== undefined) {
    try {
      const carried = options.requestStates.open(input.state, owner).upstream_state;
      if (typeof carried === 'string') state = carried;
    } catch (error) {
      if (!(error instanceof RequestStateError)) throw error;
      throw new Refused('VALIDATION_FAILED', error.message, { field: 'requestState' });
    }
  }
  return {
    capabilities: input.capabilities,
    ...(input.responses !== undefined && { responses: input.responses }),
    ...(state !== undefined && { state }),
  };
}

/**
 * A gateway's clients subscribed to resources of an upstream server attached to the AEI: each URI
 * the server lists (or one of its templates matches) is watched for UPSTREAM_WATCH_TTL_MS (the
 * server subscribed to upstream, its updates told to the gateways); the others are refused by
 * name. NOT_FOUND for an AEI that does not exist, is disabled, or has no such server attached.
 */
export async function watchUpstreamResources(
  ctx: DomainContext,
  aeiId: string,
  body: UpstreamWatchBody,
  options: ExecutorOptions,
): Promise<UpstreamWatchAnswer> {
  const aei = await ctx.prisma.aei.findUnique({ where: { id: aeiId }, include: OWNER_STATUS });
  if (!aei || aei.status !== 'enabled' || aei.user.disabledAt !== null) {
    throw new DomainError('NOT_FOUND', `AEI ${aeiId} not found or disabled`);
  }
  const attachment = await ctx.prisma.aeiAttachment.findFirst({
    where: { aeiId, upstreamServerId: body.upstream_server_id },
    select: { upstreamServer: { select: { resources: true, resourceTemplates: true } } },
  });
  if (!attachment) {
    throw new DomainError(
      'NOT_FOUND',
      `upstream server ${body.upstream_server_id} is not attached to AEI ${aeiId}`,
    );
  }
  const upstreams = options.upstreams;
  if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
  const listed = storedEntries<ResourceEntry>(attachment.upstreamServer.resources);
  const templates = storedEntries<ResourceTemplateEntry>(attachment.upstreamServer.resourceTemplates);
  const answer: UpstreamWatchAnswer = { ttl_ms: UPSTREAM_WATCH_TTL_MS, watched: [], refused: [] };
  for (const uri of new Set(body.uris)) {
    if (!listed.some((r) => r.uri === uri) && !matchesTemplate(uri, templates)) {
      answer.refused.push({
        uri,
        code: 'NOT_FOUND',
        message: `the upstream server lists no resource "${shown(uri)}"`,
      });
      continue;
    }
    try {
      if (await upstreams.watchResource(body.upstream_server_id, uri, UPSTREAM_WATCH_TTL_MS))
        answer.watched.push(uri);
      else {
        answer.refused.push({
          uri,
          code: 'VALIDATION_FAILED',
          message:
            'the upstream server offers no resource subscriptions (resources.subscribe), so its changes cannot be followed',
        });
      }
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      answer.refused.push({ uri, code: error.code, message: error.message });
    }
  }
  return answer;
}

/**
 * completion/complete of an attached server's prompt argument (by the prompt's upstream name) or
 * resource template argument (by the template as listed), for a gateway: checked like a read,
 * metered, not audited (a client asks one per keystroke). A server without completions offers none.
 */
async function upstreamCompletion(
  ctx: DomainContext,
  aeiId: string,
  body: UpstreamRequestBody,
  options: ExecutorOptions,
  signal?: AbortSignal,
): Promise<UpstreamRequestAnswer> {
  const complete = body.complete!;
  const meter = options.metrics.execution('mcp', 'complete');
  const started = performance.now();
  try {
    const aei = await ctx.prisma.aei.findUnique({ where: { id: aeiId }, include: OWNER_STATUS });
    if (!aei) throw new DomainError('NOT_FOUND', `AEI ${aeiId} not found`);
    const attachment = await ctx.prisma.aeiAttachment.findFirst({
      where: { aeiId, upstreamServerId: body.upstream_server_id },
      select: { upstreamServer: { select: { resourceTemplates: true, prompts: true } } },
    });
    const server = servingAttachment(aei, attachment, body.upstream_server_id).upstreamServer;
    const { ref } = complete;
    const listed =
      ref.type === 'ref/prompt'
        ? storedEntries<PromptEntry>(server.prompts).some((p) => p.name === ref.name)
        : storedEntries<ResourceTemplateEntry>(server.resourceTemplates).some(
            (t) => t.uri_template === ref.uri,
          );
    if (!listed) {
      throw new DomainError(
        'NOT_FOUND',
        ref.type === 'ref/prompt'
          ? `the upstream server lists no prompt "${shown(ref.name)}"`
          : `the upstream server lists no resource template "${shown(ref.uri)}"`,
        { upstream_server_id: body.upstream_server_id },
      );
    }
    const upstreams = options.upstreams;
    if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
    let result: Record<string, unknown>;
    try {
      result = (await upstreams.complete(
        body.upstream_server_id,
        {
          ref,
          argument: complete.argument,
          ...(complete.context !== undefined && { context: complete.context }),
        },
        { signal, session: body.session_id === undefined ? undefined : `${aeiId}:${body.session_id}` },
      )) as unknown as Record<string, unknown>;
    } catch (error) {
      throw error instanceof DomainError
        ? mapped(error, ref.type === 'ref/prompt' ? 'prompt' : 'resource')
        : error;
    }
    const size = Buffer.byteLength(JSON.stringify(result));
    if (size > options.limits.maxResultBytes) {
      throw new DomainError(
        'RESULT_TOO_LARGE',
        `the upstream's completions take ${size} bytes of JSON, more than the ${options.limits.maxResultBytes} allowed`,
        { limit_bytes: options.limits.maxResultBytes },
      );
    }
    meter.ok.observe((performance.now() - started) / 1000);
    return { result };
  } catch (error) {
    meter.error.observe((performance.now() - started) / 1000);
    if (!(error instanceof DomainError)) throw error;
    return errorAnswer(error);
  }
}
