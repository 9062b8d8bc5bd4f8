/**
 * What an upstream server is, apart from its name: the spec that reaches it (stdio command or HTTP
 * URL), which tools to take, how sessions map, and its limits. Its fingerprint (seed 003) hashes
 * that canonical spec together with the owner, so two servers of one user with identical specs
 * share one pool of instances, and two users never do. The display name is left out on purpose.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { UPSTREAM_DEFAULTS, type UpstreamLimits } from '@bindery/contracts';
import { canonicalJson } from '../../audit/audit.ts';
import { DomainError } from '../../domain/errors.ts';

export interface StdioSpec {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string | null;
}

export interface HttpSpec {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
  /**
   * The server requires OAuth (decision 079): each person's tokens are brokered by the control
   * plane. `server`: the row's id (the connections are the server's, so its pool is its own);
   * `clientSecret` may reference a secret.
   */
  oauth?: OAuthSpec | undefined;
}

export interface OAuthSpec {
  server: string;
  clientId: string | null;
  clientSecret: string | null;
  scope: string | null;
}

export type TransportSpec = StdioSpec | HttpSpec;

/** Whether an HTTP server's headers carry credentials of their own (`Authorization`, any case). */
export function hasAuthorizationHeader(transport: HttpSpec): boolean {
  return Object.keys(transport.headers).some((name) => name.toLowerCase() === 'authorization');
}

export interface ResolvedLimits {
  maxInstances: number;
  concurrentCalls: number;
  callTimeoutMs: number;
  idleTimeoutMs: number;
}

/** Everything the fingerprint covers (the owner is added when hashing). */
export interface UpstreamSpec {
  transport: TransportSpec;
  exposeTools: string[];
  sessionMode: 'shared' | 'per_session';
  limits: ResolvedLimits;
}

export function resolvedLimits(limits: UpstreamLimits | undefined | null): ResolvedLimits {
  return {
    maxInstances: limits?.max_instances ?? UPSTREAM_DEFAULTS.maxInstances,
    concurrentCalls: limits?.concurrent_calls ?? UPSTREAM_DEFAULTS.concurrentCalls,
    callTimeoutMs: limits?.call_timeout_ms ?? UPSTREAM_DEFAULTS.callTimeoutMs,
    idleTimeoutMs: limits?.idle_timeout_ms ?? UPSTREAM_DEFAULTS.idleTimeoutMs,
  };
}

/** A record with its keys in code-point order (env and headers: order never matters). */
function sortedRecord(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * SHA-256 (hex) of the canonical spec and the owner: env and headers sorted by name, expose_tools
 * sorted, header names lower-cased (HTTP treats them so); args keep their order (it matters).
 */
export function fingerprintOf(userId: string, spec: UpstreamSpec): string {
  const transport =
    spec.transport.transport === 'stdio'
      ? { ...spec.transport, env: sortedRecord(spec.transport.env) }
      : {
          ...spec.transport,
          headers: sortedRecord(
            Object.fromEntries(Object.entries(spec.transport.headers).map(([k, v]) => [k.toLowerCase(), v])),
          ),
        };
  const canonical = canonicalJson({
    owner: userId,
    transport,
    expose_tools: [...new Set(spec.exposeTools)].sort(),
    session_mode: spec.sessionMode,
    limits: spec.limits,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** The slug of a display name: the default attach prefix (`[a-z0-9_]`, at most 32). */
export function slugOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 32)
    .replace(/_+$/, '');
  return slug === '' ? 'server' : slug;
}

/**
 * Refuses a stdio command the operator did not allow (UPSTREAM_STDIO_COMMANDS lists executables by
 * name: `node` allows `node` and `/usr/bin/node`). Nothing allowed: every stdio server is refused.
 */
export function checkStdioCommand(command: string, allowed: readonly string[]): void {
  if (allowed.length === 0) {
    throw new DomainError(
      'FORBIDDEN',
      'stdio upstream servers are turned off on this control plane: its operator allows commands with UPSTREAM_STDIO_COMMANDS',
      { field: 'command' },
    );
  }
  const name = basename(command);
  if (!allowed.includes(name) && !allowed.includes(command)) {
    throw new DomainError(
      'FORBIDDEN',
      `command: "${name}" is not among the commands this control plane may run (UPSTREAM_STDIO_COMMANDS: ${allowed.join(', ')})`,
      { field: 'command', allowed: [...allowed] },
    );
  }
}

/** Checks an HTTP upstream's URL: http(s), no credentials in it (put them in headers, as secrets). */
export function checkUpstreamUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DomainError('VALIDATION_FAILED', `url: "${url.slice(0, 200)}" is not a URL`, { field: 'url' });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new DomainError(
      'VALIDATION_FAILED',
      `url: only http and https URLs are served, not ${parsed.protocol}`,
      {
        field: 'url',
      },
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new DomainError(
      'VALIDATION_FAILED',
      'url: credentials in the URL are refused; send them in a header that references a secret',
      { field: 'url' },
    );
  }
}
