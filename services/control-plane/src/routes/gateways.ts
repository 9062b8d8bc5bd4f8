/**
 * `GET /api/v2/gateways`: the gateways this control plane tells about exposure changes
 * (GATEWAY_URLS), each probed at `/readyz` now (exposure/gateways.ts), the public gateway URL and
 * the caller's demo exposure. Any admin may call it; only root sees where the gateways are.
 */
import { GatewayList } from '@bindery/contracts';
import { GATEWAY_PROBE_TIMEOUT_MS, sharedProbes, withoutTopology } from '../exposure/gateways.ts';
import { demoOf } from '../demo.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export interface GatewayRouteOptions {
  /** GATEWAY_URLS: the gateways' base URLs as this control plane reaches them. */
  gatewayUrls: readonly string[];
  /** Where MCP clients reach a gateway (GATEWAY_PUBLIC_URL). */
  gatewayPublicUrl: string;
  /** How long each probe may take (2 s). */
  probeTimeoutMs?: number;
}

export function gatewayRoutes(options: GatewayRouteOptions) {
  const timeoutMs = options.probeTimeoutMs ?? GATEWAY_PROBE_TIMEOUT_MS;
  const probeAll = sharedProbes(options.gatewayUrls, timeoutMs);
  return async (app: AdminApp): Promise<void> => {
    app.get(
      '/gateways',
      {
        schema: {
          tags: ['gateways'],
          summary: 'The configured gateways, each probed at /readyz now',
          description:
            `Each of GATEWAY_URLS probed at \`{url}/readyz\` by the control plane, all at once, each within ${timeoutMs / 1000} s, ` +
            'redirects not followed, one round shared by the requests of 5 s; empty when none is configured. ' +
            'Only the root user sees the URLs and what each gateway said; other users see each one’s state. With the public gateway URL ' +
            '(GATEWAY_PUBLIC_URL) and, for the root user, the demo exposure seeded on the first start.',
          security: adminSecurity,
          response: { 200: GatewayList, ...errorResponses() },
        },
      },
      async (request) => {
        const [probes, demo] = await Promise.all([
          probeAll(),
          demoOf(app.domain.prisma, request.principal, options.gatewayPublicUrl),
        ]);
        const gateways = request.principal.isRoot ? probes : withoutTopology(probes);
        return { public_url: options.gatewayPublicUrl, gateways, demo };
      },
    );
  };
}
