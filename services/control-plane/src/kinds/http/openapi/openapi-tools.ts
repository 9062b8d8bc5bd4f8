/**
 * OpenAPI import: one HTTP tool per operation of a document. Pure and deterministic (the same
 * document and options give the same tools, names and warnings, in document order), so a re-import
 * can be compared with what is stored. The mapping rules are in docs/reference/http-tools.md ("HTTP tools and
 * OpenAPI import"); the choices behind them in docs/decisions/039-openapi-import-mapping.md.
 */
import { HTTP_METHODS, type HttpMethod, type HttpToolParam } from '@bindery/contracts';
import { DomainError } from '../../../domain/errors.ts';
import { headerNameProblem } from '../../../outbound/http-headers.ts';
import { validateHttpToolConfig, type CheckedHttpToolConfig } from '../http-tool-config.ts';
import { loadOpenApiDocument } from './openapi-document.ts';
import { operationFilter, type OperationFilters } from './operation-filters.ts';
import { ToolNames, operationBaseName, sanitizeName } from './operation-names.ts';
import { credentialsFor, secretNames, type SecretUse } from './security-schemes.ts';
import {
  copySchema,
  isObject,
  toolSchemaWithin,
  type JsonObject,
  type SchemaCopyState,
} from './tool-schema.ts';

export interface OpenApiImportOptions extends OperationFilters {
  /** The API's base URL; replaces the document's `servers`. Needed when those are relative. */
  base_url?: string;
}

export interface ImportedHttpTool {
  /** The operation's `operationId`, or `METHOD /path` when it has none (the key of a re-import). */
  operation_id: string;
  /** The tool name: `^[A-Za-z0-9_.-]{1,64}$`, unique in the import. */
  name: string;
  description: string | null;
  /** The operation's first tag. */
  category: string | null;
  config: CheckedHttpToolConfig;
  /** Names of the secrets the tool's config references, sorted. */
  secret_refs: string[];
}

export interface OpenApiImportWarning {
  /** The operation concerned, or null for the document as a whole. */
  operation_id: string | null;
  message: string;
}

export interface OpenApiConversion {
  /** The document's `info.title` ('' when it has none): what a re-import recognises it by. */
  api: string;
  /**
   * Every operation of the document, before filters and whether or not it became a tool: an
   * earlier tool whose operation is not in here is gone from the API.
   */
  operation_ids: string[];
  tools: ImportedHttpTool[];
  warnings: OpenApiImportWarning[];
  /** The secrets the tools reference, each once, with what it must hold. */
  secrets: SecretUse[];
}

// Order of the methods of a path item, fixed so tools come out in the same order whatever order a
// document lists them in.
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const MAX_DESCRIPTION = 4000;
const MAX_TITLE = 200;
const MAX_CATEGORY = 200;
const MAX_WARNINGS = 500;
// Bounds of one tool's input schema: nodes of the copied schemas, and the nesting depths tried
// (deepest first) until the copy fits; see tool-schema.ts.
const SCHEMA_NODES = 5_000;
const SCHEMA_DEPTHS = [32, 16, 8, 4];
// Headers OpenAPI says a parameter may not describe (the client or the security scheme sets them).
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

interface Operation {
  method: HttpMethod | undefined;
  path: string;
  pathItem: JsonObject;
  operation: JsonObject;
  operationId: string;
  name: string;
  tags: string[];
}

/**
 * The HTTP tools of `document` (OpenAPI 3.0/3.1 or Swagger 2.0, as JSON or YAML text or an object);
 * throws VALIDATION_FAILED for a document that cannot be read (field `document`), a bad option, or
 * relative servers without `base_url`. Operations that cannot become a tool are left out with a
 * warning saying why.
 */
