/**
 * Store-time validation of an HTTP tool's config: the shape (contracts' HttpToolConfig), then the
 * rules a schema cannot say: the URL template and its placeholders against the path parameters,
 * unique argument and wire names, header names and values, secret references, the JMESPath of
 * `result_path` and an authored input schema that matches the parameters. Every error is a
 * VALIDATION_FAILED whose `details.field` names the part of the config at fault.
 */
import {
  HTTP_TOOL_LIMITS,
  HttpToolConfig,
  headerParamsOf,
  type HttpToolParam,
  type HttpMethod,
} from '@bindery/contracts';
import {
  OpError,
  compileQuery,
  compileToolSchema,
  schemaErrors,
  type JsonSchema,
  type SchemaError,
} from '@bindery/context-ops';
import { DomainError } from '../../domain/errors.ts';
import { checkSecretReferenceSyntax, secretReferences } from '../../secrets/secret-references.ts';
import { headerNameProblem, isSendableHeaderValue } from '../../outbound/http-headers.ts';
import type { JsonSchemaObject } from './input-schema.ts';
import { perConfig } from './per-config.ts';
import { parseUrlTemplate, type UrlTemplate } from './url-template.ts';

/** A config as stored: checked, with `params`, `timeout_ms` and `max_response_bytes` filled in. */
export type CheckedHttpToolConfig = HttpToolConfig & {
  params: HttpToolParam[];
  timeout_ms: number;
  max_response_bytes: number;
};

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `${field}: ${message}`, { field, ...extra });
}

/**
 * The config, checked and with its defaults filled in (a copy: later changes to `input` do not
 * reach it); throws VALIDATION_FAILED naming the field.
 */
export function validateHttpToolConfig(input: unknown): CheckedHttpToolConfig {
  const config = checkShape(input);
  const template = parseUrlTemplate(config.url);
  const params = config.params ?? [];
  checkParams(config.method, params, template);
  checkHeaders(config.headers ?? {}, params);
  checkQuery(config.query ?? {}, params);
  if (config.result_path !== undefined) checkResultPath(config.result_path);
  if (config.input_schema !== undefined) checkInputSchema(config.input_schema, params);
  return structuredClone({
    ...config,
    params,
    timeout_ms: config.timeout_ms ?? HTTP_TOOL_LIMITS.defaultTimeoutMs,
    max_response_bytes: config.max_response_bytes ?? HTTP_TOOL_LIMITS.defaultResponseBytes,
  });
}

/** The names of the secrets the config references, sorted, each once (once per frozen config). */
export const httpToolSecretNames = perConfig(
  (config: Pick<HttpToolConfig, 'headers' | 'query'>): readonly string[] => {
    const names = new Set<string>();
    for (const value of [...Object.values(config.headers ?? {}), ...Object.values(config.query ?? {})]) {
      for (const name of secretReferences(value)) names.add(name);
    }
    return [...names].sort();
  },
);

function checkShape(input: unknown): HttpToolConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw invalid('config', 'an HTTP tool config must be an object');
  }
  const [error] = schemaErrors(HttpToolConfig as unknown as JsonSchema, input);
  if (error !== undefined) throw shapeError(error);
  return input as HttpToolConfig;
}

function shapeError(error: SchemaError): DomainError {
  const field = error.instancePath.slice(1) || 'config';
  if (error.keyword === 'additionalProperties') {
    const name = String(error.params.additionalProperty);
    const at = field === 'config' ? name : `${field}/${name}`;
    return invalid(at, `unknown field "${name}"`, { errors: [error] });
  }
  if (error.keyword === 'enum' && Array.isArray(error.params.allowedValues)) {
    return invalid(field, `must be one of ${error.params.allowedValues.join(', ')}`, { errors: [error] });
  }
  return invalid(field, error.message, { errors: [error] });
}

