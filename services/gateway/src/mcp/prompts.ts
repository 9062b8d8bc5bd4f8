/**
 * The AEI's prompt templates as MCP serves them, from the cached config alone: `prompts/list`
 * (paged like every list, `pagination.ts`), `prompts/get` (placeholders filled in with the
 * client's arguments) and `completion/complete` for arguments that declare choices.
 *
 * What a client sends is bounded: each argument's value by PROMPT_LIMITS, the filled-in prompt by
 * MAX_FILLED_CHARS (a placeholder used many times with a long value could otherwise make a huge
 * string), checked while filling in, before the string is built.
 */
import {
  PLACEHOLDER_RE,
  PROMPT_LIMITS,
  type ConfigPrompt,
  type ConfigUpstreamPrompt,
} from '@bindery/contracts';
import {
  ErrorCode,
  GetPromptResultSchema,
  type CompleteResult,
  type GetPromptResult,
  type ListPromptsResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { closeMatches } from './tools/suggestions.ts';
import { digestPerExposure, listPageOf } from './pagination.ts';
import { unstorableArguments } from './unstorable-arguments.ts';
import { askUpstream, presented, upstreamPromptsOf } from './upstream-catalog.ts';
import type { RequestInput } from './tools/client-input.ts';
import { WireError } from './wire-error.ts';

/** Characters of one filled-in prompt (all its messages) at most. */
export const MAX_FILLED_CHARS = 4 * 1024 * 1024;
/** Values one completion answers at most (the MCP limit). */
const MAX_COMPLETIONS = 100;

/** The prompts an exposure serves, by name (a legacy instance has none). */
export function promptsOf(exposure: Exposure): readonly ConfigPrompt[] {
  return exposure.kind === 'aei' ? (exposure.config.prompts ?? []) : [];
}

type Listed = ListPromptsResult['prompts'][number];
type Declared = Pick<ConfigPrompt, 'name' | 'title' | 'description'> & {
  arguments: readonly { name: string; description?: string | undefined; required?: boolean | undefined }[];
};

const listed = (p: Declared): Listed => ({
  name: p.name,
  ...(p.title !== undefined && { title: p.title }),
  ...(p.description !== undefined && { description: p.description }),
  arguments: p.arguments.map((a) => ({
    name: a.name,
    ...(a.description !== undefined && { description: a.description }),
    required: a.required === true,
  })),
});

const listings = new WeakMap<Exposure, readonly Listed[]>();

/**
 * What prompts/list shows of an exposure, in order: its own prompts (by name), then those of its
 * attached upstream servers (`{prefix}_{name}`, in attachment order), one entry per name.
 */
function listedPrompts(exposure: Exposure): readonly Listed[] {
  let found = listings.get(exposure);
  if (!found) {
    const own = promptsOf(exposure).map(listed);
    const seen = new Set(own.map((p) => p.name));
    // The control plane leaves clashes out already; a name is listed once whatever it sends.
    const upstream: Listed[] = [];
    for (const p of upstreamPromptsOf(exposure)) {
      if (seen.has(p.name)) continue;
      seen.add(p.name);
      // An upstream's prompt as the server listed it: `required` only where it said so.
      upstream.push({
        ...listed(p),
        arguments: p.arguments.map((a) => ({
          name: a.name,
          ...(a.description !== undefined && { description: a.description }),
          ...(a.required !== undefined && { required: a.required }),
        })),
        ...presented(p),
      });
    }
    found = [...own, ...upstream];
    listings.set(exposure, found);
  }
  return found;
}

/** A digest of the prompts an exposure serves. */
export const promptsDigest = digestPerExposure(listedPrompts);

/** The page of prompts/list that `cursor` names. */
export function listPrompts(
  exposure: Exposure,
  cursor: string | undefined,
  pageSize: number,
): ListPromptsResult {
  const page = listPageOf(exposure, listedPrompts(exposure), cursor, pageSize, (p) => p.name);
  return {
    prompts: page.items,
    ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }),
  };
}

/** The upstream server's prompt an exposure serves as `name` (none when one of its own has it). */
export function upstreamPrompt(exposure: Exposure, name: string): ConfigUpstreamPrompt | undefined {
  if (promptsOf(exposure).some((p) => p.name === name)) return undefined;
  return upstreamPromptsOf(exposure).find((p) => p.name === name);
}

function findPrompt(exposure: Exposure, name: string): ConfigPrompt {
  const prompts = promptsOf(exposure);
  const prompt = prompts.find((p) => p.name === name);
  if (prompt) return prompt;
  const close = closeMatches(
    name,
    listedPrompts(exposure).map((p) => p.name),
  );
  throw new WireError(
    ErrorCode.InvalidParams,
    `unknown prompt "${name.slice(0, 64)}"${close.length > 0 ? `; did you mean ${close.map((c) => `"${c}"`).join(', ')}?` : ''}`,
    { prompt: name.slice(0, 64), close_matches: close },
  );
}

/**
 * -32602 for arguments a prompt does not declare, required ones missing (all named), or a value
 * over the size limit: checked alike for the exposure's own prompts and, before anything is sent,
 * for an upstream server's.
 */
