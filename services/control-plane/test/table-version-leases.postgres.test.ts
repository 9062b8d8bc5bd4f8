// Pins the reader's side of table-version leases (context/table-version-leases.ts) against a real
// Redis: a member answers from the versions it knows only while its lease runs by its own clock,
// so one whose event loop was held past its lease does not, even before anything told it so; and
// another member's announcement is applied before the writer hears it confirmed, and confirmed
// without waiting for the lease to end.
import { afterEach, describe, expect, it } from 'vitest';
import { VersionLeases } from '../src/context/table-version-leases.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const LEASE_MS = 400;
const warnings: string[] = [];
const log = { warn: (_: object, message: string) => warnings.push(message), info: () => undefined };
const open: VersionLeases[] = [];

function member(scope: string, applied: [string, number][] = []): VersionLeases {
  const leases = new VersionLeases({
    url: REDIS_URL,
    scope: () => Promise.resolve(scope),
    leaseMs: LEASE_MS,
    log,
    onVersion: (table, version) => applied.push([table, version]),
    onLapse: () => undefined,
  });
  open.push(leases);
  return leases;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((leases) => leases.close()));
});

describe('table-version leases', () => {
  it('a member whose event loop was held past its lease no longer answers from memory', async () => {
    const scope = `test-${Math.random().toString(36).slice(2)}`;
    const leases = member(scope);
    await until(() => leases.valid);
    // Held (no renewal can run) for longer than the lease: invalid the moment it looks.
    const end = performance.now() + LEASE_MS + 50;
    while (performance.now() < end);
    expect(leases.valid).toBe(false);
    // Renewed once the loop turns again.
    await until(() => leases.valid);
  });

  it('an announcement is applied by every member before its writer goes on', async () => {
    const scope = `test-${Math.random().toString(36).slice(2)}`;
    const applied: [string, number][] = [];
    const writer = member(scope);
    const reader = member(scope, applied);
    await until(() => writer.valid && reader.valid);
    warnings.length = 0;
    for (let version = 1; version <= 20; version += 1) {
      await writer.announce('tbl_leases', version, `bindery:table-version:test-${scope}`, 60_000);
      expect(applied.at(-1)).toEqual(['tbl_leases', version]);
    }
    // Each was confirmed: none was
    // waited out until the reader's lease ended.
    expect(warnings).toEqual([]);
  });
});
