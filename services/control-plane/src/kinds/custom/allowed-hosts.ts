/**
 * The hosts a custom tool's `ctx.fetch` may reach (`allowed_hosts`): each entry is `host` (the
 * default ports, 80 for http and 443 for https, as a CSP host source without a port) or
 * `host:port`. Entries are normalised when saved (lower case, punycode, IPv4 shorthand and IPv6
 * written as WHATWG URL parsing writes them), so a URL the tool fetches matches by plain
 * comparison. This is the author's list of destinations; the SSRF guard still checks every
 * address connected to, so an entry cannot open the way to an internal network.
 */
import { DomainError } from '../../domain/errors.ts';

const FIELD = 'allowed_hosts';
const HOST_PORT = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/;
const DNS_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

function invalid(index: number, entry: string, why: string): DomainError {
  return new DomainError('VALIDATION_FAILED', `${FIELD}/${index}: "${entry}" ${why}`, {
    field: FIELD,
    index,
  });
}

/**
 * The entries normalised; VALIDATION_FAILED naming `allowed_hosts` and the entry's index for one
 * that is not `host` or `host:port` (a URL, a path, a wildcard, a bad port), or a duplicate.
 */
export function normaliseAllowedHosts(entries: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return entries.map((entry, index) => {
    const normal = normaliseEntry(entry, index);
    const first = seen.get(normal);
    if (first !== undefined) throw invalid(index, entry, `is the same host as ${FIELD}/${first}`);
    seen.set(normal, index);
    return normal;
  });
}

function normaliseEntry(entry: string, index: number): string {
  if (/[\s/?#@\\]/.test(entry) || entry.includes('://')) {
    throw invalid(
      index,
      entry,
      'is not a host: write the host alone, e.g. "api.example.com" or "api.example.com:8443"',
    );
  }
  if (entry.includes('*')) {
    throw invalid(index, entry, 'has a wildcard: list each host the tool calls');
  }
  const match = HOST_PORT.exec(entry);
  if (!match) throw invalid(index, entry, 'is not "host" or "host:port" (an IPv6 address goes in brackets)');
  const [, host = '', port] = match;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    throw invalid(index, entry, 'is not a valid host name');
  }
  const ipv6 = hostname.startsWith('[');
  if (!ipv6 && !IPV4.test(hostname) && !DNS_NAME.test(hostname)) {
    throw invalid(index, entry, 'is not a valid host name');
  }
  if (port === undefined) return hostname;
  const number = Number(port);
  if (number < 1 || number > 65_535) throw invalid(index, entry, 'has a port outside 1-65535');
  return `${hostname}:${number}`;
}

/** True when `url` (http or https) is on one of the normalised entries. */
export function hostAllowed(url: URL, allowed: readonly string[]): boolean {
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const defaultPort = port === 80 || port === 443;
  return allowed.some(
    (entry) => entry === `${url.hostname}:${port}` || (defaultPort && entry === url.hostname),
  );
}
