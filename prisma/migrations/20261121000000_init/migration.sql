-- CreateTable
CREATE TABLE "user" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "is_root" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "admin_token" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "admin_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "project" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "description" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "table" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "project_id" TEXT,
    "name" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "table_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "adi" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "table_id" TEXT NOT NULL,
    "json_path" TEXT NOT NULL,
    "operation_type" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "category" TEXT,
    "config" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "adi_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "aei" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "type" TEXT NOT NULL DEFAULT 'mcp',
    "name" TEXT NOT NULL,
    "api_key_hash" TEXT NOT NULL,
    "api_key_prefix" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'enabled',
    "exposure_mode" TEXT NOT NULL DEFAULT 'direct',
    "config_version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aei_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "aei_binding" (
    "id" TEXT NOT NULL,
    "aei_id" TEXT NOT NULL,
    "adi_id" TEXT NOT NULL,
    "tool_name" TEXT NOT NULL,
    "tool_name_inherited" BOOLEAN NOT NULL DEFAULT true,
    "tool_description" TEXT,
    "input_schema" JSONB,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aei_binding_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "mcp_instance" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "table_id" TEXT NOT NULL,
    "json_path" TEXT NOT NULL,
    "api_key_hash" TEXT NOT NULL,
    "api_key_prefix" TEXT NOT NULL,
    "tools_definition" JSONB,
    "preview_keys" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "status" TEXT NOT NULL DEFAULT 'enabled',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mcp_instance_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_event" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "aei_id" TEXT,
    "binding_id" TEXT,
    "adi_id" TEXT,
    "tool_name" TEXT,
    "operation" TEXT,
    "status" TEXT NOT NULL,
    "error_code" TEXT,
    "duration_ms" INTEGER,
    "args_digest" TEXT,
    "request_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "admin_token_token_hash_key" ON "admin_token"("token_hash");

-- CreateIndex
CREATE INDEX "admin_token_user_id_idx" ON "admin_token"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "project_user_id_slug_key" ON "project"("user_id", "slug");

-- CreateIndex
CREATE INDEX "table_user_id_idx" ON "table"("user_id");

-- CreateIndex
CREATE INDEX "table_project_id_idx" ON "table"("project_id");

-- CreateIndex
CREATE INDEX "adi_user_id_idx" ON "adi"("user_id");

-- CreateIndex
CREATE INDEX "adi_table_id_idx" ON "adi"("table_id");

-- CreateIndex
CREATE UNIQUE INDEX "aei_api_key_hash_key" ON "aei"("api_key_hash");

-- CreateIndex
CREATE INDEX "aei_user_id_idx" ON "aei"("user_id");

-- CreateIndex
CREATE INDEX "aei_binding_adi_id_idx" ON "aei_binding"("adi_id");

-- CreateIndex
CREATE UNIQUE INDEX "aei_binding_aei_id_tool_name_key" ON "aei_binding"("aei_id", "tool_name");

-- CreateIndex
CREATE UNIQUE INDEX "aei_binding_aei_id_adi_id_key" ON "aei_binding"("aei_id", "adi_id");

-- CreateIndex
CREATE UNIQUE INDEX "mcp_instance_api_key_hash_key" ON "mcp_instance"("api_key_hash");

-- CreateIndex
CREATE INDEX "mcp_instance_user_id_idx" ON "mcp_instance"("user_id");

-- CreateIndex
CREATE INDEX "audit_event_user_id_id_idx" ON "audit_event"("user_id", "id");

-- AddForeignKey
ALTER TABLE "admin_token" ADD CONSTRAINT "admin_token_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "project" ADD CONSTRAINT "project_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table" ADD CONSTRAINT "table_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table" ADD CONSTRAINT "table_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "adi" ADD CONSTRAINT "adi_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "adi" ADD CONSTRAINT "adi_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "table"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei" ADD CONSTRAINT "aei_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei_binding" ADD CONSTRAINT "aei_binding_aei_id_fkey" FOREIGN KEY ("aei_id") REFERENCES "aei"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "aei_binding" ADD CONSTRAINT "aei_binding_adi_id_fkey" FOREIGN KEY ("adi_id") REFERENCES "adi"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "mcp_instance" ADD CONSTRAINT "mcp_instance_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "mcp_instance" ADD CONSTRAINT "mcp_instance_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "table"("id") ON DELETE CASCADE ON UPDATE CASCADE;

