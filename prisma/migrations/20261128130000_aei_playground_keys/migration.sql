-- Playground keys: short-lived keys of an AEI for the admin console (stored as SHA-256 only),
-- deleted with their AEI.

-- CreateTable
CREATE TABLE "aei_playground_key" (
    "id" TEXT NOT NULL,
    "aei_id" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aei_playground_key_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "aei_playground_key_key_hash_key" ON "aei_playground_key"("key_hash");

-- CreateIndex
CREATE INDEX "aei_playground_key_aei_id_idx" ON "aei_playground_key"("aei_id");

-- AddForeignKey
ALTER TABLE "aei_playground_key" ADD CONSTRAINT "aei_playground_key_aei_id_fkey" FOREIGN KEY ("aei_id") REFERENCES "aei"("id") ON DELETE CASCADE ON UPDATE CASCADE;

