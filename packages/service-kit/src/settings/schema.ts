/**
 * Settings schemas: each environment variable a service reads is declared once, with its kind,
 * bounds, default and a one-line doc. The same declaration parses the environment at start,
 * renders docs/configuration.md and tells turbo's configuration test which names must reach the
 * processes.
 */
import ipaddr from 'ipaddr.js';

/** What went wrong with a value: the text after the variable's name ("must be ..., got ..."). */
type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string; got?: string };

/** A default computed from other settings of the same schema (parsed before it, in order). */
export interface DerivedDefault<T> {
  /** How the docs show it, e.g. `http://127.0.0.1:$PORT`. */
  readonly shown: string;
  readonly derive: (values: Readonly<Record<string, unknown>>) => T;
}

/** One environment variable: how it is parsed, what it defaults to, and how the docs show it. */
export interface Setting<T> {
  /** The kind and its bounds as the docs show them, e.g. "integer 0–65535". */
  readonly kind: string;
  readonly doc: string;
  /** The default as the docs show it ("unset" when there is none). */
  readonly shownDefault: string;
  /** A secret's value never appears in a message, only its length. */
  readonly secret: boolean;
  readonly parse: (raw: string) => Parsed<T>;
  /** The value when the variable is unset or empty. */
  readonly fallback: (values: Readonly<Record<string, unknown>>) => T;
  /** Why the setting is required, when it is (an unset one is refused with this reason). */
  readonly requiredBecause?: string;
}

/** The values a schema's settings parse to, by variable name. */
export type SettingValues<S> = { -readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/** A cross-field rule: the message of a violation, or undefined. Runs only when every value parsed. */
export type SettingsCheck<S> = (values: SettingValues<S>) => string | undefined;

export interface SettingsSchema<S extends Record<string, Setting<unknown>>> {
  /** The service, as the docs and messages name it ("control plane", "gateway"). */
  readonly service: string;
  readonly settings: S;
  readonly checks: readonly SettingsCheck<S>[];
}

/** Declares a service's settings; derived defaults may use the settings declared before them. */
export function defineSettings<S extends Record<string, Setting<unknown>>>(
  service: string,
  settings: S,
  checks: readonly SettingsCheck<S>[] = [],
): SettingsSchema<S> {
  return { service, settings, checks };
}

export type SettingsResult<S> = { ok: true; values: SettingValues<S> } | { ok: false; problems: string[] };

/**
 * Parses an environment against a schema. Every invalid value is collected (an empty value counts
 * as unset); cross-field checks run once every value parsed. Messages name the variable, the value
 * (a secret only by its length) and what is allowed.
 */
export function parseSettings<S extends Record<string, Setting<unknown>>>(
  schema: SettingsSchema<S>,
  env: Readonly<Record<string, string | undefined>>,
): SettingsResult<S> {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  const invalid = new Set<string>();
  for (const [name, setting] of Object.entries(schema.settings)) {
    const raw = env[name];
    if (raw === undefined || raw === '') {
      if (setting.requiredBecause !== undefined) {
        problems.push(`${name} must be set: ${setting.requiredBecause}`);
        invalid.add(name);
        continue;
      }
      try {
        values[name] = setting.fallback(values);
      } catch {
        // A derived default whose sources were invalid: those are already reported.
        invalid.add(name);
      }
      continue;
    }
    const parsed = setting.parse(raw);
    if (parsed.ok) {
      values[name] = parsed.value;
    } else {
      // The offending part: the whole value, or one item of a list.
      const bad = parsed.got ?? raw;
      const got = setting.secret ? `(secret, ${bad.length} characters)` : JSON.stringify(bad);
      problems.push(`${name} ${parsed.problem}, got ${got}`);
      invalid.add(name);
    }
  }
  if (invalid.size === 0) {
    for (const check of schema.checks) {
      const problem = check(values as SettingValues<S>);
      if (problem !== undefined) problems.push(problem);
    }
  }
  return problems.length === 0 ? { ok: true, values: values as SettingValues<S> } : { ok: false, problems };
}

/** One message for all problems: the problem itself when there is one, else a list. */
export function settingsProblemsMessage(problems: readonly string[]): string {
  if (problems.length === 1) return problems[0]!;
  return `${problems.length} settings are invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`;
}

// ---- Kinds ----

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = (problem: string, got?: string): Parsed<never> =>
  got === undefined ? { ok: false, problem } : { ok: false, problem, got };

const grouped = (n: number) => n.toLocaleString('en-US');

/** The non-empty items of a comma-separated value, each parsed by `each`; the first bad one fails it all. */
function commaSeparated<T>(raw: string, each: (item: string) => Parsed<T>): Parsed<T[]> {
  const items: T[] = [];
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const parsed = each(item);
    if (!parsed.ok) return parsed;
    items.push(parsed.value);
  }
  return ok(items);
}

