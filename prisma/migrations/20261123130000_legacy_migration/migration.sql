-- AlterTable
ALTER TABLE "aei" ADD COLUMN     "legacy_instance_id" TEXT;

-- AlterTable
ALTER TABLE "mcp_instance" ADD COLUMN     "migrated_adi_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "migrated_at" TIMESTAMPTZ(3),
ALTER COLUMN "api_key_hash" DROP NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "aei_legacy_instance_id_key" ON "aei"("legacy_instance_id");

-- AddForeignKey
ALTER TABLE "aei" ADD CONSTRAINT "aei_legacy_instance_id_fkey" FOREIGN KEY ("legacy_instance_id") REFERENCES "mcp_instance"("id") ON DELETE SET NULL ON UPDATE CASCADE;

