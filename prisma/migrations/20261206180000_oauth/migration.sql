-- The built-in OAuth authorization server's store: the library's objects, and its signing keys.
CREATE TABLE "oauth_entry" (
    "model" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "grant_id" TEXT,
    "uid" TEXT,
    "account_id" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "consumed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oauth_entry_pkey" PRIMARY KEY ("model","id")
);
CREATE INDEX "oauth_entry_grant_id_idx" ON "oauth_entry"("grant_id");
CREATE INDEX "oauth_entry_uid_idx" ON "oauth_entry"("uid");
CREATE INDEX "oauth_entry_account_id_idx" ON "oauth_entry"("account_id");
CREATE INDEX "oauth_entry_expires_at_idx" ON "oauth_entry"("expires_at");

CREATE TABLE "oauth_signing_key" (
    "kid" TEXT NOT NULL,
    "public_jwk" JSONB NOT NULL,
    "ciphertext" BYTEA NOT NULL,
    "iv" BYTEA NOT NULL,
    "auth_tag" BYTEA NOT NULL,
    "secret_key_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "retired_at" TIMESTAMPTZ(3),

    CONSTRAINT "oauth_signing_key_pkey" PRIMARY KEY ("kid")
);
