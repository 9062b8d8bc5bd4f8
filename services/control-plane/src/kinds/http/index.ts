/**
 * HTTP API tools (ADIs of kind `http`): what the kind registry needs to save one (validate its
 * config, its input schema, its annotations, the secrets it names) and to run one.
 */
export { httpToolAnnotations } from './annotations.ts';
export {
  DEFAULT_HTTP_CALL_LIMITS,
  callHttpTool,
  type HttpCallDeps,
  type HttpCallLimits,
  type HttpToolAnswer,
} from './call.ts';
export {
  httpToolSecretNames,
  validateHttpToolConfig,
  type CheckedHttpToolConfig,
} from './http-tool-config.ts';
export { deriveInputSchema, httpToolInputSchema } from './input-schema.ts';
