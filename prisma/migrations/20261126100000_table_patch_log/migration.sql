-- Writes store what they changed instead of rewriting the whole document: a table's data is its
-- snapshot (the whole document as of the snapshot's version) with the patches after that version
-- applied in order. The snapshot has its own row, so folding patches into it in the background
-- never holds the table row that writers lock; `bytes` is the length of its JSON text (what a fold
-- rewrites). Existing data becomes each table's snapshot at its current version, with no patches.

-- CreateTable
CREATE TABLE "table_snapshot" (
    "table_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "data" JSONB NOT NULL,
    "bytes" INTEGER NOT NULL,

    CONSTRAINT "table_snapshot_pkey" PRIMARY KEY ("table_id")
);

-- CreateTable
CREATE TABLE "table_patch" (
    "table_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "changes" JSON NOT NULL,

    CONSTRAINT "table_patch_pkey" PRIMARY KEY ("table_id","version")
);

-- Existing data
INSERT INTO "table_snapshot" ("table_id", "version", "data", "bytes")
SELECT "id", "version", "data", octet_length("data"::text) FROM "table";

-- AlterTable
ALTER TABLE "table" DROP COLUMN "data";

-- AddForeignKey
ALTER TABLE "table_snapshot" ADD CONSTRAINT "table_snapshot_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "table"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table_patch" ADD CONSTRAINT "table_patch_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "table"("id") ON DELETE CASCADE ON UPDATE CASCADE;