function checkParams(method: HttpMethod, params: readonly HttpToolParam[], template: UrlTemplate): void {
  const names = new Set<string>();
  const pathKeys = new Set<string>();
  const queryKeys = new Set<string>();
  const headerKeys = new Set<string>();
  const bodyKeys = new Set<string>();
  let wholeBody: number | undefined;
  params.forEach((param, index) => {
    const at = `params/${index}`;
    if (names.has(param.name)) throw invalid(`${at}/name`, `duplicate argument name "${param.name}"`);
    names.add(param.name);
    const key = param.key ?? param.name;
    switch (param.in) {
      case 'path':
        if (param.required === false) throw invalid(`${at}/required`, 'path parameters are always required');
        if (pathKeys.has(key)) throw invalid(at, `two path parameters fill {${key}}`);
        if (!template.placeholders.includes(key)) {
          throw invalid(at, `path parameter "${param.name}" has no {${key}} in the url`);
        }
        pathKeys.add(key);
        break;
      case 'query':
        if (queryKeys.has(key)) throw invalid(at, `two query parameters send "${key}"`);
        queryKeys.add(key);
        break;
      case 'header': {
        const problem = headerNameProblem(key);
        if (problem !== undefined) throw invalid(at, problem);
        if (headerKeys.has(key.toLowerCase())) throw invalid(at, `two header parameters send "${key}"`);
        headerKeys.add(key.toLowerCase());
        break;
      }
      case 'body':
        if (method === 'GET' || method === 'HEAD') {
          throw invalid(`${at}/in`, `a ${method} request has no body; use query or header`);
        }
        if (param.key === undefined) {
          if (wholeBody !== undefined) throw invalid(at, `params/${wholeBody} is already the whole body`);
          wholeBody = index;
        } else {
          if (key === '__proto__') throw invalid(`${at}/key`, 'the body property "__proto__" is refused');
          if (bodyKeys.has(key)) throw invalid(at, `two body parameters set "${key}"`);
          bodyKeys.add(key);
        }
        break;
    }
  });
  if (wholeBody !== undefined && bodyKeys.size > 0) {
    throw invalid(
      `params/${wholeBody}`,
      'an argument that is the whole body (no key) cannot be combined with body properties (with a key)',
    );
  }
  const unmapped = template.placeholders.find((name) => !pathKeys.has(name));
  if (unmapped !== undefined) {
    throw invalid('url', `the placeholder {${unmapped}} has no path parameter (params with "in": "path")`, {
      placeholder: unmapped,
    });
  }
}

function checkHeaders(headers: Record<string, string>, params: readonly HttpToolParam[]): void {
  const seen = new Set(params.filter((p) => p.in === 'header').map((p) => (p.key ?? p.name).toLowerCase()));
  for (const [name, value] of Object.entries(headers)) {
    const field = `headers/${name}`;
    const problem = headerNameProblem(name);
    if (problem !== undefined) throw invalid(field, problem);
    if (seen.has(name.toLowerCase())) {
      throw invalid(
        field,
        `the header "${name}" is set twice (by headers and by a header parameter, or in two cases)`,
      );
    }
    seen.add(name.toLowerCase());
    if (!isSendableHeaderValue(value)) throw invalid(field, 'a header value may not hold line breaks or NUL');
    checkSecretReferenceSyntax(value, field);
  }
}

function checkQuery(query: Record<string, string>, params: readonly HttpToolParam[]): void {
  const fromParams = new Set(params.filter((p) => p.in === 'query').map((p) => p.key ?? p.name));
  for (const [name, value] of Object.entries(query)) {
    const field = `query/${name}`;
    if (name === '' || name.length > 256) throw invalid(field, 'a query name must have 1 to 256 characters');
    if (fromParams.has(name))
      throw invalid(field, `"${name}" is sent both as static query and by a query parameter`);
    checkSecretReferenceSyntax(value, field);
  }
}

function checkResultPath(resultPath: string): void {
  try {
    compileQuery(resultPath, HTTP_TOOL_LIMITS.maxResultPathLength);
  } catch (error) {
    if (error instanceof OpError) throw invalid('result_path', error.message, { reason: error.details });
    throw error;
  }
}

function checkInputSchema(schema: JsonSchemaObject, params: readonly HttpToolParam[]): void {
  try {
    compileToolSchema(schema as JsonSchema);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalid('input_schema', `not a usable JSON Schema: ${reason}`, { reason });
  }
  if (schema.type !== 'object')
    throw invalid('input_schema', 'must have "type": "object" (tool arguments are an object)');
  // Marks a client on HTTP would refuse the whole tool for (SEP-2243) are refused here instead.
  const marks = headerParamsOf(schema);
  if (!marks.ok) throw invalid('input_schema', marks.reason);
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required : [];
  for (const param of params) {
    if (!Object.hasOwn(properties, param.name)) {
      throw invalid(
        'input_schema',
        `has no property "${param.name}" for the ${param.in} parameter of that name`,
      );
    }
    if (param.in === 'path' && !required.includes(param.name)) {
      throw invalid('input_schema', `must list the path parameter "${param.name}" in required`);
    }
  }
  const mapped = new Set(params.map((p) => p.name));
  const unmapped = Object.keys(properties).find((name) => !mapped.has(name));
  if (unmapped !== undefined) {
    throw invalid(
      'input_schema',
      `the property "${unmapped}" is not sent anywhere; add a param for it or remove it`,
    );
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