export function openApiToHttpTools(document: unknown, options: OpenApiImportOptions = {}): OpenApiConversion {
  const filter = operationFilter(options);
  const { spec, warnings: referenceWarnings } = loadOpenApiDocument(document);
  const warnings = new Warnings();
  for (const message of referenceWarnings) warnings.add(null, message);

  const components = isObject(spec.components) ? spec.components : {};
  const schemes = isObject(components.securitySchemes) ? components.securitySchemes : {};
  const names = secretNames(schemes);
  const documentBase = options.base_url !== undefined ? checkBaseUrl(options.base_url) : undefined;
  const operations = listOperations(spec, warnings);

  const tools: ImportedHttpTool[] = [];
  const secrets = new Map<string, SecretUse>();
  for (const entry of operations) {
    if (entry.method === undefined || !filter({ method: entry.method, path: entry.path, tags: entry.tags }))
      continue;
    const warn = (message: string) => warnings.add(entry.operationId, message);
    try {
      const base = documentBase ?? serverBase(spec, entry);
      const built = buildTool(entry, entry.method, base, spec, schemes, names, warn);
      tools.push(built.tool);
      for (const use of built.secrets) if (!secrets.has(use.name)) secrets.set(use.name, use);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.details?.field === 'base_url') throw error;
      warn(`not imported: ${error.message}`);
    }
  }
  const info = isObject(spec.info) ? spec.info : {};
  return {
    api: text(info.title) ?? '',
    operation_ids: operations.map((entry) => entry.operationId),
    tools,
    warnings: warnings.list(),
    secrets: [...secrets.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

class Warnings {
  private readonly seen = new Set<string>();
  private readonly items: OpenApiImportWarning[] = [];
  private dropped = 0;

  add(operationId: string | null, message: string): void {
    const key = `${operationId ?? ''}\u0000${message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (this.items.length < MAX_WARNINGS) this.items.push({ operation_id: operationId, message });
    else this.dropped++;
  }

  list(): OpenApiImportWarning[] {
    if (this.dropped === 0) return this.items;
    return [...this.items, { operation_id: null, message: `${this.dropped} more warnings were left out` }];
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Every operation in document order, with its settled operation id and tool name. */
function listOperations(spec: JsonObject, warnings: Warnings): Operation[] {
  const paths = isObject(spec.paths) ? spec.paths : {};
  const operations: Operation[] = [];
  const ids = new Set<string>();
  const toolNames = new ToolNames();
  for (const [path, pathItem] of Object.entries(paths)) {
    if (!isObject(pathItem)) continue;
    for (const rawMethod of METHODS) {
      const operation = pathItem[rawMethod];
      if (!isObject(operation)) continue;
      const upper = rawMethod.toUpperCase();
      const method = (HTTP_METHODS as readonly string[]).includes(upper) ? (upper as HttpMethod) : undefined;
      const identity = `${upper} ${path}`;
      let operationId = text(operation.operationId);
      if (operationId !== undefined && ids.has(operationId)) {
        warnings.add(
          identity,
          `operationId "${operationId}" is used twice; this operation is keyed "${identity}"`,
        );
        operationId = undefined;
      }
      const id = operationId ?? identity;
      ids.add(id);
      if (method === undefined) {
        warnings.add(id, `${upper} operations are not imported`);
        continue;
      }
      // Names are settled before filtering: a filter never changes the name an operation gets.
      const name = toolNames.claim(operationBaseName(operationId, upper, path), identity);
      const tags = Array.isArray(operation.tags)
        ? operation.tags.filter((t): t is string => typeof t === 'string')
        : [];
      operations.push({ method, path, pathItem, operation, operationId: id, name, tags });
    }
  }
  return operations;
}

function checkBaseUrl(url: string): string {
  if (!/^https?:\/\/[^/?#]+/i.test(url) || /[?#{}]/.test(url)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `base_url: "${url}" must be an absolute http(s) URL without query or placeholders`,
      {
        field: 'base_url',
      },
    );
  }
  return url.replace(/\/+$/, '');
}

/** The first server of the operation, its path item or the document, its variables at their defaults. */
function serverBase(spec: JsonObject, entry: Operation): string {
  const firstServer = (holder: JsonObject) =>
    Array.isArray(holder.servers) && isObject(holder.servers[0]) ? holder.servers[0] : undefined;
  const server = firstServer(entry.operation) ?? firstServer(entry.pathItem) ?? firstServer(spec);
  let url = server === undefined ? '/' : (text(server.url) ?? '/');
  const variables = server !== undefined && isObject(server.variables) ? server.variables : {};
  url = url.replace(/\{([^{}]+)\}/g, (whole, name: string) => {
    const variable = variables[name];
    return isObject(variable) &&
      (typeof variable.default === 'string' || typeof variable.default === 'number')
      ? String(variable.default)
      : whole;
  });
  if (!/^https?:\/\//i.test(url)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `base_url: the document's server URL "${url}" is not absolute; give base_url (the API's absolute base URL, e.g. https://api.example.com/v1)`,
      { field: 'base_url', server_url: url },
    );
  }
  return checkBaseUrl(url);
}

interface ParameterSource {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: unknown;
  description: string | undefined;
  deprecated: boolean;
}

/** Path-level and operation-level parameters (the operation's win), cookies and ignored headers out. */
function parametersOf(entry: Operation, warn: (message: string) => void): ParameterSource[] {
  const merged = new Map<string, JsonObject>();
  for (const list of [entry.pathItem.parameters, entry.operation.parameters]) {
    if (!Array.isArray(list)) continue;
    for (const parameter of list) {
      if (!isObject(parameter) || typeof parameter.name !== 'string' || typeof parameter.in !== 'string') {
        warn('a parameter without a name or location (an unresolved $ref?) was left out');
        continue;
      }
      merged.set(`${parameter.in}\u0000${parameter.name}`, parameter);
    }
  }
  const sources: ParameterSource[] = [];
  for (const parameter of merged.values()) {
    const name = parameter.name as string;
    const location = parameter.in as string;
    if (location === 'cookie') {
      warn(`the cookie parameter "${name}" is not sent (cookies are not supported)`);
      continue;
    }
    if (location !== 'path' && location !== 'query' && location !== 'header') {
      warn(`the parameter "${name}" in "${location}" is not supported`);
      continue;
    }
    if (location === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) continue;
    if (location === 'header' && headerNameProblem(name) !== undefined) {
      warn(`the header parameter "${name}" cannot be sent: ${headerNameProblem(name)}`);
      continue;
    }
    const content = isObject(parameter.content) ? Object.values(parameter.content)[0] : undefined;
    sources.push({
      name,
      in: location,
      required: location === 'path' || parameter.required === true,
      schema: parameter.schema ?? (isObject(content) ? content.schema : undefined) ?? { type: 'string' },
      description: text(parameter.description),
      deprecated: parameter.deprecated === true,
    });
  }
  return sources;
}

/** The JSON media type of a request body (application/json first, then any +json), if any. */
function jsonMedia(content: JsonObject): string | undefined {
  const types = Object.keys(content);
  return (
    types.find((type) => type.toLowerCase().split(';')[0]!.trim() === 'application/json') ??
    types.find((type) => /^[\w.-]+\/([\w.-]+\+)?json\b/i.test(type))
  );
}

/** The properties of an object schema that can be sent as separate arguments, else undefined. */
function flatProperties(
  schema: JsonObject | boolean,
): { properties: JsonObject; required: string[] } | undefined {
  if (typeof schema === 'boolean') return undefined;
  const members = Array.isArray(schema.allOf) ? [schema, ...(schema.allOf as unknown[])] : [schema];
  const properties: JsonObject = {};
  const required = new Set<string>();
  for (const member of members) {
    if (!isObject(member)) return undefined;
    if (member.type !== undefined && member.type !== 'object') return undefined;
    if (['oneOf', 'anyOf', 'not', 'if', 'patternProperties'].some((key) => member[key] !== undefined))
      return undefined;
    if (member !== schema && member.allOf !== undefined) return undefined;
    if (isObject(member.properties)) Object.assign(properties, member.properties);
    if (Array.isArray(member.required)) for (const name of member.required) required.add(name as string);
  }
  if (Object.keys(properties).length === 0) return undefined;
  return { properties, required: [...required] };
}

/** Argument names, unique: the wire name made fit, else `<location>_<name>`, else numbered. */
class ArgumentNames {
  private readonly taken = new Set<string>();

  claim(wire: string, location: string): string {
    const plain = sanitizeName(wire, 'arg');
    const candidates = [plain, sanitizeName(`${location}_${plain}`, location)];
    let name = candidates.find((candidate) => !this.taken.has(candidate));
    for (let n = 2; name === undefined; n++) {
      const numbered = `${candidates[1]!.slice(0, 60)}_${n}`;
      if (!this.taken.has(numbered)) name = numbered;
    }
    this.taken.add(name);
    return name;
  }
}

interface Built {
  tool: ImportedHttpTool;
  secrets: SecretUse[];
}

function buildTool(
  entry: Operation,
  method: HttpMethod,
  base: string,
  spec: JsonObject,
  schemes: Record<string, unknown>,
  names: Map<string, string>,
  warn: (message: string) => void,
): Built {
  const security = entry.operation.security ?? spec.security;
  const credentials = credentialsFor(security, schemes, names, (message) => warn(message));
  const credentialHeaders = new Set(Object.keys(credentials.headers).map((h) => h.toLowerCase()));
  const parameters = parametersOf(entry, warn).filter((parameter) => {
    const taken =
      (parameter.in === 'header' && credentialHeaders.has(parameter.name.toLowerCase())) ||
      (parameter.in === 'query' && Object.hasOwn(credentials.query, parameter.name));
    if (taken)
      warn(`the ${parameter.in} parameter "${parameter.name}" is left out: the security scheme sends it`);
    return !taken;
  });

  // Placeholders of the path against the declared path parameters.
  const placeholders = [...entry.path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]!);
  const declared = parameters.filter((p) => p.in === 'path').map((p) => p.name);
  for (const name of placeholders) {
    if (!declared.includes(name)) {
      warn(`the path placeholder {${name}} has no declared parameter; it is imported as a required string`);
      parameters.push({
        name,
        in: 'path',
        required: true,
        schema: { type: 'string' },
        description: undefined,
        deprecated: false,
      });
    }
  }
  const usable = parameters.filter((p) => {
    if (p.in !== 'path' || placeholders.includes(p.name)) return true;
    warn(`the path parameter "${p.name}" has no {${p.name}} in the path and is left out`);
    return false;
  });
  const order = { path: 0, query: 1, header: 2 } as const;
  usable.sort((a, b) => order[a.in] - order[b.in]);

  const body = requestBodyOf(entry, method, warn);
  const tool = (loose: boolean) =>
    toolSchemaWithin(SCHEMA_NODES, SCHEMA_DEPTHS, loose, (state) => mapArguments(usable, body, state));
  let mapped = tool(false);
  let config: CheckedHttpToolConfig;
  const configFor = (arguments_: MappedArguments) => ({
    method,
    url: `${base}${entry.path.startsWith('/') ? '' : '/'}${entry.path}`,
    params: arguments_.params,
    ...(Object.keys(credentials.headers).length > 0 && { headers: credentials.headers }),
    ...(Object.keys(credentials.query).length > 0 && { query: credentials.query }),
    input_schema: arguments_.inputSchema,
    ...(text(entry.operation.summary) !== undefined && {
      annotations: { title: clip(text(entry.operation.summary)!, MAX_TITLE) },
    }),
  });
  try {
    config = validateHttpToolConfig(configFor(mapped.value));
  } catch (error) {
    if (!(error instanceof DomainError) || error.details?.field !== 'input_schema') throw error;
    // A pattern the validator's engine refuses, say: the same schema without patterns and formats.
    mapped = tool(true);
    config = validateHttpToolConfig(configFor(mapped.value));
    warn(`patterns and formats were left out of the input schema: ${error.message}`);
  }
  reportCopy(mapped.state, warn);
  const secretRefs = [...new Set(credentials.secrets.map((s) => s.name))].sort();
  return {
    tool: {
      operation_id: entry.operationId,
      name: entry.name,
      description: descriptionOf(entry.operation),
      category: entry.tags[0] === undefined ? null : clip(entry.tags[0], MAX_CATEGORY),
      config,
      secret_refs: secretRefs,
    },
    secrets: credentials.secrets,
  };
}

