-- A binding may narrow its tool's output schema, as it narrows the input schema.
ALTER TABLE "aei_binding" ADD COLUMN "output_schema" JSONB;
