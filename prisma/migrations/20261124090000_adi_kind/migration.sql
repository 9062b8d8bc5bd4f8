-- Tool kinds: every ADI gets a kind. Existing rows become `context` ADIs through the column default
-- and keep their table, path, operation, name and config as they are, so their tools keep their
-- names and behaviour. The context columns become optional for kinds that have no context.

-- AlterTable
ALTER TABLE "adi" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'context',
ALTER COLUMN "table_id" DROP NOT NULL,
ALTER COLUMN "json_path" DROP NOT NULL,
ALTER COLUMN "operation_type" DROP NOT NULL;
