/**
 * The host functions one custom tool call gets (`ctx` in the sandbox), each confined to what its
 * ADI declares: `ctx.context.read(path)` inside its context, `ctx.context.write(op, args)` only on
 * a read-write context, `ctx.fetch` only to its allowed hosts, `ctx.secrets` only the secrets it
 * names; in a trial run (ToolCall.trial) `ctx.context.write` refuses. `ctx.progress` and `ctx.log`
 * reach the caller when it listens (ToolCall.progress and ToolCall.log). The context functions are
 * the context kind's own paths (the context cache, the row-locked store, idempotency records), not
 * a second implementation of them.
 */
import { OPERATIONS, parsePointerArgument, resolveTokens, type JsonValue } from '@bindery/context-ops';
import { isOperationType, type CustomToolConfig, type OperationType } from '@bindery/contracts';
import { DomainError } from '../../domain/errors.ts';
import { fetchGuarded } from '../../outbound/outbound-fetch.ts';
import type { ToolFetchRequest, ToolFetchResponse, ToolHost } from './sandbox/index.ts';
import { checkArguments } from '../arguments.ts';
import { argumentsDigest } from '../../audit/audit.ts';
import { headerNameProblem, isSendableHeaderValue } from '../../outbound/http-headers.ts';
import { ReplayedOutcome, type KeyedWrite } from '../idempotency.ts';
import type { ResolvedSecrets } from '../../secrets/secret-references.ts';
import { contextKind, type ContextKindServices } from '../context/context-kind.ts';
import { ToolAnswer, type ToolCall } from '../kind.ts';
import { hostAllowed } from './allowed-hosts.ts';

/** The write operations `ctx.context.write` runs. */
export const WRITE_OPERATIONS: readonly OperationType[] = Object.values(OPERATIONS)
  .filter((definition) => definition.kind === 'write')
  .map((definition) => definition.type);

const FETCH_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Largest answer body `ctx.fetch` reads (LIMIT_EXCEEDED above); the call's deadline bounds the time. */
export const FETCH_MAX_BODY_BYTES = 1024 * 1024;

/** Why `ctx.context.write` fails in a trial run (ToolCall.trial). */
export const TRIAL_WRITE_REFUSED =
  'ctx.context.write: a trial run cannot write; save the tool and call it to write';

/** What a call's host functions did that decides how a failure of the call is worded. */
export interface CallEffects {
  /** A context write or a fetch other than GET/HEAD was started: data may have changed. */
  changed: boolean;
}

/**
 * The host functions of one call of a custom tool with `config`. The call carries the context
 * kind's services: a write is a call of the context kind.
 */
export function customToolHost(
  call: ToolCall<ContextKindServices>,
  config: CustomToolConfig,
  secrets: ResolvedSecrets,
  effects: CallEffects,
): ToolHost {
  const host: ToolHost = {
    secrets: Object.fromEntries(config.secrets.map((name) => [name, secrets.value(name)])),
  };
  // What the caller hears while the call runs, with every form of a secret taken out as from the
  // answer (the worker has taken out the plain values already).
  const { progress, log } = call;
  if (progress) {
    host.progress = (report) =>
      progress(
        report.message === undefined ? report : { ...report, message: secrets.redact(report.message) },
      );
  }
  if (log) {
    host.log = {
      level: log.level,
      send: (line) => log.send({ level: line.level, data: secrets.redactJson(line.data as JsonValue) }),
    };
  }
  const { tableId, jsonPath } = call.adi;
  if (tableId !== null && jsonPath !== null) {
    host.readContext = (path) => readAt(call, tableId, jsonPath, path);
    if (config.context_write && call.trial) {
      // The function exists as in a real call, so the author sees why nothing was written.
      host.writeContext = () => Promise.reject(new DomainError('FORBIDDEN', TRIAL_WRITE_REFUSED));
    } else if (config.context_write) {
      let writes = 0;
      host.writeContext = async (op, args, signal) => {
        if (signal.aborted) throw ended('ctx.context.write');
        // Numbered as they arrive: the port keeps the tool's order, so a retry numbers alike.
        const sequence = writes++;
        return writeAt(call, tableId, jsonPath, op, args, sequence, effects);
      };
    }
  }
  if (config.allowed_hosts.length > 0) {
    host.fetch = async (request, signal) => {
      if (signal.aborted) throw ended('ctx.fetch');
      return fetchAllowed(call, config.allowed_hosts, request, signal, effects);
    };
  }
  return host;
}

function ended(fn: string): DomainError {
  return new DomainError('TIMEOUT', `${fn}: the call has already ended`);
}

