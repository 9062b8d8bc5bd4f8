-- A person may sign in through an external OpenID Connect provider: the account there, and the
-- verified email it gave.
ALTER TABLE "user" ADD COLUMN "oidc_subject" TEXT;
ALTER TABLE "user" ADD COLUMN "email" TEXT;
CREATE UNIQUE INDEX "user_oidc_subject_key" ON "user"("oidc_subject");
CREATE UNIQUE INDEX "user_email_key" ON "user"("email");