/** A byte count the way people read it: "10 MiB" when it is a whole number of KiB/MiB/GiB. */
function bytes(n: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (n >= size && n % size === 0) return `${grouped(n / size)} ${unit}`;
  }
  return `${grouped(n)} bytes`;
}

function defaultOf<T>(
  value: T | DerivedDefault<T> | undefined,
  show: (v: T) => string,
): Pick<Setting<T | undefined>, 'shownDefault' | 'fallback'> {
  if (value !== null && typeof value === 'object' && 'derive' in value) {
    return { shownDefault: value.shown, fallback: value.derive };
  }
  return {
    shownDefault: value === undefined ? 'unset' : show(value as T),
    fallback: () => value as T | undefined,
  };
}

export interface IntegerOptions {
  min: number;
  max: number;
  /** What one unit is, for the docs: `ms`, `bytes` (shown as KiB/MiB/GiB), `MiB`, `hours`... */
  unit?: string;
  default: number | DerivedDefault<number>;
  doc: string;
}

/** A whole number within bounds. */
export function integer(o: IntegerOptions): Setting<number> {
  // Plain numbers below 100,000 read best ungrouped (ports, counts); amounts with a unit grouped.
  const number = (n: number) => (o.unit !== undefined || n >= 100_000 ? grouped(n) : String(n));
  const show = (n: number) => (o.unit === 'bytes' ? bytes(n) : `${number(n)}${o.unit ? ` ${o.unit}` : ''}`);
  const range =
    o.unit === 'bytes' ? `${show(o.min)} to ${show(o.max)}` : `${number(o.min)} to ${number(o.max)}`;
  return {
    kind: `integer ${range}${o.unit && o.unit !== 'bytes' ? ` (${o.unit})` : ''}`,
    doc: o.doc,
    secret: false,
    ...(defaultOf(o.default, show) as Pick<Setting<number>, 'shownDefault' | 'fallback'>),
    parse: (raw) => {
      const value = Number(raw);
      return Number.isInteger(value) && value >= o.min && value <= o.max && raw.trim() !== ''
        ? ok(value)
        : fail(`must be an integer from ${o.min} to ${o.max}`);
    },
  };
}

/** Free text (a host name, a directory). */
export function string(o: { default: string; doc: string }): Setting<string>;
export function string(o: { doc: string }): Setting<string | undefined>;
export function string(o: { default?: string; doc: string }): Setting<string | undefined> {
  return {
    kind: 'string',
    doc: o.doc,
    secret: false,
    ...defaultOf(o.default, (v) => `\`${v}\``),
    parse: ok,
  };
}

/** "true" or "false". */
export function boolean(o: { default: boolean; doc: string }): Setting<boolean>;
export function boolean(o: { doc: string }): Setting<boolean | undefined>;
export function boolean(o: { default?: boolean; doc: string }): Setting<boolean | undefined> {
  return {
    kind: '`true` or `false`',
    doc: o.doc,
    secret: false,
    ...defaultOf(o.default, (v) => `\`${v}\``),
    parse: (raw) =>
      raw === 'true' ? ok(true) : raw === 'false' ? ok(false) : fail('must be "true" or "false"'),
  };
}

