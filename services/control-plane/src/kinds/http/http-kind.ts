/**
 * The `http` kind: one call of an HTTP API per tool call (kinds/http). Saved, its config is
 * checked whole (method, URL template, where each argument goes, headers, bounds) and every secret
 * it references must be one of the caller's; run, it resolves those secrets for the tool's owner,
 * sends the request through the executor's outbound dispatcher (the SSRF guard) and takes every
 * secret value out of whatever comes back, answers and errors alike. A caller that gives up cuts
 * the request (call.signal).
 */
import {
  CreateHttpAdiBody,
  HTTP_ADI_PATCH_FIELDS,
  HTTP_TOOL_LIMITS,
  HttpToolConfig,
  type UpdateAdiBody,
} from '@bindery/contracts';
import { OpError, type JsonSchema } from '@bindery/context-ops';
import { DomainError } from '../../domain/errors.ts';
import {
  callHttpTool,
  httpToolAnnotations,
  httpToolInputSchema,
  httpToolSecretNames,
  validateHttpToolConfig,
  type CheckedHttpToolConfig,
} from './index.ts';
import { parseUrlTemplate } from './url-template.ts';
import { createHash } from 'node:crypto';
import type { JsonValue } from '@bindery/context-ops';
import { ReplayedOutcome, recordOutcome, replayIfRecorded, type KeyedWrite } from '../idempotency.ts';
import { uniqueViolation } from '../../domain/prisma-errors.ts';
import {
  missingSecretError,
  missingSecretNames,
  resolveSecrets,
  secretReferences,
} from '../../secrets/secret-references.ts';
import { defaultToolName } from '../tool-naming.ts';
import { ToolAnswer, type KindColumns, type SaveScope, type ToolCall, type ToolKindModule } from '../kind.ts';

/** The config fields of the create body and of a PATCH (the rest is common to every kind). */
const CONFIG_FIELDS: readonly string[] = Object.keys(HttpToolConfig.properties);

type HttpPatch = Pick<UpdateAdiBody, 'method' | 'url'> & Record<string, unknown>;

const TITLE_MAX = 200;

/** A stored config: checked when it was saved (a hand-edited row is checked by the call itself). */
function configOf(columns: KindColumns): CheckedHttpToolConfig {
  return columns.config as CheckedHttpToolConfig;
}

