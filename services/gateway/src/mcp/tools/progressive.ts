/**
 * The five (or six) catalog tools of a progressive AEI: initialize_session, get_categories,
 * get_apis_by_category, get_api_details, execute_apis (and search_apis). Answers are JSON text;
 * failures are isError results with {error: {code, message, details}}. Executions go through the
 * same executor path as direct tools, so validation and audit are the same.
 */
import {
  MAX_BATCH_EXECUTIONS,
  PROGRESSIVE_TOOL_NAMES,
  SEARCH_TOOL_NAME,
  isIdempotencyKey,
  type ConfigV2,
  type ErrorCode,
  toolError,
} from '@bindery/contracts';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  appsOf,
  apisOf,
  bindingOf,
  categoriesOf,
  detailsOf,
  findApp,
  searchApis,
  type App,
} from './catalog.ts';
import { unstorableArguments } from '../unstorable-arguments.ts';
import type { RateLimiter } from '../../http/rate-limit.ts';
import type { SessionState, SessionStateStore } from './progressive-sessions.ts';
import { inPool, runWithin } from './batch.ts';
import type { ToolIndex } from './tool-index.ts';

export interface ProgressiveDeps {
  store: SessionStateStore;
  /** Buckets for execute_apis items, per session and per api_key. */
  executeLimiter: RateLimiter;
  keyHash: string;
  concurrency: number;
  itemTimeoutMs: number;
}

class CatalogError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

const ok = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });
const fail = (e: CatalogError): CallToolResult => toolError(e);

/** True for the names this module answers (search_apis only when the AEI enables it). */
export function isCatalogTool(name: string, config: ConfigV2): boolean {
  return (
    (PROGRESSIVE_TOOL_NAMES as readonly string[]).includes(name) ||
    (name === SEARCH_TOOL_NAME && config.aei.catalog_search)
  );
}

function text(args: Record<string, unknown>, name: string): string {
  const value = args[name];
  if (typeof value !== 'string' || value === '') {
    throw new CatalogError('VALIDATION_FAILED', `"${name}" must be a non-empty string`, { argument: name });
  }
  return value;
}

function strings(args: Record<string, unknown>, name: string, max: number): string[] {
  const value = args[name];
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > max ||
    !value.every((v) => typeof v === 'string')
  ) {
    throw new CatalogError('VALIDATION_FAILED', `"${name}" must be a list of 1 to ${max} strings`, {
      argument: name,
    });
  }
  return value as string[];
}

async function sessionApp(
  config: ConfigV2,
  sessionId: string | undefined,
  deps: ProgressiveDeps,
): Promise<{ app: App; state: SessionState; sessionId: string }> {
  const state = sessionId === undefined ? undefined : await deps.store.get(sessionId);
  if (sessionId === undefined || !state) {
    throw new CatalogError('SESSION_NOT_INITIALIZED', 'call initialize_session with an app_id first', {
      apps: appsOf(config).map((a) => a.slug),
    });
  }
  const app = findApp(config, state.app_id);
  if (!app) {
    throw new CatalogError(
      'SESSION_NOT_INITIALIZED',
      `app "${state.app_id}" is no longer exposed here; call initialize_session again`,
      {
        apps: appsOf(config).map((a) => a.slug),
      },
    );
  }
  return { app, state, sessionId };
}

/**
 * The session's catalog cache, rebuilt when the AEI, its config version or the app changed (that
 * is how an invalidation drops it, in memory and in Redis alike; a caller entry's session changes
 * AEI when its caller is mapped elsewhere).
 */
function catalogOf(state: SessionState, config: ConfigV2, app: App): NonNullable<SessionState['catalog']> {
  const version = config.aei.config_version;
  const aeiId = config.aei.id;
  const cached = state.catalog;
  if (cached?.version === version && cached.app_id === app.id && (cached.aei_id ?? aeiId) === aeiId) {
    return cached;
  }
  return (state.catalog = { version, aei_id: aeiId, app_id: app.id, apis: {} });
}

