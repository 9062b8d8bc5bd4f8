-- Control planes sharing a PostgreSQL database without Redis hold table-version leases here
-- (context/table-version-notify.ts): a writer waits, after its commit, for the members whose lease
-- may still run to confirm the version it announced with NOTIFY.
CREATE TABLE "table_version_member" (
    "member" TEXT NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "table_version_member_pkey" PRIMARY KEY ("member")
);
