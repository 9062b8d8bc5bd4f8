/** Custom JavaScript tools: the sandbox that runs them and the shapes of its calls and outcomes. */
export {
  CustomToolSandbox,
  type CustomToolCall,
  type CustomToolSandboxOptions,
  type SourceCheck,
} from './custom-tool-sandbox.ts';
export { type ToolFetchRequest, type ToolFetchResponse, type ToolHost } from './host-bridge.ts';
export {
  DEFAULT_SANDBOX_LIMITS,
  MAX_SOURCE_BYTES,
  MAX_INPUT_REQUESTS,
  type ConsoleEntry,
  type InputOutcome,
  type SandboxLimits,
  type SandboxOutcome,
  type ToolInput,
} from './protocol.ts';
export { REDACTED } from './secret-redaction.ts';