interface RequestBody {
  schema: unknown;
  required: boolean;
  description: string | undefined;
}

function requestBodyOf(
  entry: Operation,
  method: HttpMethod,
  warn: (message: string) => void,
): RequestBody | undefined {
  const requestBody = entry.operation.requestBody;
  if (!isObject(requestBody)) return undefined;
  const required = requestBody.required === true;
  if (method === 'GET' || method === 'HEAD') {
    warn(`the request body of a ${method} operation is not sent`);
    return undefined;
  }
  const content = isObject(requestBody.content) ? requestBody.content : {};
  const media = jsonMedia(content);
  if (media === undefined) {
    const kinds = Object.keys(content).join(', ') || 'none';
    if (required) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `its request body is ${kinds}; only JSON bodies can be sent`,
      );
    }
    warn(`the optional request body (${kinds}) is left out; only JSON bodies can be sent`);
    return undefined;
  }
  const mediaObject = content[media];
  return {
    schema: isObject(mediaObject) ? (mediaObject.schema ?? {}) : {},
    required,
    description: text(requestBody.description),
  };
}

interface MappedArguments {
  params: HttpToolParam[];
  inputSchema: JsonObject;
}

/**
 * The tool's params and input schema: parameters first (path, query, header), then the body's
 * properties as separate arguments when the body is a plain object schema, else one `body`
 * argument holding the whole body. Clashing names: see ArgumentNames.
 */
