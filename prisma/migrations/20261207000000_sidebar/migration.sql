-- The sidebar (sidebar/): a table's rules, sidebar sessions and their proposals, and the details an
-- audit row of the sidebar records (proposal, who proposed and decided, verdicts, versions).
-- AlterTable
ALTER TABLE "table" ADD COLUMN     "rules" JSONB;

-- AlterTable
ALTER TABLE "audit_event" ADD COLUMN     "details" JSONB;

-- CreateTable
CREATE TABLE "sidebar_session" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'active',
    "table_id" TEXT,
    "pointer" TEXT NOT NULL DEFAULT '',
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sidebar_session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sidebar_proposal" (
    "id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "table_id" TEXT NOT NULL,
    "pointer" TEXT NOT NULL,
    "command" TEXT NOT NULL,
    "proposed_by" TEXT NOT NULL,
    "base_version" INTEGER NOT NULL,
    "changes" JSONB NOT NULL,
    "inverse" JSONB NOT NULL,
    "patch" JSONB NOT NULL,
    "view" JSONB NOT NULL,
    "verdicts" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "note" TEXT,
    "applied_version" INTEGER,
    "decided_by" TEXT,
    "replaced_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_at" TIMESTAMPTZ(3),

    CONSTRAINT "sidebar_proposal_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "sidebar_session_token_hash_key" ON "sidebar_session"("token_hash");

-- CreateIndex
CREATE INDEX "sidebar_session_user_id_idx" ON "sidebar_session"("user_id");

-- CreateIndex
CREATE INDEX "sidebar_proposal_session_id_created_at_idx" ON "sidebar_proposal"("session_id", "created_at");

-- AddForeignKey
ALTER TABLE "sidebar_session" ADD CONSTRAINT "sidebar_session_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sidebar_proposal" ADD CONSTRAINT "sidebar_proposal_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sidebar_session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

