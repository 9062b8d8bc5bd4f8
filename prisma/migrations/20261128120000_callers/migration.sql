-- Callers and personal MCP keys: a user's default profile (an AEI), the map from caller names to
-- profiles, personal MCP keys (stored as SHA-256 + display prefix), and the caller and source of
-- each audited call (with an index for the audit list's caller filter).

-- AlterTable
ALTER TABLE "user" ADD COLUMN     "default_aei_id" TEXT;

-- AlterTable
ALTER TABLE "audit_event" ADD COLUMN     "caller" TEXT,
ADD COLUMN     "source_hint" TEXT,
ADD COLUMN     "source_used" TEXT;

-- CreateTable
CREATE TABLE "mcp_key" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "mcp_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "caller_profile" (
    "user_id" TEXT NOT NULL,
    "caller" TEXT NOT NULL,
    "aei_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "caller_profile_pkey" PRIMARY KEY ("user_id","caller")
);

-- CreateIndex
CREATE UNIQUE INDEX "mcp_key_key_hash_key" ON "mcp_key"("key_hash");

-- CreateIndex
CREATE INDEX "mcp_key_user_id_idx" ON "mcp_key"("user_id");

-- CreateIndex
CREATE INDEX "caller_profile_aei_id_idx" ON "caller_profile"("aei_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_default_aei_id_key" ON "user"("default_aei_id");

-- CreateIndex
CREATE INDEX "audit_event_user_id_caller_id_idx" ON "audit_event"("user_id", "caller", "id");

-- AddForeignKey
ALTER TABLE "user" ADD CONSTRAINT "user_default_aei_id_fkey" FOREIGN KEY ("default_aei_id") REFERENCES "aei"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "mcp_key" ADD CONSTRAINT "mcp_key_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "caller_profile" ADD CONSTRAINT "caller_profile_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "caller_profile" ADD CONSTRAINT "caller_profile_aei_id_fkey" FOREIGN KEY ("aei_id") REFERENCES "aei"("id") ON DELETE CASCADE ON UPDATE CASCADE;

