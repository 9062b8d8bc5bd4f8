/**
 * The shape of one tool kind (DESIGN.md §7b): what an ADI of that kind stores, how it is checked
 * when saved, what it shows an agent (input and output schema, annotations, title, default name
 * and description) and how one call of it runs. One folder per kind beside this file, each module
 * registered in `registry.ts`, like the operations of context-ops. A kind's folder imports this
 * file and the shared helpers that import no kind, never the registry or what uses it (the
 * `kinds-below-registry` rule of .dependency-cruiser.cjs).
 *
 * What stays outside every kind, in one place: ownership of tables and of everything an ADI
 * references (adis.ts), the binding, AEI and owner checks, argument validation against the
 * binding's effective schema, auditing, metrics and the tool-error body (executor.ts), and schema
 * narrowing of overrides (binding-overrides.ts). A kind throws DomainError or OpError; it never
 * builds an `isError` result itself.
 */
import type {
  AdiKind,
  AdiRef,
  ClientInputCapabilities,
  InputRequest,
  LogLevel,
  ToolAnnotations,
  ToolLogLine,
  ToolProgress,
} from '@bindery/contracts';
import type { JsonSchema, JsonValue } from '@bindery/context-ops';
import type { TObject } from 'typebox';
import type { Db, DomainContext, Principal, SourceChecker } from '../domain/context.ts';
import type { Limits } from '@bindery/context-ops';
import type { Dispatcher } from 'undici';
import type { ControlPlaneMetrics } from '../metrics.ts';
import type { ContextStore } from '../context/context-store.ts';

/**
 * What every kind's call is given besides its own columns and arguments: the services the control
 * plane runs once at start that all kinds share. Narrow on purpose: a kind knows nothing of the
 * executor, the binding cache or the audit writer around it. A kind that needs a service of its
 * own (context: the query pool, custom: the sandbox, mcp: the upstream servers) declares it in its
 * folder, extending this, and names it as its module's `Services`; the registry gathers them all
 * (`RegisteredKindServices`), so this file imports no kind.
 */
export interface KindServices {
  limits: Limits;
  /** Reads and writes contexts (the context cache, the patch log, table versions). */
  contexts: ContextStore;
  metrics: Pick<ControlPlaneMetrics, 'writes'>;
  /**
   * Every request a tool sends out (HTTP tools, a custom tool's fetch) goes through this: the SSRF
   * guard (outbound/ssrf-guard.ts) checks each connection, literal IPs, DNS answers and redirect
   * hops alike, against HTTP_TOOLS_ALLOWED_NETWORKS.
   */
  outbound: Dispatcher;
  /** Where a kind writes what is worth a log line (a custom tool's console, at debug). */
  log?: { debug(details: object, message: string): void } | undefined;
}

/** One keyed write: where the key lives, the key, and what the call was (idempotency.ts). */
export interface KeyedWrite {
  /** `aei:<id>` or `mcp_instance:<id>`. */
  scope: string;
  key: string;
  /** Digest of the tool and its arguments (defaults applied), to tell a retry from a reuse. */
  digest: string;
  /** A record made before this instant has expired: the key is free again, as if never used. */
  notBefore: Date;
}

/**
 * What an ADI of any kind stores besides its name, description and category: its context, when it
 * has one (`tableId` and `jsonPath` both set or both null), its operation (context ADIs only) and
 * its kind's own settings (`config`, a JSON object).
 */
export interface KindColumns {
  tableId: string | null;
  jsonPath: string | null;
  operationType: string | null;
  config: Record<string, unknown>;
}

/** Where a tool's context lives, for titles and default descriptions (null: it has no context). */
export interface ToolPlace {
  tableName: string | null;
}

/**
 * Who saves an ADI: the database (or the open transaction) and the owner; `sandbox` for a kind
 * whose check runs the author's code (custom), absent where no sandbox runs (INTERNAL then).
 */
export interface SaveScope {
  db: Db;
  caller: Principal;
  sandbox?: SourceChecker | undefined;
  /**
   * Set by imports (an export document, an OpenAPI document), which create tools before the
   * secrets they name may exist: a kind adds the names the caller has no secret for here instead
   * of refusing them, and the import reports them (`secrets_to_create`). Absent: refused.
   */
  missingSecrets?: Set<string>;
}

/**
 * How a kind answers besides a plain JSON value (which becomes JSON text, and `structuredContent`
 * too when the kind declares an output schema): `text` is sent as the text content as it is (an
 * API's plain-text answer); `structured` is JSON text plus `structuredContent` when it is an
 * object, for kinds whose results are data without a schema known in advance (an API's JSON).
 */
export class ToolAnswer {
  private constructor(
    readonly form: 'text' | 'structured' | 'wrapped' | 'result' | 'input' | 'task',
    readonly value: JsonValue,
  ) {}

