/**
 * Wire shapes of the legacy migration (`/api/v1/mcp/{id}/migrate`, `/api/v1/mcp/migrate`,
 * `/api/v1/mcp/{id}/rollback`): a v1 instance becomes one ADI per v1 tool, one AEI holding the
 * instance's api_key, and a binding per ADI. Answers never carry a key, only its display prefix.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { ERROR_CODES } from './errors.ts';
import { OperationTypeSchema } from './admin-api.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `?dry_run=true`: report what would be done, write nothing. */
export const DryRunQuery = Type.Object(
  {
    dry_run: Type.Optional(
      Type.Boolean({ default: false, description: 'report what would be done and change nothing' }),
    ),
  },
  { additionalProperties: false },
);
export type DryRunQuery = Static<typeof DryRunQuery>;

export const MigrateInstancesBody = Type.Object(
  {
    ids: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        minItems: 1,
        maxItems: 1000,
        description: 'the instances to migrate; without it, every instance of the caller',
      }),
    ),
  },
  { additionalProperties: false },
);
export type MigrateInstancesBody = Static<typeof MigrateInstancesBody>;

/** One v1 tool as an ADI + binding of the new AEI (ids are null in a dry run). */
export const MigratedTool = Type.Object({
  tool_name: Type.String(),
  operation_type: OperationTypeSchema,
  description: Nullable(Type.String({ description: 'the v1 description; null keeps the default one' })),
  config: Type.Record(Type.String(), Type.Unknown(), { description: 'the ADI config (preview_keys)' }),
  adi_id: Nullable(Type.String()),
  binding_id: Nullable(Type.String()),
});
export type MigratedTool = Static<typeof MigratedTool>;

/**
 * - `migrated`: done now; `would_migrate`: what a real run would create (dry run);
 * - `already_migrated`: nothing to do (a second run); `failed`: nothing was written for it.
 */
export const MigrationOutcome = Type.Union([
  Type.Literal('migrated'),
  Type.Literal('would_migrate'),
  Type.Literal('already_migrated'),
  Type.Literal('failed'),
]);
export type MigrationOutcome = Static<typeof MigrationOutcome>;

export const InstanceMigration = Type.Object({
  instance_id: Type.String(),
  outcome: MigrationOutcome,
  aei_id: Nullable(Type.String({ description: 'the AEI that holds the key now (null: none yet)' })),
  aei_name: Nullable(Type.String()),
  api_key_prefix: Nullable(Type.String({ description: 'display prefix of the key that moved' })),
  tools: Type.Array(MigratedTool),
  error: Type.Optional(
    Type.Object({
      code: Type.Enum(ERROR_CODES),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
});
export type InstanceMigration = Static<typeof InstanceMigration>;

export const MigrationReport = Type.Object({
  dry_run: Type.Boolean(),
  migrated: Type.Integer(),
  would_migrate: Type.Integer(),
  already_migrated: Type.Integer(),
  failed: Type.Integer(),
  items: Type.Array(InstanceMigration),
});
export type MigrationReport = Static<typeof MigrationReport>;

/**
 * - `rolled_back`: the AEI is gone, the key is the instance's again; `would_roll_back`: dry run;
 * - `not_migrated`: nothing to do.
 */
export const InstanceRollback = Type.Object({
  instance_id: Type.String(),
  outcome: Type.Union([
    Type.Literal('rolled_back'),
    Type.Literal('would_roll_back'),
    Type.Literal('not_migrated'),
  ]),
  aei_id: Nullable(Type.String({ description: 'the AEI deleted (or to be deleted)' })),
  deleted_adi_ids: Type.Array(Type.String(), {
    description: 'ADIs the migration created and nothing else binds: deleted with the AEI',
  }),
  kept_adi_ids: Type.Array(Type.String(), {
    description: 'ADIs the migration created that other AEIs bind now: kept',
  }),
});
export type InstanceRollback = Static<typeof InstanceRollback>;
