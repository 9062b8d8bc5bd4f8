/**
 * Wire shapes of the `context` kind: an ADI running one of the ten prebuilt operations on the
 * context at `json_path` of a table.
 */
import { Type } from 'typebox';
import { OPERATION_TYPES } from '../operations.ts';

const JsonObject = Type.Record(Type.String(), Type.Unknown());

export const OperationTypeSchema = Type.Enum(OPERATION_TYPES, {
  description: 'One of the ten prebuilt operations',
});

/** The fields of a context ADI's create body besides the ones every kind has. */
export const ContextAdiFields = {
  kind: Type.Optional(Type.Literal('context', { description: 'the default: absent means context' })),
  table_id: Type.String({ minLength: 1, maxLength: 64 }),
  json_path: Type.String({
    maxLength: 2048,
    description: 'RFC 6901 JSON Pointer of the context; "" = whole table',
  }),
  operation_type: OperationTypeSchema,
  config: Type.Optional(JsonObject),
};

/** The fields a PATCH of a context ADI may change besides the ones every kind has. */
export const ContextAdiPatchFields = {
  json_path: Type.Optional(Type.String({ maxLength: 2048 })),
  config: Type.Optional(JsonObject),
};

/** What a gateway is told about a context ADI in config v2 (it only needs `adi_id`). */
export const ContextAdiRef = Type.Object({
  kind: Type.Literal('context'),
  adi_id: Type.String(),
  operation_type: OperationTypeSchema,
  table_id: Type.String(),
  json_path: Type.String(),
  adi_config: JsonObject,
});