  /**
   * The call asked its client for input (ToolCall.input) and cannot go on without it: the requests
   * by key, and the keys of the answers it used (the executor carries those to the next round).
   */
  static inputRequired(requests: Record<string, InputRequest>, answered: readonly string[]): ToolAnswer {
    return new ToolAnswer('input', { requests, answered } as unknown as JsonValue);
  }

  /**
   * The call asked its client for input, and what the next round needs besides the answers is
   * `carry` (a kind that carries its own state, ToolKindModule.carriesState: an upstream's own
   * requestState, or the call waiting on this control plane); the executor signs it into the state.
   */
  static inputCarried(requests: Record<string, InputRequest>, carry: Record<string, JsonValue>): ToolAnswer {
    return new ToolAnswer('input', { requests, answered: [], carry } as unknown as JsonValue);
  }

  /**
   * A whole MCP tool result, passed on as it came (an upstream server's content, structured
   * content and isError); an `isError` result is audited as an error.
   */
  static result(result: { content: JsonValue[]; [key: string]: JsonValue | undefined }): ToolAnswer {
    return new ToolAnswer('result', result as JsonValue);
  }

  /**
   * An upstream server answered with a task (the client declared the tasks extension): where it
   * lives (the server, the instance that made it) and its first state, the upstream's own id in
   * it; the executor hands it out under a handle of its own (decision 071).
   */
  static task(made: { serverId: string; instance: string; task: Record<string, JsonValue> }): ToolAnswer {
    return new ToolAnswer('task', made as unknown as JsonValue);
  }

  static text(text: string): ToolAnswer {
    return new ToolAnswer('text', text);
  }

  static structured(value: JsonValue): ToolAnswer {
    return new ToolAnswer('structured', value);
  }

  /**
   * Any JSON value, described by an output schema that puts it under `result`: JSON text of the
   * value, plus `structuredContent: {result: value}` when the tool declares that schema.
   */
  static wrapped(value: JsonValue): ToolAnswer {
    return new ToolAnswer('wrapped', value);
  }
}

/** Where a call's log lines go: the caller hears `level` and above (MCP `notifications/message`). */
export interface ToolLog {
  level: LogLevel;
  send(line: ToolLogLine): void;
}

/**
 * One call of a tool, after the shared checks passed (binding, AEI, owner, arguments). `Services`
 * is what its kind is given: every kind's services and the kind's own.
 */
export interface ToolCall<Services extends KindServices = KindServices> {
  ctx: DomainContext;
  options: Services;
  /** The tool's name as its caller knows it (for messages). */
  toolName: string;
  /** The ADI's id; null for a tool of a legacy v1 instance (a context tool without an ADI row). */
  adiId: string | null;
  adi: KindColumns;
  /** The arguments, valid for the binding's effective input schema, its defaults applied. */
  args: Record<string, unknown>;
  /** The user owning the exposure and the ADI: per-tenant limits and queues key on it. */
  userId: string;
  /** Set when the call came with an idempotency key: a write records its answer under it. */
  keyed: KeyedWrite | undefined;
  /**
   * The MCP result's `_meta`, filled by the kind as the call goes (a custom tool's console lines);
   * sent with the answer and with a tool error alike, left out when empty.
   */
  meta: Record<string, JsonValue>;
  /** Aborted when the caller gave up (the gateway's request closed): a kind forwards it if it can. */
  signal?: AbortSignal | undefined;
  /** The exposure and MCP session the call came in, `{aei_id}:{session_id}` (absent: stateless). */
  session?: string | undefined;
  /**
   * Who calls, `{aei_id}:{caller}` (the caller of a caller entry; empty for an api_key): what an
   * upstream may keep per caller is kept apart by it (mcp: its connections that relay questions).
   */
  caller?: string | undefined;
  /** Set when the caller wants progress reports: a kind that has them (mcp, custom) passes them on. */
  progress?: ((report: ToolProgress) => void) | undefined;
  /** Set when the caller hears log lines: a kind that has them (custom: `ctx.log`) sends them here. */
  log?: ToolLog | undefined;
  /**
   * Set for a trial run of a tool that is not saved (`POST /api/v2/adis/trial-runs`): the call may
   * read but must not change data (custom: `ctx.context.write` refuses).
   */
  trial?: boolean | undefined;
  /**
   * What the call's client can be asked (MCP elicitation, sampling, roots) and its answers so far,
   * by key; absent: nothing (a REST call, a trial run). A kind whose tool asks answers
   * ToolAnswer.inputRequired; one that asks what the client lacks fails with `missing_capabilities`
   * in its error's details.
   */
  input?: CallInput | undefined;
}

