/**
 * The request one call of an HTTP tool sends: the URL with its path filled and its query built, the
 * headers (static ones with their secrets resolved, then header arguments) and the JSON body.
 * Secrets are resolved in the config's own values only, never in arguments: an argument holding
 * `{{secret.NAME}}` is sent as that text, so a caller cannot make a tool reveal a secret.
 */
import type { HttpMethod, HttpToolConfig, HttpToolParam } from '@bindery/contracts';
import { DomainError } from '../../domain/errors.ts';
import { isSendableHeaderValue } from '../../outbound/http-headers.ts';
import { fillPath, urlTemplateOf } from './url-template.ts';

export interface OutgoingRequest {
  method: HttpMethod;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export type ResolveSecrets = (text: string) => string | Promise<string>;

type Primitive = string | number | boolean;

function isPrimitive(value: unknown): value is Primitive {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function wrongType(param: HttpToolParam, expected: string): DomainError {
  return new DomainError(
    'VALIDATION_FAILED',
    `argument ${param.name} must be ${expected} (it is sent in the ${param.in})`,
    {
      field: 'arguments',
      argument: param.name,
    },
  );
}

/** Path values: a primitive, or an array of primitives joined by commas (OpenAPI's `simple` style). */
function pathText(param: HttpToolParam, value: unknown): string {
  if (isPrimitive(value)) return String(value);
  if (Array.isArray(value) && value.every(isPrimitive)) return value.map(String).join(',');
  throw wrongType(param, 'a string, number, boolean or an array of them');
}

/** Query values: one pair per primitive, repeated for arrays (`form`, exploded); objects as JSON. */
function queryTexts(value: unknown): string[] {
  if (isPrimitive(value)) return [String(value)];
  if (Array.isArray(value))
    return value.map((item) => (isPrimitive(item) ? String(item) : JSON.stringify(item)));
  return [JSON.stringify(value)];
}

function headerText(param: HttpToolParam, value: unknown): string {
  const text = isPrimitive(value)
    ? String(value)
    : Array.isArray(value) && value.every(isPrimitive)
      ? value.map(String).join(', ')
      : JSON.stringify(value);
  if (!isSendableHeaderValue(text)) throw wrongType(param, 'text without line breaks');
  return text;
}

async function resolved(text: string, resolveSecrets: ResolveSecrets): Promise<string> {
  return text.includes('{{') ? resolveSecrets(text) : text;
}

function queryPair(key: string, value: string): string {
  return `${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
}

/** The request for `args` (already checked against the tool's input schema). */
export async function outgoingRequest(
  config: HttpToolConfig,
  args: Record<string, unknown>,
  resolveSecrets: ResolveSecrets,
): Promise<OutgoingRequest> {
  const template = urlTemplateOf(config);
  const params = config.params ?? [];
  const pathValues = new Map<string, { argument: string; text: string }>();
  const query: string[] = template.query === '' ? [] : [template.query];
  const headers: Record<string, string> = {};
  let body: unknown;
  let hasBody = false;

  for (const [key, value] of Object.entries(config.query ?? {})) {
    query.push(queryPair(key, await resolved(value, resolveSecrets)));
  }
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    headers[name.toLowerCase()] = await resolved(value, resolveSecrets);
  }

  for (const param of params) {
    const value = Object.hasOwn(args, param.name) ? args[param.name] : undefined;
    const key = param.key ?? param.name;
    if (param.in === 'path') {
      if (value === undefined || value === null) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `argument ${param.name} is required (it fills {${key}} in the path)`,
          {
            field: 'arguments',
            argument: param.name,
          },
        );
      }
      pathValues.set(key, { argument: param.name, text: pathText(param, value) });
      continue;
    }
    // An absent or null optional argument is simply not sent.
    if (value === undefined || value === null) continue;
    if (param.in === 'query') {
      for (const text of queryTexts(value)) query.push(queryPair(key, text));
    } else if (param.in === 'header') {
      headers[key.toLowerCase()] = headerText(param, value);
    } else if (param.key === undefined) {
      body = value;
      hasBody = true;
    } else {
      // A null-prototype object: a body property can never reach Object.prototype's accessors.
      if (!hasBody) body = Object.create(null) as Record<string, unknown>;
      (body as Record<string, unknown>)[key] = value;
      hasBody = true;
    }
  }

  headers.accept ??= 'application/json, text/plain;q=0.9, */*;q=0.8';
  if (hasBody) headers['content-type'] ??= 'application/json';
  const search = query.length > 0 ? `?${query.join('&')}` : '';
  return {
    method: config.method,
    url: fillPath(template, pathValues) + search,
    headers,
    ...(hasBody && { body: JSON.stringify(body) }),
  };
}
