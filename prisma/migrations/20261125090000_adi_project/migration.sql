-- Tools without a table (HTTP tools, say) can belong to a project, so a progressive exposure lists
-- them under that project's app. Only such ADIs set it: an ADI with a table keeps belonging to its
-- table's project (nothing to backfill, and moving a table still moves its tools). Deleting the
-- project moves its ADIs to no project (the default app); they are not deleted.

-- AlterTable
ALTER TABLE "adi" ADD COLUMN     "project_id" TEXT;

-- CreateIndex
CREATE INDEX "adi_project_id_idx" ON "adi"("project_id");

-- AddForeignKey
ALTER TABLE "adi" ADD CONSTRAINT "adi_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE SET NULL ON UPDATE CASCADE;
