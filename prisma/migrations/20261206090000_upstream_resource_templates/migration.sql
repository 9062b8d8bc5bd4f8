-- AlterTable
ALTER TABLE "upstream_server" ADD COLUMN     "resource_templates" JSONB NOT NULL DEFAULT '[]';
