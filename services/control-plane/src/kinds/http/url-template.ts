/**
 * An HTTP tool's URL template: an absolute http(s) URL whose path may hold `{name}` placeholders,
 * filled from path arguments at call time. Placeholders are refused outside the path, so an
 * argument can never choose the host, the port or the scheme; filled values are percent-encoded, so
 * an argument can never add a path segment, a query or a fragment.
 */
import type { HttpToolConfig } from '@bindery/contracts';
import { DomainError } from '../../domain/errors.ts';
import { perConfig } from './per-config.ts';

export interface UrlTemplate {
  /** Everything before the path: `https://api.example.com:8443`. */
  origin: string;
  /** The path as written, placeholders included: `/users/{id}`. */
  path: string;
  /** The query string as written, without `?` (static, no placeholders); '' when absent. */
  query: string;
  /** Placeholder names in order of first appearance. */
  placeholders: string[];
}

const ABSOLUTE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;
const PLACEHOLDER = /\{([^{}]*)\}/g;
const MAX_PLACEHOLDER_LENGTH = 256;

function invalid(message: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `url: ${message}`, { field: 'url', ...extra });
}

/** The template's parts; throws VALIDATION_FAILED (field `url`) saying what is wrong. */
export function parseUrlTemplate(template: string): UrlTemplate {
  if (template.includes('{{')) {
    throw invalid('"{{...}}" is not allowed in the URL; put secrets in `headers` or `query`');
  }
  const absolute = ABSOLUTE.exec(template);
  if (absolute === null) throw invalid(`"${template}" is not an absolute http(s) URL`);
  const [, scheme = '', authority = '', rest = ''] = absolute;
  if (!['http', 'https'].includes(scheme.toLowerCase())) {
    throw invalid(`the scheme must be http or https, not "${scheme}"`);
  }
  if (authority === '') throw invalid('the URL has no host');
  if (/[{}]/.test(authority))
    throw invalid('placeholders may only appear in the path, not in the host or port');
  // Credentials in a URL end up in logs and error messages; a header can hold a secret instead.
  if (authority.includes('@'))
    throw invalid('credentials in the URL are refused; send them in a header with a secret');
  if (rest.includes('#')) throw invalid('a URL fragment is never sent to the server; remove it');
  const queryAt = rest.indexOf('?');
  const path = queryAt < 0 ? rest : rest.slice(0, queryAt);
  const query = queryAt < 0 ? '' : rest.slice(queryAt + 1);
  if (/[{}]/.test(query)) throw invalid('placeholders may only appear in the path, not in the query string');

  const placeholders: string[] = [];
  for (const match of path.matchAll(PLACEHOLDER)) {
    const name = match[1] ?? '';
    if (name === '') throw invalid('"{}" has no name');
    if (name.length > MAX_PLACEHOLDER_LENGTH)
      throw invalid(`a placeholder name is over ${MAX_PLACEHOLDER_LENGTH} characters`);
    if (!placeholders.includes(name)) placeholders.push(name);
  }
  const stray = /[{}]/.exec(path.replace(PLACEHOLDER, ''));
  if (stray !== null) throw invalid(`unbalanced "${stray[0]}" in the path`);

  let parsed: URL;
  try {
    parsed = new URL(template.replace(PLACEHOLDER, 'x'));
  } catch {
    throw invalid(`"${template}" is not a valid URL`);
  }
  if (parsed.hostname === '') throw invalid('the URL has no host');
  return {
    origin: `${scheme.toLowerCase()}://${authority}`,
    path: path === '' ? '/' : path,
    query,
    placeholders,
  };
}

/** The parsed template of a config's `url`, parsed once per frozen config (per-config.ts). */
export const urlTemplateOf = perConfig((config: Pick<HttpToolConfig, 'url'>) => parseUrlTemplate(config.url));

// A segment that is "." or ".." after filling (also spelled %2e, which URL parsers read as a dot)
// would move the request to another path of the API.
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/**
 * The URL's origin and path with each placeholder replaced by its percent-encoded value from
 * `values` (keyed by placeholder name); throws VALIDATION_FAILED (field `argument`) when a value is
 * empty or would make a "." or ".." segment.
 */
export function fillPath(
  template: UrlTemplate,
  values: ReadonlyMap<string, { argument: string; text: string }>,
): string {
  const segments = template.path.split('/').map((segment) => {
    if (!segment.includes('{')) return segment;
    const filled = segment.replace(PLACEHOLDER, (_whole, name: string) => {
      const value = values.get(name);
      if (value === undefined) {
        throw new DomainError('VALIDATION_FAILED', `no value for the path placeholder {${name}}`, {
          field: 'arguments',
          placeholder: name,
        });
      }
      if (value.text === '') {
        throw new DomainError(
          'VALIDATION_FAILED',
          `argument ${value.argument} may not be empty (it fills a path segment)`,
          {
            field: 'arguments',
            argument: value.argument,
          },
        );
      }
      return encodeURIComponent(value.text);
    });
    if (DOT_SEGMENT.test(filled)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `the path arguments make the segment "${filled}", which would change the path`,
        { field: 'arguments', segment: filled },
      );
    }
    return filled;
  });
  return template.origin + segments.join('/');
}
