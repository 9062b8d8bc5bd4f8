-- AlterTable
ALTER TABLE "aei" ADD COLUMN     "catalog_search" BOOLEAN NOT NULL DEFAULT false;

