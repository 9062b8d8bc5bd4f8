/**
 * OpenAPI security schemes as secret references. Each scheme gets a secret named after it
 * (`bearerAuth` -> BEARER_AUTH) and an operation's first security requirement (its own `security`,
 * else the document's) becomes static headers or query values holding `{{secret.NAME}}`:
 * apiKey in a header, a query parameter or a cookie; http bearer and basic as `Authorization`;
 * oauth2 and openIdConnect as a bearer token obtained elsewhere. Other schemes are reported.
 */
import { isObject } from './tool-schema.ts';

export interface SecretUse {
  /** The secret's name, as `{{secret.NAME}}` references it. */
  name: string;
  /** The security scheme it stands for. */
  scheme: string;
  /** What the secret must hold. */
  holds: string;
}

export interface Credentials {
  headers: Record<string, string>;
  query: Record<string, string>;
  secrets: SecretUse[];
}

/** `bearerAuth` -> BEARER_AUTH, `api-key` -> API_KEY: upper snake case, a letter or _ first. */
export function secretNameFor(scheme: string): string {
  const name = scheme
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase()
    .slice(0, 60);
  if (name === '') return 'SECRET';
  return /^[0-9]/.test(name) ? `S_${name}` : name;
}

/**
 * The document's schemes with their secrets' names, unique (a clash gets `_2`, `_3` in the
 * schemes' sorted order, so the same document always gives the same names).
 */
export function secretNames(schemes: Record<string, unknown>): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const scheme of Object.keys(schemes).sort()) {
    const base = secretNameFor(scheme);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    names.set(scheme, name);
  }
  return names;
}

/**
 * The credentials an operation sends. `requirements` is its security requirement list; only the
 * first alternative is used (an empty one means no credentials). `warn` hears of schemes that are
 * unknown or cannot be sent.
 */
export function credentialsFor(
  requirements: unknown,
  schemes: Record<string, unknown>,
  names: Map<string, string>,
  warn: (message: string) => void,
): Credentials {
  const credentials: Credentials = { headers: {}, query: {}, secrets: [] };
  const first = Array.isArray(requirements) ? requirements[0] : undefined;
  if (!isObject(first)) return credentials;
  const cookies: string[] = [];
  for (const schemeName of Object.keys(first)) {
    const scheme = schemes[schemeName];
    const secret = names.get(schemeName);
    if (!isObject(scheme) || secret === undefined) {
      warn(
        `the security scheme "${schemeName}" is not defined in components.securitySchemes; no credentials sent for it`,
      );
      continue;
    }
    const reference = `{{secret.${secret}}}`;
    const use = (holds: string) => credentials.secrets.push({ name: secret, scheme: schemeName, holds });
    const type = typeof scheme.type === 'string' ? scheme.type : '';
    const httpScheme = typeof scheme.scheme === 'string' ? scheme.scheme.toLowerCase() : '';
    if (type === 'apiKey' && typeof scheme.name === 'string' && scheme.name !== '') {
      if (scheme.in === 'header') credentials.headers[scheme.name] = reference;
      else if (scheme.in === 'query') credentials.query[scheme.name] = reference;
      else if (scheme.in === 'cookie') cookies.push(`${scheme.name}=${reference}`);
      else {
        warn(`the apiKey scheme "${schemeName}" is sent in "${String(scheme.in)}", which is not supported`);
        continue;
      }
      use(`the API key (${scheme.in} ${scheme.name})`);
    } else if (type === 'http' && httpScheme === 'bearer') {
      credentials.headers.Authorization = `Bearer ${reference}`;
      use('the bearer token');
    } else if (type === 'http' && httpScheme === 'basic') {
      credentials.headers.Authorization = `Basic ${reference}`;
      use('base64 of "user:password"');
    } else if (type === 'oauth2' || type === 'openIdConnect') {
      credentials.headers.Authorization = `Bearer ${reference}`;
      use(`an access token obtained outside Bindery (${type} flows are not run)`);
    } else {
      warn(
        `the security scheme "${schemeName}" (${type}${httpScheme ? ` ${httpScheme}` : ''}) is not supported; no credentials sent for it`,
      );
    }
  }
  if (cookies.length > 0) credentials.headers.Cookie = cookies.join('; ');
  return credentials;
}
