/**
 * The input schema of an HTTP tool: the one its author wrote, or one derived from its parameters
 * (path parameters required, the declared type or string, an object for a whole JSON body).
 */
import type { HttpToolConfig, HttpToolParam } from '@bindery/contracts';
import { perConfig } from './per-config.ts';

export type JsonSchemaObject = Record<string, unknown>;

/** `{type: 'object', properties, required, additionalProperties: false}` from `params`. */
export function deriveInputSchema(params: readonly HttpToolParam[]): JsonSchemaObject {
  const properties: Record<string, JsonSchemaObject> = {};
  const required: string[] = [];
  for (const param of params) {
    const wholeBody = param.in === 'body' && param.key === undefined;
    properties[param.name] = {
      type: param.type ?? (wholeBody ? 'object' : 'string'),
      ...(param.description !== undefined && { description: param.description }),
    };
    if (param.in === 'path' || param.required === true) required.push(param.name);
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 && { required }),
    // An argument the tool does not map would be dropped silently; refusing it tells the caller.
    additionalProperties: false,
  };
}

/**
 * The schema a call's arguments are checked against: the author's, else the derived one (derived
 * once per frozen config, so the validator compiled for it is found by the object).
 */
export const httpToolInputSchema = perConfig(
  (config: HttpToolConfig): JsonSchemaObject => config.input_schema ?? deriveInputSchema(config.params ?? []),
);