/** The client's side of a call's input requests (ToolCall.input). */
export interface CallInput {
  capabilities: ClientInputCapabilities;
  /**
   * The answers by key: all those given so far, or, for a kind that carries its own state, those
   * of this round only.
   */
  responses: Record<string, JsonValue>;
  /** For a kind that carries its own state: what its last round carried (ToolAnswer.inputCarried). */
  carried?: Record<string, JsonValue> | undefined;
  /** The client gave the call up while asked: end what waits for the answers, run nothing. */
  cancel?: true | undefined;
  /**
   * The client declared the tasks extension: an upstream may answer with a task
   * (ToolAnswer.task), handed out bound to `holder` (the credential's digest).
   */
  tasks?: { holder: string } | undefined;
}

/**
 * One tool kind. `Body` is its create body (the wire shape in `createBody`), `Patch` the fields of
 * a PATCH it accepts besides name, description and category (listed in `patchFields`), `Services`
 * what its calls are given (KindServices, and the kind's own services when it has any).
 */
/** See ToolKindModule.presentation. */
export interface ToolPresentation {
  meta?: Record<string, unknown>;
  icons?: unknown[];
  listedAs?: { title?: string; annotations?: ToolAnnotations };
}

export interface ToolKindModule<
  Body = unknown,
  Patch = unknown,
  Services extends KindServices = KindServices,
> {
  kind: AdiKind;
  /** The create body of this kind (packages/contracts), one branch of `POST /api/v2/adis`. */
  createBody: TObject;
  /**
   * Set for a kind whose tools are not created through the admin API (mcp: synced from upstream
   * servers): the message a create or an import of one is refused with.
   */
  notCreatable?: string;
  /** The PATCH fields of this kind; a PATCH naming another kind's field is refused. */
  patchFields: readonly string[];
  /** What a create body stores (its shape is already checked against `createBody`). */
  columnsOf(body: Body): KindColumns;
  /** The columns after a PATCH of this kind's fields. */
  patched(current: KindColumns, patch: Patch): KindColumns;
  /**
   * Checks columns before they are stored (create, update, import), answering them normalised;
   * VALIDATION_FAILED naming the field when wrong. May read the caller's own data through `scope`
   * (secrets it names, say). Table ownership and the pointer syntax are checked by the caller.
   */
  check(columns: KindColumns, scope: SaveScope): KindColumns | Promise<KindColumns>;
  /** The tool name of an ADI saved without one; stable and revealing nothing about its data. */
  defaultName(columns: KindColumns, adiId: string): string;
  /** The description an agent sees when neither the binding nor the ADI sets one. */
  defaultDescription(columns: KindColumns, place: ToolPlace): string;
  /** The canonical input schema: JSON Schema, type object; overrides must be narrower. */
  inputSchema(columns: KindColumns): JsonSchema;
  /**
   * The schema of the tool's structured result, or null when it has none. With one, the executor
   * also answers an object result as `structuredContent`. Never throws (read before the audit).
   */
  outputSchema(columns: KindColumns): JsonSchema | null;
  /** MCP tool annotations, with a `title` for people. */
  annotations(columns: KindColumns, place: ToolPlace): ToolAnnotations;
  /**
   * True when the kind's rounds carry a state of their own (ToolAnswer.inputCarried) rather than
   * the answers they used: its calls get this round's answers and what was carried apart.
   */
  carriesState?: true;
  /**
   * How tools/list shows the tool when its source declares that itself (an upstream tool, as the
   * server lists it): its `_meta`, `icons`, and in `listedAs` its title and annotations exactly as
   * declared (none where the source gave none). Absent: no `_meta` or icons, and the title and
   * annotations are `annotations()`'s.
   */
  presentation?(columns: KindColumns): ToolPresentation;
  /** What config v2 tells a gateway about the ADI (`adi_ref`: its member of the union on kind). */
  adiRef(adiId: string, columns: KindColumns): AdiRef;
  /**
   * What the audit row's `operation` and the execution metric name (context: the operation). Never
   * throws, even for a row edited by hand (read before the audit).
   */
  operation(columns: KindColumns): string;
  /** Runs one call; its answer becomes the tool result's JSON text (or see ToolAnswer). */
  run(call: ToolCall<Services>): Promise<JsonValue | ToolAnswer>;
  /**
   * The node at `pointer` under the tool's context (MCP resources/read), within the result size
   * limit; absent for kinds without a context.
   */
  readContext?(
    call: Pick<ToolCall<Services>, 'options' | 'toolName' | 'adi'>,
    pointer: string,
  ): Promise<JsonValue>;
  /**
   * Whether a binding of this tool serves its context as a resource: only when calling the tool
   * can already read all of it (`override`: the binding's input-schema override, null if none),
   * so a resource is never a way around what the tool allows.
   */
  resourceReadable?(columns: KindColumns, override: unknown): boolean;
}
