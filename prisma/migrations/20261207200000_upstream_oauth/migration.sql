-- Upstream servers that require OAuth: each person's connection, the clients Bindery registered,
-- and the "Connect" flows under way (decision 079).
-- CreateTable
CREATE TABLE "upstream_oauth_connection" (
    "upstream_server_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "sealed" BYTEA NOT NULL,
    "secret_key_id" TEXT NOT NULL,
    "scope" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "obtained_at" TIMESTAMPTZ(3) NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'connected',
    "required_scope" TEXT,
    "discovery" JSONB,
    "refreshing_until" TIMESTAMPTZ(3),
    "connected_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upstream_oauth_connection_pkey" PRIMARY KEY ("upstream_server_id","user_id")
);

-- CreateTable
CREATE TABLE "upstream_oauth_client" (
    "upstream_server_id" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "sealed" BYTEA NOT NULL,
    "secret_key_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upstream_oauth_client_pkey" PRIMARY KEY ("upstream_server_id","issuer")
);

-- CreateTable
CREATE TABLE "upstream_oauth_flow" (
    "state_hash" TEXT NOT NULL,
    "upstream_server_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "binding_hash" TEXT NOT NULL,
    "sealed" BYTEA NOT NULL,
    "secret_key_id" TEXT NOT NULL,
    "discovery" JSONB,
    "scope" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upstream_oauth_flow_pkey" PRIMARY KEY ("state_hash")
);

-- CreateIndex
CREATE INDEX "upstream_oauth_flow_expires_at_idx" ON "upstream_oauth_flow"("expires_at");

-- AddForeignKey
ALTER TABLE "upstream_oauth_connection" ADD CONSTRAINT "upstream_oauth_connection_upstream_server_id_fkey" FOREIGN KEY ("upstream_server_id") REFERENCES "upstream_server"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "upstream_oauth_client" ADD CONSTRAINT "upstream_oauth_client_upstream_server_id_fkey" FOREIGN KEY ("upstream_server_id") REFERENCES "upstream_server"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "upstream_oauth_flow" ADD CONSTRAINT "upstream_oauth_flow_upstream_server_id_fkey" FOREIGN KEY ("upstream_server_id") REFERENCES "upstream_server"("id") ON DELETE CASCADE ON UPDATE CASCADE;
