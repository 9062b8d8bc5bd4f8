/**
 * The SSRF guard of outgoing requests (HTTP tools, custom tools' fetch, OpenAPI import by URL):
 * only public unicast addresses are reached, unless the operator allows a network with
 * HTTP_TOOLS_ALLOWED_NETWORKS. The check sits in the dispatcher's `connect`, the one place every
 * connection passes: a literal IP in the URL is checked there (Node resolves nothing for it), a
 * host name through the DNS lookup the connector uses, so the address checked is the address
 * connected to (no second resolution an attacker's DNS could answer differently), and each
 * redirect hop opens its own connection through the same check.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { DomainError } from '../domain/errors.ts';

/** The setting that widens what the guard lets through. */
export const ALLOWED_NETWORKS_SETTING = 'HTTP_TOOLS_ALLOWED_NETWORKS';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** A network in CIDR form, parsed: its address and prefix length. */
export type AllowedNetwork = readonly [Address, number];

/** Parses CIDR networks (HTTP_TOOLS_ALLOWED_NETWORKS, already checked by the settings schema). */
export function parseAllowedNetworks(cidrs: readonly string[]): AllowedNetwork[] {
  return cidrs.map((cidr) => {
    const [address, prefix] = cidr.includes('/')
      ? ipaddr.parseCIDR(cidr)
      : [ipaddr.parse(cidr), cidr.includes(':') ? 128 : 32];
    // An IPv4-mapped network (`::ffff:10.0.0.0/104`) is the IPv4 network it maps to.
    return isMapped(address) && prefix >= 96 ? [address.toIPv4Address(), prefix - 96] : [address, prefix];
  });
}

function isMapped(address: Address): address is ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress();
}

/**
 * An address as the network stack reads it. ipaddr.js reads any IPv6 text ending in a dotted quad
 * as IPv4-mapped (`::127.0.0.1` as `::ffff:127.0.0.1`); the stack reads the tail as the last 32
 * bits, so it is rewritten in hex first.
 */
function parseAddress(text: string): Address {
  const tail = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (tail && text.includes(':')) {
    const [a, b, c, d] = tail.slice(2).map(Number) as [number, number, number, number];
    if ([a, b, c, d].some((n) => n > 255)) throw new Error('not an address');
    return ipaddr.parse(`${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`);
  }
  return ipaddr.parse(text);
}

/** IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as the IPv4 address it reaches, so one rule covers both. */
function normalize(address: Address): Address {
  return isMapped(address) ? address.toIPv4Address() : address;
}

// `::/96` (IPv4-compatible addresses, `::` and `::1` among them): deprecated, and a host that
// still routes them reaches IPv4 addresses through them. ipaddr.js calls most of it unicast.
const IPV4_COMPATIBLE: AllowedNetwork = [ipaddr.parse('::'), 96];

/**
 * What kind of non-public address `ip` is (`loopback`, `private`, `linkLocal`, `carrierGradeNat`,
 * `uniqueLocal`, `multicast`, `unspecified`, ...), or undefined for a public unicast one. Anything
 * that does not parse as an IP address counts as `invalid`.
 */
export function nonPublicRange(ip: string): string | undefined {
  let address: Address;
  try {
    address = normalize(parseAddress(ip));
  } catch {
    return 'invalid';
  }
  // ipaddr.js names every special-purpose block (reserved, documentation, 6to4, Teredo, NAT64...):
  // only plain unicast is public. 169.254.169.254 (cloud metadata) is link-local.
  const range = address.range();
  if (range !== 'unicast') return range;
  if (address.kind() === 'ipv6' && address.match(IPV4_COMPATIBLE[0], IPV4_COMPATIBLE[1])) {
    return 'ipv4Compatible';
  }
  return undefined;
}

/** True when an outgoing request may connect to `ip`: a public address, or one inside `allowed`. */
export function addressAllowed(ip: string, allowed: readonly AllowedNetwork[]): boolean {
  return refusedRange(ip, allowed) === undefined;
}

/** The range that keeps `ip` out, or undefined when it may be reached. */
function refusedRange(ip: string, allowed: readonly AllowedNetwork[]): string | undefined {
  const range = nonPublicRange(ip);
  if (range === undefined || range === 'invalid') return range;
  const address = normalize(parseAddress(ip));
  const inside = allowed.some(
    ([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix),
  );
  return inside ? undefined : range;
}

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  carrierGradeNat: 'a carrier-grade NAT',
  uniqueLocal: 'a unique-local',
  multicast: 'a multicast',
  broadcast: 'the broadcast',
  unspecified: 'the unspecified',
  reserved: 'a reserved',
  ipv4Compatible: 'an IPv4-compatible',
};

/** An outgoing request refused because its host is (or resolves to) an address it may not reach. */
export class AddressRefusedError extends DomainError {
  override name = 'AddressRefusedError';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    const what = `${RANGE_WORDS[range] ?? `a special-purpose (${range})`} address`;
    // An IPv4-mapped address is shown with the IPv4 address it reaches, the one to allow.
    const reached = ipaddr.isValid(address) ? normalize(parseAddress(address)).toString() : address;
    const shown = reached === address ? address : `${address} (${reached})`;
    const where = host === address ? `${shown} is ${what}` : `${host} resolves to ${shown}, ${what}`;
    const allow = isIP(reached) === 6 ? `${reached}/128` : `${reached}/32`;
    super(
      'FORBIDDEN',
      `outgoing request to ${host} refused: ${where}. To let tools reach it, add its network to ${ALLOWED_NETWORKS_SETTING} (e.g. ${allow})`,
      { host, address, range, setting: ALLOWED_NETWORKS_SETTING },
    );
  }
}

/**
 * A DNS lookup for the connector: resolves every address of the host and hands on only those the
 * guard allows (the connection is made to one of them); none left is an AddressRefusedError naming
 * the first refused address.
 */
export function guardedLookup(allowed: readonly AllowedNetwork[]): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const permitted = addresses.filter((a) => addressAllowed(a.address, allowed));
      if (permitted.length === 0) {
        const first = addresses[0];
        const refusal = first
          ? new AddressRefusedError(
              hostname,
              first.address,
              refusedRange(first.address, allowed) ?? 'invalid',
            )
          : new AddressRefusedError(hostname, '(no address)', 'invalid');
        return callback(refusal, '', 0);
      }
      if (options.all) return callback(null, permitted);
      callback(null, permitted[0]!.address, permitted[0]!.family);
    });
  };
}

export interface GuardedDispatcherOptions {
  /** HTTP_TOOLS_ALLOWED_NETWORKS: CIDR networks reachable although not public. */
  allowedNetworks: readonly string[];
  /** How long opening a connection (TCP and TLS) may take. */
  connectTimeoutMs?: number;
}

/**
 * An undici dispatcher whose every connection goes through the guard: pass it as `dispatcher` to
 * `request`/`fetch` (or use `fetchGuarded`). It keeps connections alive per origin like any Agent;
 * close it with the app.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const allowed = parseAllowedNetworks(options.allowedNetworks);
  const connector = buildConnector({
    lookup: guardedLookup(allowed),
    ...(options.connectTimeoutMs !== undefined && { timeout: options.connectTimeoutMs }),
  });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    // undici hands IPv6 literals without their brackets; strip them anyway should that change.
    const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      const range = refusedRange(host, allowed);
      if (range !== undefined) {
        // Asynchronously, as a real connection failure would be reported.
        process.nextTick(callback, new AddressRefusedError(host, host, range), null);
        return;
      }
    }
    connector(connectOptions, callback);
  };
  return new Agent({ connect });
}
