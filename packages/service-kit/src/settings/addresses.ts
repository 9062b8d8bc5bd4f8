/**
 * The listening addresses both services know of each other, and the local URL derived from one:
 * each service derives the other's URL from them when it is not set, so `PORT=4800
 * GATEWAY_PORT=4900` is all it takes to move both.
 */
import { integer, string } from './schema.ts';

/**
 * `http://host:port` for reaching a listener from this machine: the host it binds when that is one
 * address, 127.0.0.1 when it binds every address (unset, `0.0.0.0`, `::`).
 */
export function localUrl(host: string | undefined, port: number): string {
  const reachable =
    host === undefined || host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

export const HOST = string({ default: '127.0.0.1', doc: 'the address the control plane listens on' });
export const PORT = integer({
  min: 0,
  max: 65535,
  default: 4000,
  doc: 'the port the control plane listens on',
});
export const GATEWAY_HOST = string({
  default: '127.0.0.1',
  doc: 'the address the gateway listens on (one address: `localhost` binds the first address it resolves to)',
});
export const GATEWAY_PORT = integer({
  min: 0,
  max: 65535,
  default: 4100,
  doc: 'the port the gateway listens on',
});