/** One of a fixed set of words. */
export function oneOf<const V extends string>(o: {
  values: readonly V[];
  default: V | DerivedDefault<V>;
  doc: string;
}): Setting<V> {
  return {
    kind: o.values.map((v) => `\`${v}\``).join(', '),
    doc: o.doc,
    secret: false,
    ...(defaultOf<V>(o.default, (v) => `\`${v}\``) as Pick<Setting<V>, 'shownDefault' | 'fallback'>),
    parse: (raw) =>
      (o.values as readonly string[]).includes(raw)
        ? ok(raw as V)
        : fail(`must be one of ${o.values.map((v) => `"${v}"`).join(', ')}`),
  };
}

/** A credential: at least `minLength` characters; messages show its length, never its value. */
export function secret(o: { minLength?: number; requiredBecause: string; doc: string }): Setting<string>;
export function secret(o: { minLength?: number; doc: string }): Setting<string | undefined>;
export function secret(o: {
  minLength?: number;
  requiredBecause?: string;
  doc: string;
}): Setting<string | undefined> {
  const minLength = o.minLength ?? 16;
  return {
    kind: `secret, ${minLength}+ characters`,
    doc: o.doc,
    secret: true,
    shownDefault: o.requiredBecause === undefined ? 'unset' : 'required',
    fallback: () => undefined,
    ...(o.requiredBecause !== undefined && { requiredBecause: o.requiredBecause }),
    parse: (raw) =>
      raw.length >= minLength ? ok(raw) : fail(`must be at least ${minLength} characters long`),
  };
}

export interface UrlOptions {
  /** Allowed schemes without the colon; http and https by default. */
  schemes?: readonly string[];
  /** An http(s) base URL: no query or fragment, no trailing slash (a path prefix is kept). */
  base?: boolean;
  /** It may carry a password: messages show its length only. */
  secret?: boolean;
  doc: string;
}

function parseUrl(raw: string, o: Omit<UrlOptions, 'doc'>): Parsed<string> {
  const schemes = o.schemes ?? ['http', 'https'];
  const allowed = `must be ${schemes.length === 2 && schemes[0] === 'http' && schemes[1] === 'https' ? 'an http(s)' : `a ${schemes.map((s) => `${s}://`).join(' or ')}`} URL`;
  let parsed: URL;
  try {
    parsed = new URL(raw.trim());
  } catch {
    return fail(allowed);
  }
  if (!schemes.includes(parsed.protocol.slice(0, -1))) return fail(allowed);
  if (!o.base) return ok(raw.trim());
  if (parsed.search !== '' || parsed.hash !== '') return fail('must be a base URL without query or fragment');
  return ok(parsed.href.replace(/\/+$/, ''));
}

/** A URL of the given schemes. */
export function url(o: UrlOptions & { default: string | DerivedDefault<string> }): Setting<string>;
export function url(o: UrlOptions): Setting<string | undefined>;
export function url(
  o: UrlOptions & { default?: string | DerivedDefault<string> },
): Setting<string | undefined> {
  const schemes = o.schemes ?? ['http', 'https'];
  return {
    kind: `${schemes.join('/')} URL${o.secret ? ' (secret)' : ''}`,
    doc: o.doc,
    secret: o.secret ?? false,
    ...defaultOf(o.default, (v) => `\`${v}\``),
    parse: (raw) => parseUrl(raw, o),
  };
}

/** A comma-separated list (items trimmed, empty ones dropped, each once); URL items are checked each. */
export function list(o: { items?: 'string' | 'url'; doc: string }): Setting<string[]> {
  return {
    kind: `comma-separated ${o.items === 'url' ? 'http(s) base URLs' : 'list'}`,
    doc: o.doc,
    secret: false,
    shownDefault: 'empty',
    fallback: () => [],
    parse: (raw) => {
      const items = commaSeparated(raw, (item) => {
        if (o.items !== 'url') return ok(item);
        const parsed = parseUrl(item, { base: true });
        return parsed.ok ? parsed : fail(parsed.problem, item);
      });
      return items.ok ? ok([...new Set(items.value)]) : items;
    },
  };
}

