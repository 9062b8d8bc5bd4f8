/**
 * Where the authorization server library keeps what it stores (its adapter interface): one table,
 * `oauth_entry`, a row per object and model, on both engines, so every control plane sees the same
 * sessions, codes, grants, refresh tokens and dynamically registered clients. Expired rows are
 * never answered and are swept now and then.
 *
 * A grant that goes (revoked by its person, by RFC 7009 revocation of its refresh token, or when
 * the library finds a refresh token used twice) tells the gateways, through the invalidation
 * channels, to drop what they cached for its person's exposures: its access tokens stop at once.
 */
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { PrismaClient } from '../generated/prisma/client.ts';

/** A grant went: its person's exposures must be looked up afresh by every gateway. */
export type GrantGone = (accountId: string) => void | Promise<void>;

function expiry(expiresIn: number | undefined): Date | null {
  return expiresIn === undefined || !Number.isFinite(expiresIn)
    ? null
    : new Date(Date.now() + expiresIn * 1000);
}

function live(row: { expiresAt: Date | null }): boolean {
  return row.expiresAt === null || row.expiresAt.getTime() > Date.now();
}

/**
 * The adapter class for one Prisma client (the library makes one adapter per model name); `gone`
 * hears of each grant that goes.
 */
export function oauthStore(db: PrismaClient, gone: GrantGone): new (model: string) => Adapter {
  return class OAuthStore implements Adapter {
    readonly #model: string;

    constructor(model: string) {
      this.#model = model;
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const data = {
        payload: payload as object,
        grantId: typeof payload.grantId === 'string' ? payload.grantId : null,
        uid: typeof payload.uid === 'string' ? payload.uid : null,
        accountId:
          this.#model === 'Grant' && typeof payload.accountId === 'string' ? payload.accountId : null,
        expiresAt: expiry(expiresIn),
      };
      await db.oAuthEntry.upsert({
        where: { model_id: { model: this.#model, id } },
        create: { model: this.#model, id, ...data },
        update: data,
      });
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      const row = await db.oAuthEntry.findUnique({ where: { model_id: { model: this.#model, id } } });
      return row && live(row) ? answer(row) : undefined;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const row = await db.oAuthEntry.findFirst({ where: { model: this.#model, uid } });
      return row && live(row) ? answer(row) : undefined;
    }

    async findByUserCode(): Promise<AdapterPayload | undefined> {
      // The device flow is not enabled: no user codes are ever stored.
      return undefined;
    }

    async consume(id: string): Promise<void> {
      await db.oAuthEntry.updateMany({
        where: { model: this.#model, id, consumedAt: null },
        data: { consumedAt: new Date() },
      });
    }

    async destroy(id: string): Promise<void> {
      const rows = await db.oAuthEntry.findMany({
        where: { model: this.#model, id },
        select: { accountId: true },
      });
      await db.oAuthEntry.deleteMany({ where: { model: this.#model, id } });
      if (this.#model === 'Grant') {
        for (const row of rows) if (row.accountId) await gone(row.accountId);
      }
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.oAuthEntry.deleteMany({ where: { model: this.#model, grantId } });
    }
  };
}

function answer(row: { payload: unknown; consumedAt: Date | null }): AdapterPayload {
  const payload = row.payload as AdapterPayload;
  return row.consumedAt ? { ...payload, consumed: Math.floor(row.consumedAt.getTime() / 1000) } : payload;
}

/** Deletes every row that expired; answers how many went. */
export async function sweepExpired(db: PrismaClient): Promise<number> {
  const { count } = await db.oAuthEntry.deleteMany({ where: { expiresAt: { lt: new Date() } } });
  return count;
}