/** `GET api.example.com/users/{id}`, within the title limit. */
function titleOf(config: HttpToolConfig): string {
  let where: string;
  try {
    const template = parseUrlTemplate(config.url);
    where = `${template.origin.replace(/^https?:\/\//i, '')}${template.path}`;
  } catch {
    where = config.url;
  }
  const title = `${config.method} ${where}`;
  return title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX - 1)}…` : title;
}

/**
 * Refuses a secret the caller does not have, naming the header or query value that references it
 * (imports collect the names instead: `scope.missingSecrets`).
 */
async function checkSecrets(config: CheckedHttpToolConfig, scope: SaveScope): Promise<void> {
  const names = httpToolSecretNames(config);
  const missing = await missingSecretNames(scope.db, scope.caller.userId, names);
  if (missing.length === 0) return;
  if (scope.missingSecrets) {
    for (const name of missing) scope.missingSecrets.add(name);
    return;
  }
  const places: [string, Record<string, string> | undefined][] = [
    ['headers', config.headers],
    ['query', config.query],
  ];
  for (const [part, values] of places) {
    for (const [key, value] of Object.entries(values ?? {})) {
      if (secretReferences(value).some((name) => missing.includes(name))) {
        throw missingSecretError(missing, `${part}/${key}`);
      }
    }
  }
  throw missingSecretError(missing);
}

/** Methods that only read: a key sent with them is ignored, as for context reads. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The `Idempotency-Key` an API receives: stable for retries of one call (same exposure, same key),
 * different across exposures that happen to use the same key, and naming neither.
 */
function forwardedKey(keyed: KeyedWrite): string {
  return `bindery-${createHash('sha256').update(`${keyed.scope}\n${keyed.key}`).digest('hex').slice(0, 40)}`;
}

/** How an answer is recorded for replays: its form, so a text answer is replayed as text. */
function recorded(answer: ToolAnswer): Record<string, JsonValue> {
  return { form: answer.form, value: answer.value };
}

function replayed(stored: JsonValue | ToolAnswer): ToolAnswer {
  if (stored instanceof ToolAnswer) return stored;
  const { form, value } = stored as { form?: unknown; value?: JsonValue };
  return form === 'text' ? ToolAnswer.text(String(value)) : ToolAnswer.structured(value ?? null);
}

/**
 * With an idempotency key on a call that may write: the key's first answer is replayed without
 * calling the API again (CONFLICT for the same key on another call), and a new call's answer is
 * recorded once the API answered. The API call and the record are not one transaction: a retry
 * racing the first call (both before either answered) reaches the API twice, which the forwarded
 * `Idempotency-Key` lets the API fold into one; a record that cannot be written costs only the
 * replay, never the answer.
 */
async function keyedCall(
  call: ToolCall,
  method: string,
  send: () => Promise<ToolAnswer>,
): Promise<ToolAnswer> {
  const keyed = call.keyed && !READ_METHODS.has(method) ? call.keyed : undefined;
  if (!keyed) return send();
  try {
    await replayIfRecorded(call.ctx.prisma, keyed);
  } catch (error) {
    if (error instanceof ReplayedOutcome) throw new ReplayedOutcome(replayed(error.answer));
    throw error;
  }
  const answer = await send();
  try {
    await recordOutcome(call.ctx.prisma, keyed, recorded(answer));
  } catch (error) {
    // Another call with this key answered first: its record stands (the API saw the same key).
    // Any other failure: the API applied the call, so its answer goes out all the same.
    if (!uniqueViolation(error)) {
      call.options.log?.debug({ err: error }, 'the answer of a keyed HTTP tool call was not recorded');
    }
  }
  return answer;
}

/**
 * Runs one call. Secrets are resolved for the tool's owner (the exposure's user, who owns the ADI)
 * and filled into the config's headers and query only; the answer, every error message and detail
 * leave with their values replaced by `[secret NAME]`, since APIs echo credentials back.
 */
async function run(call: ToolCall): Promise<ToolAnswer> {
  const config = configOf(call.adi);
  return keyedCall(call, config.method, () => send(call, config));
}

async function send(call: ToolCall, config: CheckedHttpToolConfig): Promise<ToolAnswer> {
  const secrets = await resolveSecrets(call.ctx, call.userId, httpToolSecretNames(config));
  const keyed = call.keyed && !READ_METHODS.has(config.method) ? call.keyed : undefined;
  try {
    const answer = await callHttpTool(config, call.args, {
      idempotencyKey: keyed && forwardedKey(keyed),
      signal: call.signal,
      dispatcher: call.options.outbound,
      resolveSecrets: (text) => secrets.fill(text),
      redact: (text) => secrets.redact(text),
      // The operator's bound of a tool answer applies to an API's answer too.
      limits: {
        maxResponseBytes: Math.min(HTTP_TOOL_LIMITS.maxResponseBytes, call.options.limits.maxResultBytes),
      },
    });
    return answer.type === 'json'
      ? ToolAnswer.structured(secrets.redactJson(answer.value))
      : ToolAnswer.text(secrets.redact(answer.text));
  } catch (error) {
    if (error instanceof DomainError) {
      throw new DomainError(error.code, secrets.redact(error.message), secrets.redactJson(error.details));
    }
    if (error instanceof OpError) {
      throw new OpError(error.code, secrets.redact(error.message), secrets.redactJson(error.details));
    }
    // Anything else is a bug, logged with its message: that message must not carry a value either.
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(secrets.redact(message));
  }
}

export const httpKind: ToolKindModule<CreateHttpAdiBody, HttpPatch> = {
  kind: 'http',
  createBody: CreateHttpAdiBody,
  patchFields: HTTP_ADI_PATCH_FIELDS,
  columnsOf(body) {
    const source = body as unknown as Record<string, unknown>;
    const config = Object.fromEntries(
      CONFIG_FIELDS.filter((field) => source[field] !== undefined).map((field) => [field, source[field]]),
    );
    return { tableId: null, jsonPath: null, operationType: null, config };
  },
  patched(current, patch) {
    const config: Record<string, unknown> = { ...current.config };
    for (const field of CONFIG_FIELDS) {
      if (!(field in patch)) continue;
      // null removes an optional field: its default applies again.
      if (patch[field] === null) delete config[field];
      else config[field] = patch[field];
    }
    return { ...current, config };
  },
  async check(columns, scope) {
    if (columns.tableId !== null || columns.operationType !== null) {
      const field = columns.tableId !== null ? 'table_id' : 'operation_type';
      throw new DomainError('VALIDATION_FAILED', `${field}: an http ADI has no table or operation`, {
        field,
      });
    }
    const config = validateHttpToolConfig(columns.config);
    await checkSecrets(config, scope);
    return { ...columns, config };
  },
  defaultName: (_columns, adiId) => defaultToolName('http', adiId),
  defaultDescription(columns) {
    const config = configOf(columns);
    return `Calls the HTTP API: ${titleOf(config)}.`;
  },
  inputSchema: (columns) => httpToolInputSchema(configOf(columns)) as JsonSchema,
  outputSchema: () => null,
  annotations(columns) {
    const config = configOf(columns);
    return { title: titleOf(config), ...httpToolAnnotations(config) };
  },
  adiRef(adiId, columns) {
    const config = configOf(columns);
    return { kind: 'http', adi_id: adiId, method: config.method, url: config.url };
  },
  // The method as stored (six values at most, so a bounded metric label); a hand-edited row that
  // lost it still gets a label.
  operation: (columns) => (typeof columns.config.method === 'string' ? columns.config.method : 'unknown'),
  run,
};
