/**
 * Wire shapes of an AEI's prompt templates (`/api/v2/aeis/{id}/prompts`), served to MCP clients
 * as `prompts/list` and `prompts/get`. A message's text may hold `{{argument}}` placeholders, each
 * naming one of the prompt's arguments (checked at save); `prompts/get` fills them in.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const PROMPT_LIMITS = Object.freeze({
  /** Prompts of one AEI at most. */
  maxPrompts: 1000,
  maxArguments: 32,
  maxMessages: 50,
  maxMessageChars: 65_536,
  maxChoices: 100,
  maxChoiceChars: 256,
  maxDescriptionChars: 4096,
  /** Characters of all prompts of one AEI, as JSON, at most (they travel in its config). */
  maxTotalChars: 4 * 1024 * 1024,
  /** Characters of one argument's value in `prompts/get`. */
  maxArgumentValueChars: 65_536,
});

/** A prompt's name, as MCP clients see it: unique inside one AEI. */
export const PROMPT_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';
/** An argument's name, as a placeholder names it: `{{name}}`. */
export const PROMPT_ARGUMENT_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';

/**
 * `{{ name }}` in a message's text: the placeholder of argument `name` (spaces inside the braces
 * allowed, trimmed off). Any other `{{...}}` is refused at save, so a typo never reaches a client
 * unfilled. No two parts of the pattern can match the same characters, so a scan is linear in the
 * text whatever it holds.
 */
export const PLACEHOLDER_RE = /\{\{([^{}]*)\}\}/g;

export const PromptArgument = Type.Object(
  {
    name: Type.String({ pattern: PROMPT_ARGUMENT_PATTERN }),
    description: Type.Optional(Type.String({ maxLength: PROMPT_LIMITS.maxDescriptionChars })),
    required: Type.Optional(Type.Boolean({ description: 'default false' })),
    choices: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: PROMPT_LIMITS.maxChoiceChars }), {
        maxItems: PROMPT_LIMITS.maxChoices,
        description:
          'values `completion/complete` offers for this argument (any value is still accepted by `prompts/get`)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PromptArgument = Static<typeof PromptArgument>;

export const PromptMessage = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    text: Type.String({ minLength: 1, maxLength: PROMPT_LIMITS.maxMessageChars }),
  },
  { additionalProperties: false },
);
export type PromptMessage = Static<typeof PromptMessage>;

const PromptFields = {
  name: Type.String({ pattern: PROMPT_NAME_PATTERN }),
  title: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 256 }))),
  description: Type.Optional(Nullable(Type.String({ maxLength: PROMPT_LIMITS.maxDescriptionChars }))),
  arguments: Type.Array(PromptArgument, { maxItems: PROMPT_LIMITS.maxArguments }),
  messages: Type.Array(PromptMessage, { minItems: 1, maxItems: PROMPT_LIMITS.maxMessages }),
};

export const CreatePromptBody = Type.Object(
  { ...PromptFields, arguments: Type.Optional(PromptFields.arguments) },
  { additionalProperties: false },
);
export type CreatePromptBody = Static<typeof CreatePromptBody>;

export const UpdatePromptBody = Type.Object(
  {
    name: Type.Optional(PromptFields.name),
    title: PromptFields.title,
    description: PromptFields.description,
    arguments: Type.Optional(PromptFields.arguments),
    messages: Type.Optional(PromptFields.messages),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdatePromptBody = Static<typeof UpdatePromptBody>;

export const Prompt = Type.Object({
  id: Type.String(),
  aei_id: Type.String(),
  name: Type.String(),
  title: Nullable(Type.String()),
  description: Nullable(Type.String()),
  arguments: Type.Array(PromptArgument),
  messages: Type.Array(PromptMessage),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Prompt = Static<typeof Prompt>;

export const PromptParams = Type.Object({
  id: Type.String({ maxLength: 64 }),
  pid: Type.String({ maxLength: 64 }),
});
export type PromptParams = Static<typeof PromptParams>;

/** A prompt as config v2 carries it to gateways. */
export const ConfigPrompt = Type.Object({
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  arguments: Type.Array(PromptArgument),
  messages: Type.Array(PromptMessage),
});
export type ConfigPrompt = Static<typeof ConfigPrompt>;

/** The argument names `text`'s placeholders refer to, in order of first appearance. */
export function placeholdersOf(text: string): string[] {
  const names = new Set<string>();
  for (const match of text.matchAll(PLACEHOLDER_RE)) names.add((match[1] ?? '').trim());
  return [...names];
}