/** A derived default: computed from settings declared before it, shown in the docs as `shown`. */
export function derived<T>(shown: string, derive: (values: Readonly<Record<string, unknown>>) => T) {
  return { shown, derive } satisfies DerivedDefault<T>;
}

/** Bytes of an encryption key (AES-256). */
export const ENCRYPTION_KEY_BYTES = 32;

/**
 * The 32 bytes an encryption key's text stands for: 64 hex digits, or base64 (standard or
 * URL-safe, padding optional) of exactly 32 bytes; undefined for anything else.
 */
export function decodeEncryptionKey(text: string): Uint8Array | undefined {
  const raw = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(raw)) {
    return Uint8Array.from(raw.match(/../g)!, (pair) => parseInt(pair, 16));
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(raw)) return undefined;
  let binary: string;
  try {
    binary = atob(raw.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return undefined;
  }
  if (binary.length !== ENCRYPTION_KEY_BYTES) return undefined;
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const KEY_FORMAT = `${ENCRYPTION_KEY_BYTES} bytes`;
const KEY_PROBLEM = `must be ${KEY_FORMAT} written as base64 or as 64 hex digits (e.g. \`openssl rand -base64 32\`)`;

/** An AES-256 key (secret): its 32 bytes, from base64 or hex; messages show its length only. */
export function encryptionKey(o: { doc: string }): Setting<Uint8Array | undefined> {
  return {
    kind: `secret, ${KEY_FORMAT} as base64 or 64 hex digits`,
    doc: o.doc,
    secret: true,
    shownDefault: 'unset',
    fallback: () => undefined,
    parse: (raw) => {
      const key = decodeEncryptionKey(raw);
      return key ? ok(key) : fail(KEY_PROBLEM);
    },
  };
}

/** A comma-separated list of AES-256 keys (secret), each like `encryptionKey`'s. */
export function encryptionKeys(o: { doc: string }): Setting<Uint8Array[]> {
  return {
    kind: `secret, comma-separated keys of ${KEY_FORMAT} each`,
    doc: o.doc,
    secret: true,
    shownDefault: 'empty',
    fallback: () => [],
    parse: (raw) =>
      commaSeparated(raw, (item) => {
        const key = decodeEncryptionKey(item);
        return key ? ok(key) : fail(`has an item that ${KEY_PROBLEM.replace(/^must be/, 'is not')}`, item);
      }),
  };
}

/**
 * A comma-separated list of IP networks in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a bare address
 * is that one address. Each parses to its canonical `address/prefix` (an IPv4-mapped IPv6 network
 * to its IPv4 form, so it matches the way addresses are compared).
 */
export function networks(o: { doc: string }): Setting<string[]> {
  return {
    kind: 'comma-separated CIDR networks',
    doc: o.doc,
    secret: false,
    shownDefault: 'empty',
    fallback: () => [],
    parse: (raw) => {
      const items = commaSeparated(raw, (item) => {
        const network = canonicalNetwork(item);
        return network !== undefined
          ? ok(network)
          : fail('must be a comma-separated list of CIDR networks such as 127.0.0.1/32 or fd00::/8', item);
      });
      return items.ok ? ok([...new Set(items.value)]) : items;
    },
  };
}

/** `address/prefix` for a CIDR network or a bare address, IPv4-mapped forms as IPv4; else undefined. */
export function canonicalNetwork(text: string): string | undefined {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  let prefix: number;
  try {
    if (text.includes('/')) {
      // parseCIDR accepts a prefix with leading zeros or a sign; only plain digits are meant.
      if (!/\/\d{1,3}$/.test(text)) return undefined;
      [address, prefix] = ipaddr.parseCIDR(text);
    } else {
      address = ipaddr.parse(text);
      prefix = address.kind() === 'ipv4' ? 32 : 128;
    }
  } catch {
    return undefined;
  }
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    address = (address as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  // The network's own address: 10.1.2.3/8 names 10.0.0.0/8.
  const base =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${prefix}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${prefix}`);
  return `${base.toString()}/${prefix}`;
}
