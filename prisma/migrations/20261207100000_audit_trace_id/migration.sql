-- The OpenTelemetry trace id of the call an audit row records, when the services trace.
-- AlterTable
ALTER TABLE "audit_event" ADD COLUMN     "trace_id" TEXT;
