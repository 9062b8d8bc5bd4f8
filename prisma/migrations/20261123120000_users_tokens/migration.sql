-- Users can be disabled; admin tokens get a name, an optional expiry and a revocation time.
-- All nullable: existing users stay enabled and existing tokens keep working, unnamed and
-- without expiry.

-- AlterTable
ALTER TABLE "user" ADD COLUMN     "disabled_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "admin_token" ADD COLUMN     "expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "name" TEXT,
ADD COLUMN     "revoked_at" TIMESTAMPTZ(3);