/** `ctx.context.read(path)`: the node at `path` inside the tool's context (a cached parse). */
async function readAt(call: ToolCall, tableId: string, jsonPath: string, path: string): Promise<unknown> {
  // `..`, `.` and object internals are refused here, so a path never leaves the context.
  const tokens = parsePointerArgument(path, 'path');
  const { node } = await call.options.contexts.read({
    tableId,
    tokens: parsePointerArgument(jsonPath, undefined),
    pointer: jsonPath,
    toolName: call.toolName,
  });
  return resolveTokens(node, tokens, { argument: 'path', pointer: path });
}

/**
 * `ctx.context.write(op, args)`: the context kind runs the operation on the tool's context, with
 * its argument schema, row lock and expected_version. With an idempotency key on the call, the
 * n-th write of the call is keyed `<key> #n` (a space never occurs in a caller's key) and tied to
 * the call's digest: a retry of the call replays the writes that committed, in order, and runs
 * the rest.
 */
async function writeAt(
  call: ToolCall<ContextKindServices>,
  tableId: string,
  jsonPath: string,
  op: string,
  args: Record<string, unknown>,
  sequence: number,
  effects: CallEffects,
): Promise<JsonValue> {
  if (!isOperationType(op) || !WRITE_OPERATIONS.includes(op)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `ctx.context.write: op ${JSON.stringify(op).slice(0, 80)} is not a write operation (${WRITE_OPERATIONS.join(', ')}); read with ctx.context.read`,
    );
  }
  const checked = checkArguments(OPERATIONS[op].inputSchema, args, `ctx.context.write("${op}")`);
  effects.changed = true;
  try {
    const answer = await contextKind.run({
      ...call,
      adi: { tableId, jsonPath, operationType: op, config: {} },
      args: checked,
      keyed: call.keyed && writeKey(call.keyed, sequence, op, checked),
    });
    // A context operation answers plain JSON, never a ToolAnswer.
    return answer instanceof ToolAnswer ? answer.value : answer;
  } catch (error) {
    if (error instanceof ReplayedOutcome) {
      return error.answer instanceof ToolAnswer ? error.answer.value : error.answer;
    }
    throw error;
  }
}

function writeKey(
  keyed: KeyedWrite,
  sequence: number,
  op: OperationType,
  args: Record<string, unknown>,
): KeyedWrite {
  return {
    scope: keyed.scope,
    key: `${keyed.key} #${sequence}`,
    digest: argumentsDigest({ call: keyed.digest, op, arguments: args }),
    notBefore: keyed.notBefore,
  };
}

/**
 * `ctx.fetch(url, init)`: only to an allowed host (redirects too), through the SSRF-guarded
 * dispatcher, the answer read to FETCH_MAX_BODY_BYTES as UTF-8 text. Messages name the host,
 * never the path or query (a secret may be in them).
 */
async function fetchAllowed(
  call: ToolCall,
  allowed: readonly string[],
  request: ToolFetchRequest,
  signal: AbortSignal,
  effects: CallEffects,
): Promise<ToolFetchResponse> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'ctx.fetch: url is not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DomainError('VALIDATION_FAILED', `ctx.fetch: only http and https URLs, not ${url.protocol}`);
  }
  const refuse = (target: URL, what: string) => {
    if (hostAllowed(target, allowed)) return;
    throw new DomainError(
      'FORBIDDEN',
      `ctx.fetch: ${what} ${target.host} is not in this tool's allowed_hosts (${allowed.join(', ')})`,
      { host: target.host, allowed_hosts: [...allowed] },
    );
  };
  refuse(url, 'host');
  const method = request.method.toUpperCase();
  if (!FETCH_METHODS.has(method)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `ctx.fetch: method ${JSON.stringify(request.method).slice(0, 40)} is not one of ${[...FETCH_METHODS].join(', ')}`,
    );
  }
  for (const [name, value] of Object.entries(request.headers)) {
    const problem = headerNameProblem(name);
    if (problem) throw new DomainError('VALIDATION_FAILED', `ctx.fetch: ${problem}`);
    if (!isSendableHeaderValue(value)) {
      throw new DomainError('VALIDATION_FAILED', `ctx.fetch: the value of header ${name} has a line break`);
    }
  }
  if (method !== 'GET' && method !== 'HEAD') effects.changed = true;
  const answer = await fetchGuarded(
    call.options.outbound,
    url,
    {
      method,
      headers: request.headers,
      ...(request.body !== undefined && { body: request.body }),
      signal,
      beforeRedirect: (target) => refuse(target, 'the redirect to'),
    },
    { maxBodyBytes: FETCH_MAX_BODY_BYTES },
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { status: answer.status, headers, body: answer.body.toString('utf8'), url: answer.url };
}