async function runBatch(
  config: ConfigV2,
  app: App,
  tools: ToolIndex,
  sessionId: string,
  args: Record<string, unknown>,
  deps: ProgressiveDeps,
  requestId: string,
) {
  const executions = args.executions;
  if (!Array.isArray(executions) || executions.length === 0 || executions.length > MAX_BATCH_EXECUTIONS) {
    throw new CatalogError(
      'VALIDATION_FAILED',
      `"executions" must be a list of 1 to ${MAX_BATCH_EXECUTIONS} items`,
      {
        argument: 'executions',
      },
    );
  }
  for (const key of [`session:${sessionId}`, `key:${deps.keyHash}`]) {
    const wait = deps.executeLimiter.take(key, Date.now(), executions.length);
    if (wait > 0) {
      throw new CatalogError('RATE_LIMITED', `too many executions; retry in ${wait} s`, {
        retry_after_seconds: wait,
      });
    }
  }
  const results: { api_name: string; success: boolean; data: unknown; error: unknown }[] = new Array(
    executions.length,
  );
  const runOne = async (index: number) => {
    const item = executions[index] as {
      api_name?: unknown;
      parameters?: unknown;
      idempotency_key?: unknown;
    } | null;
    const apiName = typeof item?.api_name === 'string' ? item.api_name : '';
    const failed = (code: ErrorCode, message: string, details?: Record<string, unknown>) =>
      (results[index] = {
        api_name: apiName,
        success: false,
        data: null,
        error: { code, message, ...(details && { details }) },
      });
    const binding = apiName ? bindingOf(config, app, apiName) : undefined;
    const tool = binding ? tools.byName.get(binding.tool_name) : undefined;
    if (!tool) return failed('NOT_FOUND', `no API "${apiName}" in app "${app.slug}"`);
    const parameters = item?.parameters ?? {};
    if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
      return failed('VALIDATION_FAILED', '"parameters" must be an object');
    }
    const idempotencyKey = item?.idempotency_key;
    if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
      return failed('VALIDATION_FAILED', '"idempotency_key" must be 1-255 visible ASCII characters');
    }
    const unstorable = unstorableArguments(parameters, `/executions/${index}/parameters`);
    if (unstorable) return failed(unstorable.code, unstorable.message, unstorable.details);
    const outcome = await runWithin(
      tool,
      parameters as Record<string, unknown>,
      `${requestId}:${index}`,
      { idempotencyKey },
      deps.itemTimeoutMs,
    );
    results[index] = outcome.ok
      ? { api_name: apiName, success: true, data: outcome.data, error: null }
      : { api_name: apiName, success: false, data: null, error: outcome.error };
  };
  await inPool(executions.length, deps.concurrency, runOne);
  return { results };
}

/** Answers one catalog tool call for the session `sessionId`. */
export async function callCatalogTool(
  name: string,
  args: Record<string, unknown>,
  config: ConfigV2,
  tools: ToolIndex,
  sessionId: string | undefined,
  deps: ProgressiveDeps,
  requestId: string,
): Promise<CallToolResult> {
  try {
    // What the platform cannot store is refused here too, as the control plane refuses it in the
    // arguments of the tools it runs (execute_apis items are checked one by one: each fails alone).
    const unstorable = name === 'execute_apis' ? undefined : unstorableArguments(args);
    if (unstorable) throw new CatalogError(unstorable.code, unstorable.message, unstorable.details);
    if (name === 'initialize_session') {
      const wanted = text(args, 'app_id');
      if (sessionId === undefined) {
        throw new CatalogError(
          'SESSION_NOT_INITIALIZED',
          'progressive mode needs an MCP session (initialize first)',
        );
      }
      const app = findApp(config, wanted);
      if (!app) {
        throw new CatalogError('FORBIDDEN', `this exposure has no APIs in app "${wanted}"`, {
          apps: appsOf(config).map((a) => ({ id: a.id, slug: a.slug, name: a.name })),
        });
      }
      await deps.store.set(sessionId, { app_id: app.id });
      return ok({ success: true, message: `session set to app "${app.name}"`, app_id: app.slug });
    }
    const { app, state, sessionId: sid } = await sessionApp(config, sessionId, deps);
    switch (name) {
      case 'get_categories': {
        const catalog = catalogOf(state, config, app);
        catalog.categories ??= categoriesOf(config, app);
        await deps.store.set(sid, state);
        return ok({ categories: catalog.categories });
      }
      case 'get_apis_by_category': {
        const category = text(args, 'category_id');
        const catalog = catalogOf(state, config, app);
        let apis = catalog.apis[category];
        if (!apis) {
          apis = apisOf(config, app, category);
          if (apis.length === 0) {
            throw new CatalogError('NOT_FOUND', `no category "${category}" in app "${app.slug}"`, {
              categories: categoriesOf(config, app).map((c) => c.id),
            });
          }
          catalog.apis[category] = apis;
          await deps.store.set(sid, state);
        }
        return ok({ apis });
      }
      case 'get_api_details': {
        const { apis, unknown } = detailsOf(config, app, strings(args, 'api_names', 100));
        return ok({ apis, ...(unknown.length > 0 && { unknown_apis: unknown }) });
      }
      case 'execute_apis':
        return ok(await runBatch(config, app, tools, sid, args, deps, requestId));
      case SEARCH_TOOL_NAME: {
        const limit =
          typeof args.limit === 'number' && args.limit >= 1 ? Math.min(50, Math.floor(args.limit)) : 10;
        return ok({ apis: searchApis(config, app, text(args, 'query'), limit) });
      }
    }
    throw new CatalogError('NOT_FOUND', `unknown catalog tool "${name}"`);
  } catch (error) {
    if (error instanceof CatalogError) return fail(error);
    throw error;
  }
}