function checkArguments(prompt: Declared, args: Readonly<Record<string, string>>): void {
  const name = prompt.name;
  const declared = new Set(prompt.arguments.map((a) => a.name));
  const unknown = Object.keys(args).filter((key) => !declared.has(key));
  if (unknown.length > 0) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `prompt "${name}" has no argument ${unknown
        .slice(0, 5)
        .map((k) => `"${k.slice(0, 64)}"`)
        .join(', ')}; its arguments: ${[...declared].join(', ') || 'none'}`,
      { unknown_arguments: unknown.slice(0, 32).map((k) => k.slice(0, 64)) },
    );
  }
  const missing = prompt.arguments.filter((a) => a.required === true && !Object.hasOwn(args, a.name));
  if (missing.length > 0) {
    const names = missing.map((a) => a.name);
    throw new WireError(
      ErrorCode.InvalidParams,
      `prompt "${name}" needs the argument${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`,
      { missing_arguments: names },
    );
  }
  for (const [key, value] of Object.entries(args)) {
    if (value.length > PROMPT_LIMITS.maxArgumentValueChars) {
      throw new WireError(
        ErrorCode.InvalidParams,
        `argument "${key}" is ${value.length} characters, more than the ${PROMPT_LIMITS.maxArgumentValueChars} allowed`,
        { argument: key, limit: PROMPT_LIMITS.maxArgumentValueChars },
      );
    }
  }
}

/**
 * An upstream server's prompt, got through the control plane once its arguments are checked here
 * (as for the exposure's own prompts).
 */
export async function getUpstreamPrompt(
  exposure: Exposure & { kind: 'aei' },
  prompt: ConfigUpstreamPrompt,
  args: Readonly<Record<string, string>>,
  call: {
    client: ControlPlaneClient;
    requestId: string;
    sessionId: string | undefined;
    signal?: AbortSignal;
    /** What the client can be asked for input (a modern upstream's prompt may ask). */
    input?: RequestInput | undefined;
  },
): Promise<GetPromptResult> {
  checkArguments(prompt, args);
  // A value no control plane can store or send (a NUL, a broken character) is the caller's error.
  const unstorable = unstorableArguments(args);
  if (unstorable) {
    throw new WireError(ErrorCode.InvalidParams, unstorable.message, {
      code: unstorable.code,
      ...unstorable.details,
    });
  }
  return askUpstream(
    exposure,
    call.client,
    {
      upstream_server_id: prompt.upstream_server_id,
      request_id: call.requestId,
      ...(call.sessionId !== undefined && { session_id: call.sessionId }),
      get_prompt: { name: prompt.upstream_name, arguments: { ...args } },
    },
    { kind: 'prompt', name: prompt.name, schema: GetPromptResultSchema },
    call.signal,
    call.input,
  );
}

/**
 * `prompts/get`: the prompt's messages with its placeholders filled in. -32602 for an unknown
 * prompt, missing required arguments (all named), arguments it does not declare, a value over
 * the size limit, or a result over MAX_FILLED_CHARS.
 */
export function getPrompt(
  exposure: Exposure,
  name: string,
  args: Readonly<Record<string, string>> = {},
): GetPromptResult {
  const prompt = findPrompt(exposure, name);
  checkArguments(prompt, args);
  let budget = MAX_FILLED_CHARS;
  const over = () =>
    new WireError(
      ErrorCode.InvalidParams,
      `prompt "${name}" filled in with these arguments would be more than ${MAX_FILLED_CHARS} characters`,
      { limit: MAX_FILLED_CHARS },
    );
  const fill = (text: string): string => {
    budget -= text.length;
    if (budget < 0) throw over();
    const filled = text.replace(PLACEHOLDER_RE, (whole: string, inside: string) => {
      const key = inside.trim();
      const value = Object.hasOwn(args, key) ? (args[key] ?? '') : '';
      budget -= value.length - whole.length;
      if (budget < 0) throw over();
      return value;
    });
    return filled;
  };
  return {
    ...(prompt.description !== undefined && { description: prompt.description }),
    messages: prompt.messages.map((m) => ({ role: m.role, content: { type: 'text', text: fill(m.text) } })),
  };
}

/**
 * `completion/complete` for a prompt's argument: its declared choices that start with what the
 * client typed (case-insensitive), then those containing it; none for an argument without choices.
 */
export function completePromptArgument(
  exposure: Exposure,
  promptName: string,
  argument: { name: string; value: string },
): CompleteResult {
  // An upstream server's prompt declares no choices here: nothing to offer, a valid answer.
  if (upstreamPrompt(exposure, promptName)) return { completion: { values: [], total: 0, hasMore: false } };
  const prompt = findPrompt(exposure, promptName);
  const declared = prompt.arguments.find((a) => a.name === argument.name);
  if (!declared) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `prompt "${promptName}" has no argument "${argument.name.slice(0, 64)}"`,
      { argument: argument.name.slice(0, 64) },
    );
  }
  const typed = argument.value.toLowerCase();
  const choices = declared.choices ?? [];
  const starting = choices.filter((c) => c.toLowerCase().startsWith(typed));
  const containing = choices.filter((c) => !starting.includes(c) && c.toLowerCase().includes(typed));
  const values = [...starting, ...containing];
  return {
    completion: {
      values: values.slice(0, MAX_COMPLETIONS),
      total: values.length,
      hasMore: values.length > MAX_COMPLETIONS,
    },
  };
}
