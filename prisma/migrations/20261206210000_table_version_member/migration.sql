-- Control planes sharing a PostgreSQL database without Redis hold table-version leases here
-- (context/table-version-notify.ts): a writer waits, after its commit, for the members whose lease
-- may still run to confirm the version it announced with NOTIFY.
CREATE TABLE "table_version_member" (
    "member" TEXT NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "table_version_member_pkey" PRIMARY KEY ("member")
);

-- A committed change of a table's version (or its deletion) that its writer did not announce
-- itself (an older control plane during an upgrade, a cascade) is announced at commit on the
-- channel the members listen on, while some control plane holds a lease (otherwise nobody
-- listens). A control plane's own writes announce themselves (naming the writer that waits for
-- confirmations) and set `bindery.announced`, which keeps this quiet.
CREATE FUNCTION "bindery_announce_table_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('bindery.announced', true), '') = ''
     AND EXISTS (SELECT 1 FROM "table_version_member" WHERE "lease_until" > now() - interval '1 minute') THEN
    PERFORM pg_notify('bindery_table_versions', json_build_object(
      't', CASE WHEN TG_OP = 'DELETE' THEN OLD."id" ELSE NEW."id" END,
      'v', CASE WHEN TG_OP = 'DELETE' THEN 2147483648 ELSE NEW."version" END)::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER "table_version_changed" AFTER UPDATE OF "version" ON "table"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD."version" IS DISTINCT FROM NEW."version")
  EXECUTE FUNCTION "bindery_announce_table_version"();

CREATE CONSTRAINT TRIGGER "table_deleted" AFTER DELETE ON "table"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "bindery_announce_table_version"();
