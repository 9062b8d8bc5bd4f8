// Pins the SSRF guard of outgoing requests: the address check refuses loopback, private,
// link-local (cloud metadata), CGNAT, unique-local, multicast, unspecified and IPv4-mapped forms
// unless HTTP_TOOLS_ALLOWED_NETWORKS allows their network, and lets public addresses through (checked
// on the function: no traffic leaves loopback); the guarded dispatcher refuses 127.0.0.1, localhost
// and [::ffff:127.0.0.1] without an allowance, reaches a local server with one, and refuses a
// redirect hop outside it; fetchGuarded bounds time, size and redirects, and drops the caller's
// headers on a redirect to another origin.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalNetwork } from '@bindery/service-kit/settings';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.ts';
import { fetchGuarded } from '../src/outbound/outbound-fetch.ts';
import {
  AddressRefusedError,
  addressAllowed,
  createGuardedDispatcher,
  nonPublicRange,
  parseAllowedNetworks,
} from '../src/outbound/ssrf-guard.ts';

const none = parseAllowedNetworks([]);

describe('the address check', () => {
  it.each([
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['169.254.0.1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.254', 'carrierGradeNat'],
    ['127.0.0.1', 'loopback'],
    ['127.0.0.2', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['::127.0.0.1', 'ipv4Compatible'],
    ['::10.0.0.1', 'ipv4Compatible'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['2002:a00:1::', '6to4'],
  ])('refuses %s (%s) without an allowance', (ip, range) => {
    expect(nonPublicRange(ip)).toBe(range);
    expect(addressAllowed(ip, none)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111'])(
    'lets the public address %s through',
    (ip) => {
      expect(nonPublicRange(ip)).toBeUndefined();
      expect(addressAllowed(ip, none)).toBe(true);
    },
  );

  it('refuses what is not an address at all', () => {
    expect(addressAllowed('localhost', none)).toBe(false);
    expect(addressAllowed('', none)).toBe(false);
  });

  it('lets a refused range through only inside an allowed network', () => {
    const allowed = parseAllowedNetworks(['10.1.0.0/16', 'fd00::/8', '127.0.0.1/32']);
    expect(addressAllowed('10.1.2.3', allowed)).toBe(true);
    expect(addressAllowed('::ffff:10.1.2.3', allowed)).toBe(true);
    expect(addressAllowed('10.2.0.1', allowed)).toBe(false);
    expect(addressAllowed('fd00::5', allowed)).toBe(true);
    expect(addressAllowed('fc00::5', allowed)).toBe(false);
    expect(addressAllowed('127.0.0.1', allowed)).toBe(true);
    expect(addressAllowed('127.0.0.2', allowed)).toBe(false);
    expect(addressAllowed('169.254.169.254', allowed)).toBe(false);
    // An IPv4-mapped network allows the IPv4 addresses it maps.
    expect(addressAllowed('192.168.0.7', parseAllowedNetworks(['::ffff:192.168.0.0/120']))).toBe(true);
  });

  it('reads the setting’s networks in canonical form and refuses what is not one', () => {
    expect(canonicalNetwork('10.1.2.3/8')).toBe('10.0.0.0/8');
    expect(canonicalNetwork('127.0.0.1')).toBe('127.0.0.1/32');
    expect(canonicalNetwork('::ffff:127.0.0.1/128')).toBe('127.0.0.1/32');
    expect(canonicalNetwork('FD00::1/8')).toBe('fd00::/8');
    for (const bad of ['10.0.0.0/33', 'localhost', '10.0.0.0/-1', '10.0.0.0/ 8', 'fd00::/129', '']) {
      expect(canonicalNetwork(bad), bad).toBeUndefined();
    }
  });
});

interface LocalServer {
  port: number;
  origin: string;
  requests: { path: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

async function localServer(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<LocalServer> {
  const requests: LocalServer['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the guarded dispatcher, against a local server', () => {
  let target: LocalServer;
  let redirector: LocalServer;
  let open: Agent;
  let closed: Agent;
  const agents: Agent[] = [];

  beforeAll(async () => {
    target = await localServer((req, res) => {
      if (req.url === '/big') return void res.end('x'.repeat(2048));
      if (req.url === '/stream') {
        // No content-length: the cap must hold while reading.
        res.write('y'.repeat(1500));
        return void res.end('y'.repeat(1500));
      }
      if (req.url === '/slow') return; // never answers
      if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url }));
    });
    redirector = await localServer((req, res) => {
      const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
      res.writeHead(307, { location: to }).end();
    });
    open = createGuardedDispatcher({ allowedNetworks: ['127.0.0.1/32'] });
    closed = createGuardedDispatcher({ allowedNetworks: [] });
    agents.push(open, closed);
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await target.close();
    await redirector.close();
  });

  it('reaches a loopback server when 127.0.0.1/32 is allowed, by address and by name', async () => {
    for (const host of ['127.0.0.1', 'localhost']) {
      const res = await fetchGuarded(open, `http://${host}:${target.port}/hello`);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString())).toEqual({ path: '/hello' });
    }
  });

  it.each(['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '[::1]', '127.1', '2130706433'])(
    'refuses http://%s without an allowance, naming host, address and setting',
    async (host) => {
      const before = target.requests.length;
      const error = await fetchGuarded(closed, `http://${host}:${target.port}/secret`).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AddressRefusedError);
      const refusal = error as AddressRefusedError;
      expect(refusal.code).toBe('FORBIDDEN');
      expect(refusal.message).toContain('HTTP_TOOLS_ALLOWED_NETWORKS');
      expect(refusal.message).toMatch(/127\.0\.0\.1|::1/);
      expect(refusal.message).toContain(
        host === 'localhost' ? 'localhost resolves to' : 'is a loopback address',
      );
      expect(refusal.message).not.toContain('/secret');
      expect(target.requests.length).toBe(before);
    },
  );

  it('refuses a redirect hop that leaves the allowed network', async () => {
    const before = target.requests.length;
    const to = `http://127.0.0.2:${target.port}/inside`;
    const error = await fetchGuarded(open, `${redirector.origin}/?to=${encodeURIComponent(to)}`).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AddressRefusedError);
    expect((error as AddressRefusedError).address).toBe('127.0.0.2');
    expect(target.requests.length).toBe(before);
  });

  it('follows an allowed redirect and drops the caller’s headers when the origin changes', async () => {
    const to = `${target.origin}/landed`;
    const res = await fetchGuarded(open, `${redirector.origin}/?to=${encodeURIComponent(to)}`, {
      headers: { authorization: 'Bearer sk-abc', 'x-api-key': 'sk-def', accept: 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.redirects).toBe(1);
    expect(res.url).toBe(to);
    const seen = target.requests.at(-1)!;
    expect(seen.path).toBe('/landed');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers.accept).toBe('application/json');
    expect(redirector.requests.at(-1)!.headers['x-api-key']).toBe('sk-def');
  });

  it('stops after the redirect limit', async () => {
    const error = await fetchGuarded(open, `${target.origin}/loop`, {}, { maxRedirects: 3 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('UPSTREAM_FAILED');
    expect((error as DomainError).message).toContain('more than 3 times');
  });

  it('caps the answer’s size, declared or streamed', async () => {
    for (const path of ['/big', '/stream']) {
      const error = await fetchGuarded(open, `${target.origin}${path}`, {}, { maxBodyBytes: 1024 }).catch(
        (e: unknown) => e,
      );
      expect((error as DomainError).code, path).toBe('LIMIT_EXCEEDED');
      expect((error as DomainError).message).toContain('1024 bytes');
    }
  });

  it('ends a request that outlives its deadline with TIMEOUT', async () => {
    const started = Date.now();
    const error = await fetchGuarded(open, `${target.origin}/slow`, {}, { timeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    expect((error as DomainError).code).toBe('TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('fetches only http and https URLs', async () => {
    const error = await fetchGuarded(open, 'file:///etc/passwd').catch((e: unknown) => e);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
  });
});
