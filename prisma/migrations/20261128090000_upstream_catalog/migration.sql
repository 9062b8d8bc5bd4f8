-- AlterTable
ALTER TABLE "upstream_server" ADD COLUMN     "prompts" JSONB NOT NULL DEFAULT '[]',
ADD COLUMN     "resources" JSONB NOT NULL DEFAULT '[]';

