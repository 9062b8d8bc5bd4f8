-- Upstream MCP servers (tool sources): each server's spec and status, the ADIs synced from it
-- (`adi.upstream_server_id`, set null when the server is deleted so its bindings answer a clear
-- error), and whole servers attached to AEIs (`aei_attachment`; the bindings they bring carry its id).

-- AlterTable
ALTER TABLE "adi" ADD COLUMN     "upstream_server_id" TEXT;

-- AlterTable
ALTER TABLE "aei_binding" ADD COLUMN     "attachment_id" TEXT;

-- CreateTable
CREATE TABLE "upstream_server" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "transport" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "expose_tools" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "session_mode" TEXT NOT NULL DEFAULT 'shared',
    "limits" JSONB NOT NULL DEFAULT '{}',
    "fingerprint" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'starting',
    "last_error" TEXT,
    "last_sync_at" TIMESTAMPTZ(3),
    "warnings" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upstream_server_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "aei_attachment" (
    "id" TEXT NOT NULL,
    "aei_id" TEXT NOT NULL,
    "upstream_server_id" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aei_attachment_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "upstream_server_fingerprint_idx" ON "upstream_server"("fingerprint");

-- CreateIndex
CREATE UNIQUE INDEX "upstream_server_user_id_slug_key" ON "upstream_server"("user_id", "slug");

-- CreateIndex
CREATE INDEX "aei_attachment_upstream_server_id_idx" ON "aei_attachment"("upstream_server_id");

-- CreateIndex
CREATE UNIQUE INDEX "aei_attachment_aei_id_upstream_server_id_key" ON "aei_attachment"("aei_id", "upstream_server_id");

-- CreateIndex
CREATE INDEX "adi_upstream_server_id_idx" ON "adi"("upstream_server_id");

-- AddForeignKey
ALTER TABLE "adi" ADD CONSTRAINT "adi_upstream_server_id_fkey" FOREIGN KEY ("upstream_server_id") REFERENCES "upstream_server"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei_binding" ADD CONSTRAINT "aei_binding_attachment_id_fkey" FOREIGN KEY ("attachment_id") REFERENCES "aei_attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "upstream_server" ADD CONSTRAINT "upstream_server_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei_attachment" ADD CONSTRAINT "aei_attachment_aei_id_fkey" FOREIGN KEY ("aei_id") REFERENCES "aei"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei_attachment" ADD CONSTRAINT "aei_attachment_upstream_server_id_fkey" FOREIGN KEY ("upstream_server_id") REFERENCES "upstream_server"("id") ON DELETE CASCADE ON UPDATE CASCADE;

