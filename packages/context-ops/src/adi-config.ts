/**
 * The `config` an ADI carries for its operation (`preview_keys`, `id_field`, `item_schema`), checked
 * when the ADI is saved and again before every run.
 */
import type { OperationType } from '@bindery/contracts';
import { OpError } from './errors.ts';
import { isJsonObject, type JsonSchema } from './json.ts';
import { OPERATIONS } from './operations.ts';
import { PatternRefused } from './schema-pattern.ts';
import { compileUserSchema, describeSchemaError, schemaErrors } from './schema-validation.ts';
import { deepFreeze } from './freeze.ts';

/**
 * The config for `op`, normalised (null/undefined become `{}`); throws VALIDATION_FAILED naming the
 * bad field for unknown keys, wrong shapes, or an `item_schema` that is not a valid JSON Schema.
 */
export function validateAdiConfig(op: OperationType, config: unknown): Record<string, unknown> {
  // A frozen config cannot change (freeze.ts): checked once, its checked copy serves every call.
  if (typeof config !== 'object' || config === null || !Object.isFrozen(config))
    return checkConfig(op, config);
  const known = checkedConfigs.get(config);
  if (known?.op === op) return known.checked;
  const checked = deepFreeze(checkConfig(op, config));
  checkedConfigs.set(config, { op, checked });
  return checked;
}

/** Checked copies of frozen configs, by object. */
const checkedConfigs = new WeakMap<object, { op: OperationType; checked: Record<string, unknown> }>();

function checkConfig(op: OperationType, config: unknown): Record<string, unknown> {
  const definition = OPERATIONS[op];
  if (definition === undefined) {
    throw new OpError('VALIDATION_FAILED', `Unknown operation "${String(op)}"`, { field: 'operation_type' });
  }
  if (config === undefined || config === null) return {};
  if (!isJsonObject(config)) {
    throw new OpError('VALIDATION_FAILED', `The ${op} config must be an object`, { field: 'config' });
  }
  const errors = schemaErrors(definition.configSchema, config);
  const [error] = errors;
  if (error !== undefined) {
    const field =
      error.keyword === 'additionalProperties'
        ? String(error.params.additionalProperty)
        : (error.instancePath.split('/')[1] ?? 'config');
    const allowed = Object.keys((definition.configSchema.properties ?? {}) as JsonSchema);
    const message =
      error.keyword === 'additionalProperties'
        ? `Unknown config key "${field}" for ${op} (allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none'})`
        : `Invalid ${op} config: ${describeSchemaError(error, 'config')}`;
    throw new OpError('VALIDATION_FAILED', message, { field, errors });
  }
  const itemSchema = config.item_schema;
  if (isJsonObject(itemSchema)) {
    try {
      compileUserSchema(itemSchema);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      const refused = cause instanceof PatternRefused;
      throw new OpError(
        'VALIDATION_FAILED',
        `config.item_schema ${refused ? 'cannot be used' : 'is not a valid JSON Schema'}: ${reason}`,
        { field: 'item_schema', reason, ...(refused && { pattern: cause.pattern }) },
      );
    }
  }
  // A copy, so later edits of the caller's object cannot change what was validated.
  return structuredClone(config);
}
