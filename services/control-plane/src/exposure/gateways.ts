/**
 * The gateways as the console's overview shows them (`GET /api/v2/gateways`): each of GATEWAY_URLS
 * probed at `{url}/readyz` now, all at once, each within a timeout, redirects never followed; the
 * public gateway URL; (the demo exposure beside them comes from demo.ts). Nothing secret: a URL's
 * password is hidden, the demo's api_key is never shown (the key is stored hashed anyway).
 */
import { redactUrlPassword, type GatewayProbe } from '@bindery/contracts';

export const GATEWAY_PROBE_TIMEOUT_MS = 2_000;
/** Bytes of a /readyz answer read at most (the gateway's is a few dozen). */
const MAX_ANSWER_BYTES = 8 * 1024;
const MAX_DETAIL_CHARS = 200;
const GATEWAY_STATES = new Set(['ready', 'degraded', 'waiting']);

/** The URL as configured, without its query, its password and user name (if any) hidden. */
function shownUrl(url: string): string {
  if (!URL.canParse(url)) return redactUrlPassword(url);
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '' && parsed.search === '') return url;
  const shown = new URL(redactUrlPassword(url));
  if (shown.username !== '') shown.username = '***';
  shown.search = '';
  return shown.toString();
}

/** `{url}/readyz`, without the URL's credentials (fetch refuses them; /readyz needs none). */
function readyzUrl(url: string): string {
  const target = new URL(url);
  target.username = '';
  target.password = '';
  target.search = '';
  target.hash = '';
  return `${target.toString().replace(/\/+$/, '')}/readyz`;
}

function clip(text: string): string {
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text;
}

/** At most MAX_ANSWER_BYTES of a body, the rest left unread. */
async function boundedText(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
}

function whyUnreachable(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (cause && typeof cause.code === 'string') {
    return cause.code === 'ECONNREFUSED'
      ? 'connection refused (ECONNREFUSED)'
      : `could not connect (${cause.code})`;
  }
  return clip(error instanceof Error ? error.message : String(error));
}

/** One gateway's /readyz, read within `timeoutMs`. */
export async function probeGateway(url: string, timeoutMs = GATEWAY_PROBE_TIMEOUT_MS): Promise<GatewayProbe> {
  const shown = shownUrl(url);
  if (!URL.canParse(url)) return { url: shown, status: 'failing', http_status: null, detail: 'not a URL' };
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(readyzUrl(url), {
      redirect: 'manual',
      signal,
      headers: { accept: 'application/json' },
    });
    text = await boundedText(response);
  } catch (error) {
    return { url: shown, status: 'unreachable', http_status: null, detail: whyUnreachable(error, timeoutMs) };
  }
  const httpStatus = response.status;
  if (httpStatus >= 300 && httpStatus < 400) {
    return {
      url: shown,
      status: 'failing',
      http_status: httpStatus,
      detail: `answered a redirect (HTTP ${httpStatus}), not followed`,
    };
  }
  let body: { status?: unknown; control_plane?: unknown } | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object') body = parsed as typeof body;
  } catch {
    body = undefined;
  }
  const said = typeof body?.status === 'string' ? body.status : undefined;
  const message = typeof body?.control_plane === 'string' ? clip(body.control_plane) : undefined;
  if (said !== undefined && GATEWAY_STATES.has(said)) {
    return {
      url: shown,
      status: said as GatewayProbe['status'],
      http_status: httpStatus,
      detail: message ?? `/readyz answered HTTP ${httpStatus}`,
    };
  }
  return {
    url: shown,
    status: 'failing',
    http_status: httpStatus,
    detail:
      said !== undefined
        ? clip(`/readyz answered HTTP ${httpStatus}: ${said}`)
        : `/readyz answered HTTP ${httpStatus}, not as a gateway does`,
  };
}

/** Every gateway probed at once; answers in GATEWAY_URLS' order. */
export function probeGateways(
  urls: readonly string[],
  timeoutMs = GATEWAY_PROBE_TIMEOUT_MS,
): Promise<GatewayProbe[]> {
  return Promise.all(urls.map((url) => probeGateway(url, timeoutMs)));
}

/** How long one round of probes answers every request (so a busy overview costs one round). */
export const GATEWAY_PROBE_REUSE_MS = 5_000;

/**
 * Probes the gateways at most once per GATEWAY_PROBE_REUSE_MS: requests meanwhile share the round
 * in flight or just done.
 */
export function sharedProbes(urls: readonly string[], timeoutMs: number, now: () => number = Date.now) {
  let last: { at: number; probes: Promise<GatewayProbe[]> } | undefined;
  return (): Promise<GatewayProbe[]> => {
    if (!last || now() - last.at >= GATEWAY_PROBE_REUSE_MS) {
      last = { at: now(), probes: probeGateways(urls, timeoutMs) };
    }
    return last.probes;
  };
}

/**
 * What a user who is not root sees of the probes: each gateway's state, not where it is nor what
 * it said (the addresses of an installation are its operator's business).
 */
export function withoutTopology(probes: GatewayProbe[]): GatewayProbe[] {
  return probes.map((probe, index) => ({
    url: `gateway ${index + 1}`,
    status: probe.status,
    http_status: probe.http_status,
    detail: probe.status,
  }));
}