function mapArguments(
  parameters: ParameterSource[],
  body: RequestBody | undefined,
  state: SchemaCopyState,
): MappedArguments {
  const argumentNames = new ArgumentNames();
  const params: HttpToolParam[] = [];
  const properties: JsonObject = {};
  const required: string[] = [];
  const add = (param: HttpToolParam, schema: JsonObject | boolean, isRequired: boolean) => {
    params.push(param);
    Object.defineProperty(properties, param.name, {
      value: schema,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    if (isRequired) required.push(param.name);
  };

  for (const parameter of parameters) {
    const name = argumentNames.claim(parameter.name, parameter.in);
    const schema = copySchema(parameter.schema, state, {}, 2);
    const described =
      typeof schema === 'object' && parameter.description !== undefined && schema.description === undefined
        ? { ...schema, description: clip(parameter.description, 1000) }
        : schema;
    const withDeprecation =
      parameter.deprecated && typeof described === 'object' ? { ...described, deprecated: true } : described;
    add(
      { name, in: parameter.in, ...(name !== parameter.name && { key: parameter.name }) },
      withDeprecation,
      parameter.required,
    );
  }

  if (body !== undefined) {
    const schema = copySchema(body.schema, state, { dropReadOnly: true }, 2);
    const flat = flatProperties(schema);
    if (flat === undefined) {
      const described =
        typeof schema === 'object' && schema.description === undefined && body.description !== undefined
          ? { ...schema, description: clip(body.description, 1000) }
          : schema;
      add({ name: argumentNames.claim('body', 'body'), in: 'body' }, described, body.required);
    } else {
      for (const [property, propertySchema] of Object.entries(flat.properties)) {
        const name = argumentNames.claim(property, 'body');
        add(
          { name, in: 'body', key: property },
          propertySchema as JsonObject,
          body.required && flat.required.includes(property),
        );
      }
    }
  }
  return {
    params,
    inputSchema: {
      type: 'object',
      properties,
      ...(required.length > 0 && { required }),
      additionalProperties: false,
    },
  };
}

function reportCopy(state: SchemaCopyState, warn: (message: string) => void): void {
  for (const ref of [...state.unresolved].sort()) {
    warn(`the schema reference "${ref}" is not resolved; that part of the input accepts any value`);
  }
  if (state.cut)
    warn(
      `the input schema is cut where it recurses or nests past ${state.maxDepth} levels; deeper parts accept any value`,
    );
}

function descriptionOf(operation: JsonObject): string | null {
  const summary = text(operation.summary);
  const description = text(operation.description);
  const parts =
    summary !== undefined && description !== undefined && description !== summary
      ? [summary, description]
      : [summary ?? description];
  const joined = parts.filter((p) => p !== undefined).join('\n\n');
  const prefix = operation.deprecated === true ? 'Deprecated. ' : '';
  return joined === '' && prefix === '' ? null : clip(prefix + joined, MAX_DESCRIPTION);
}

function clip(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
}
