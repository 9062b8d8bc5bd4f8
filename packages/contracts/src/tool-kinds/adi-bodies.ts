/**
 * The bodies of `POST /api/v2/adis` and `PATCH /api/v2/adis/{id}`, composed from each kind's own
 * fields. A create body is dispatched on `kind` (absent: `context`, so today's bodies keep
 * working), and only the body of that kind is checked, so a wrong field is reported against it.
 * Adding a kind: its fields in `tool-kinds/<kind>.ts`, its body in `ADI_CREATE_BODIES`, its PATCH
 * fields in `UpdateAdiBody`.
 */
import { Type, type Static, type TObject, type TSchema, type TUnsafe } from 'typebox';
import { TOOL_NAME_PATTERN } from '../naming.ts';
import { ContextAdiFields, ContextAdiPatchFields } from './context.ts';
import { CustomAdiFields, CustomAdiPatchFields } from './custom.ts';
import { HttpAdiFields, HttpAdiPatchFields } from './http.ts';
import { AdiKindSchema, DEFAULT_ADI_KIND, type AdiKind } from './kinds.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** What every kind's create body may carry. */
const CommonCreateFields = {
  name: Type.Optional(
    Type.String({
      pattern: TOOL_NAME_PATTERN,
      description:
        'the tool name bindings inherit; default {op}_{short_hash} for context, {kind}_{short_hash} otherwise',
    }),
  ),
  description: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
  category: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
};

/** What every kind's PATCH may change. */
const CommonPatchFields = {
  name: Type.Optional(Type.String({ pattern: TOOL_NAME_PATTERN })),
  description: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
  category: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
};

/** The PATCH fields every kind accepts; the others belong to one kind (or several). */
export const COMMON_ADI_PATCH_FIELDS: readonly string[] = Object.keys(CommonPatchFields);

export const CreateContextAdiBody = Type.Object(
  { ...ContextAdiFields, ...CommonCreateFields },
  { additionalProperties: false, title: 'context ADI' },
);
export type CreateContextAdiBody = Static<typeof CreateContextAdiBody>;

export const CreateCustomAdiBody = Type.Object(
  { ...CustomAdiFields, ...CommonCreateFields },
  { additionalProperties: false, title: 'custom ADI' },
);
export type CreateCustomAdiBody = Static<typeof CreateCustomAdiBody>;
export const CreateHttpAdiBody = Type.Object(
  { ...HttpAdiFields, ...CommonCreateFields },
  { additionalProperties: false, title: 'http ADI' },
);
export type CreateHttpAdiBody = Static<typeof CreateHttpAdiBody>;

/** The create body of each kind this contract describes. */
export const ADI_CREATE_BODIES = {
  context: CreateContextAdiBody,
  custom: CreateCustomAdiBody,
  http: CreateHttpAdiBody,
} as const satisfies Partial<Record<AdiKind, TObject>>;

/** A create body of any kind (`kind` absent means context). */
export type CreateAdiBody = Static<(typeof ADI_CREATE_BODIES)[keyof typeof ADI_CREATE_BODIES]>;

/**
 * The create body schema offering exactly `bodies` (a control plane passes the kinds it has
 * registered). `kind` must be one of ADI_KINDS and defaults to context; a kind that is not offered
 * fails on the discriminator (the error handler says it is not available), a field of the chosen
 * kind's body fails against that body alone.
 */
export function createAdiBodySchema(bodies: readonly TObject[]): TUnsafe<CreateAdiBody> {
  return Type.Unsafe<CreateAdiBody>({
    type: 'object',
    required: ['kind'],
    properties: { kind: { ...AdiKindSchema, default: DEFAULT_ADI_KIND } },
    discriminator: { propertyName: 'kind' },
    oneOf: bodies,
  });
}

export const CreateAdiBody = createAdiBodySchema(Object.values(ADI_CREATE_BODIES));

export const UpdateAdiBody = Type.Object(
  { ...CommonPatchFields, ...ContextAdiPatchFields, ...CustomAdiPatchFields, ...HttpAdiPatchFields },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateAdiBody = Static<typeof UpdateAdiBody>;
