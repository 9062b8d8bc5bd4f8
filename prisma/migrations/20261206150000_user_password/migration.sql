-- A person signs in to the console with their name and a password (hashed with scrypt).
ALTER TABLE "user" ADD COLUMN "password_hash" TEXT;
ALTER TABLE "user" ADD COLUMN "password_changed_at" TIMESTAMPTZ(3);
-- A name signs in one person: among users with a password, names are unique (whatever their case,
-- and spaces around them), as sign-in matches them.
CREATE UNIQUE INDEX "user_sign_in_name_key" ON "user" (lower(btrim("name"))) WHERE "password_hash" IS NOT NULL;
