-- CreateTable
CREATE TABLE "aei_prompt" (
    "id" TEXT NOT NULL,
    "aei_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "title" TEXT,
    "description" TEXT,
    "arguments" JSONB NOT NULL,
    "messages" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aei_prompt_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "aei_prompt_aei_id_name_key" ON "aei_prompt"("aei_id", "name");

-- AddForeignKey
ALTER TABLE "aei_prompt" ADD CONSTRAINT "aei_prompt_aei_id_fkey" FOREIGN KEY ("aei_id") REFERENCES "aei"("id") ON DELETE CASCADE ON UPDATE CASCADE;

