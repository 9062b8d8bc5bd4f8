-- The size of each table's latest data (UTF-8 bytes of its compact JSON), kept by every write so
-- the table size cap (TABLE_MAX_BYTES) is checked without reading the whole table again. Existing
-- tables start unknown (NULL): the first write to each measures it once.

-- AlterTable
ALTER TABLE "table" ADD COLUMN     "bytes" INTEGER;
