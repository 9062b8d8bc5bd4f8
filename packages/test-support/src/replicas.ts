/**
 * A scaled-out deployment on loopback: several control planes on one PostgreSQL database sharing
 * one Redis, behind one balancer that every gateway reaches them through (its CONTROL_PLANE_URL),
 * and several gateways hearing the control planes' changes over that Redis, behind a second
 * balancer that clients call. Control planes are told of no gateway (no GATEWAY_URLS): Redis is
 * how changes reach every gateway, as it must be when gateways come and go. Any replica can be
 * killed (SIGKILL, as in a crash) and started again; it comes back on a new port, put in the place
 * of its old one in its balancer, which meanwhile skips it because its port refuses connections.
 */
import { adminCall, type Json } from './admin.ts';
import { startBalancer, type Balancer } from './balancer.ts';
import { freshDatabase, type TestDatabase } from './database.ts';
import type { ServiceProcess } from './service-process.ts';
import { ADMIN_TOKEN, startControlPlane, startGateway } from './services.ts';
import { waitForReadiness } from './stack.ts';

export interface ReplicasOptions {
  /** How many control planes (2 by default). */
  controlPlanes?: number;
  /** How many gateways (2 by default). */
  gateways?: number;
  /** The Redis they share: REDIS_URL, or the local one. */
  redisUrl?: string;
  /** The control planes' settings over the deployment's. */
  controlPlaneEnv?: Record<string, string>;
  /** The gateways' settings over the deployment's. */
  gatewayEnv?: Record<string, string>;
  /**
   * The services' entry: their build (`dist/server.js`, what production runs, and what starts
   * again fastest after a kill) by default.
   */
  entry?: string;
  /** A word in the database's name (see `freshDatabase`). */
  purpose?: string;
}

export interface Replicas {
  database: TestDatabase;
  /** The control planes running now, by index (a restarted one is its new process). */
  controlPlanes: ServiceProcess[];
  /** The gateways running now, by index. */
  gateways: ServiceProcess[];
  /** What the gateways reach the control planes through. */
  controlPlaneBalancer: Balancer;
  /** What clients reach the gateways through. */
  gatewayBalancer: Balancer;
  /** Calls the admin API of control plane `index` (0 by default) as root; throws on >= 400. */
  admin(method: string, path: string, body?: unknown, index?: number): Promise<Json>;
  /** SIGKILL to control plane `index`; resolves once it is gone (its port then refuses). */
  killControlPlane(index: number): Promise<void>;
  /** Starts control plane `index` again and puts it in its balancer; resolves once it listens. */
  restartControlPlane(index: number): Promise<void>;
  /** SIGKILL to gateway `index`; resolves once it is gone. */
  killGateway(index: number): Promise<void>;
  /** Starts gateway `index` again, ready (its /readyz says `ready`), and puts it in its balancer. */
  restartGateway(index: number): Promise<void>;
  /** Kills every process, closes the balancers and drops the database. */
  close(): Promise<void>;
}

/** Starts the deployment; every gateway's /readyz says `ready` before this resolves. */
export async function startReplicas(options: ReplicasOptions = {}): Promise<Replicas> {
  const entry = options.entry ?? 'dist/server.js';
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const database = await freshDatabase({ purpose: options.purpose ?? 'replicas' });
  const controlPlaneEnv = { ...database.env, REDIS_URL: redisUrl, ...options.controlPlaneEnv };
  const controlPlanes: ServiceProcess[] = [];
  const gateways: ServiceProcess[] = [];
  const balancers: Balancer[] = [];
  const close = async () => {
    await Promise.all([...controlPlanes, ...gateways].map((p) => p.kill()));
    await Promise.all(balancers.map((b) => b.close()));
    await database.drop();
  };

  try {
    const startOne = () => startControlPlane(controlPlaneEnv, { entry });
    // The first migrates the database; the others find it migrated, and start while the gateways
    // do (which reach the first meanwhile).
    controlPlanes.push(await startOne());
    const controlPlaneBalancer = await startBalancer(controlPlanes.map((p) => p.port));
    balancers.push(controlPlaneBalancer);
    const gatewayEnv = {
      REDIS_URL: redisUrl,
      // Load from one client address is not what the per-key limit is for.
      RATE_LIMIT_PER_SECOND: '0',
      ...options.gatewayEnv,
    };
    const startGatewayOne = async () => {
      const gateway = await startGateway(controlPlaneBalancer.url, gatewayEnv, { entry });
      try {
        await waitForReadiness(gateway.url, 'ready');
      } catch (error) {
        await gateway.kill();
        throw error;
      }
      return gateway;
    };
    const more = Array.from({ length: (options.controlPlanes ?? 2) - 1 }, async () => {
      const started = await startOne();
      controlPlanes.push(started);
      return started;
    });
    const ready = Array.from({ length: options.gateways ?? 2 }, async () => {
      const started = await startGatewayOne();
      gateways.push(started);
      return started;
    });
    // Every start settles before a failure is thrown, so `close` finds every process started.
    const outcomes = await Promise.allSettled([...more, ...ready]);
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    controlPlaneBalancer.setBackends(controlPlanes.map((p) => p.port));
    const gatewayBalancer = await startBalancer(gateways.map((p) => p.port));
    balancers.push(gatewayBalancer);

    return {
      database,
      controlPlanes,
      gateways,
      controlPlaneBalancer,
      gatewayBalancer,
      async admin(method, path, body, index = 0) {
        const url = controlPlanes[index]!.url;
        const res = await adminCall(url, ADMIN_TOKEN, method, path, body);
        if (res.status >= 400)
          throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body;
      },
      killControlPlane: (index) => controlPlanes[index]!.kill(),
      async restartControlPlane(index) {
        const old = controlPlanes[index]!;
        if (old.running()) throw new Error(`control plane ${index} is still running`);
        controlPlanes[index] = await startOne();
        controlPlaneBalancer.replace(old.port, controlPlanes[index].port);
      },
      killGateway: (index) => gateways[index]!.kill(),
      async restartGateway(index) {
        const old = gateways[index]!;
        if (old.running()) throw new Error(`gateway ${index} is still running`);
        gateways[index] = await startGatewayOne();
        gatewayBalancer.replace(old.port, gateways[index].port);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
