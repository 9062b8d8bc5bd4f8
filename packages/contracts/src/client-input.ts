/**
 * What an MCP client can be asked for input (MCP elicitation, sampling, roots), as the gateway tells
 * the control plane with a call: the capabilities the client declared and, on a retry, its answers
 * and the state the previous round handed out (decision 068). Shared by the execute call and the
 * upstream-request route.
 */
import { Type, type Static } from 'typebox';

const JsonObject = Type.Record(Type.String(), Type.Unknown());

export const CLIENT_INPUT_CAPABILITIES = ['elicitation', 'sampling', 'roots'] as const;
export type ClientInputCapability = (typeof CLIENT_INPUT_CAPABILITIES)[number];
/** The MCP request each input capability lets a server make of its client. */
export const INPUT_REQUEST_METHODS: Record<ClientInputCapability, string> = {
  elicitation: 'elicitation/create',
  sampling: 'sampling/createMessage',
  roots: 'roots/list',
};
/** MCP's MissingRequiredClientCapabilityError (2026-07-28). */
export const MISSING_CLIENT_CAPABILITY_ERROR = -32021;
/** MCP's URLElicitationRequiredError (2025-11-25 and later): the client must open a URL first. */
export const URL_ELICITATION_REQUIRED_ERROR = -32042;
/**
 * What a client declared it can be asked, as the control plane is told: the input capabilities,
 * and URL-mode elicitation (`elicitation: {url: {}}`) apart, since only some clients take it.
 */
export type ClientInputCapabilities = Partial<Record<ClientInputCapability | 'elicitation_url', boolean>>;
/** Answers one retry carries at most, and the longest key of one. */
export const MAX_INPUT_RESPONSES = 64;
export const MAX_INPUT_KEY_CHARS = 128;
/** Largest `requestState` Bindery hands out or takes back, in characters. */
export const MAX_REQUEST_STATE_CHARS = 256 * 1024;
export const ClientInput = Type.Object(
  {
    capabilities: Type.Object(
      {
        elicitation: Type.Optional(Type.Boolean()),
        elicitation_url: Type.Optional(
          Type.Boolean({ description: 'the client declared URL-mode elicitation (elicitation.url)' }),
        ),
        sampling: Type.Optional(Type.Boolean()),
        roots: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false, description: 'the input capabilities the client declared' },
    ),
    responses: Type.Optional(
      Type.Record(Type.String({ maxLength: MAX_INPUT_KEY_CHARS }), JsonObject, {
        maxProperties: MAX_INPUT_RESPONSES,
        description:
          'the client’s answers to the previous round’s input requests, by key (MCP inputResponses)',
      }),
    ),
    state: Type.Optional(
      Type.String({
        maxLength: MAX_REQUEST_STATE_CHARS,
        description: 'the requestState the previous round answered, as the client sent it back',
      }),
    ),
    tasks: Type.Optional(
      Type.Object(
        { holder: Type.String({ minLength: 1, maxLength: 128 }) },
        {
          additionalProperties: false,
          description:
            'the client declared the tasks extension (io.modelcontextprotocol/tasks) on this request: an upstream tool may answer with a task, whose handle is bound to `holder` (a digest of the credential the request came with)',
        },
      ),
    ),
    cancel: Type.Optional(
      Type.Literal(true, {
        description:
          'the client gave the call up while it was being asked: end what waits for these answers (an upstream call held for them), run nothing',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'the client can answer input requests (MCP elicitation, sampling, roots): a tool that asks answers input_required instead of failing',
  },
);
export type ClientInput = Static<typeof ClientInput>;

/** One request a tool makes of its client (MCP InputRequest): `elicitation/create`, say. */
export interface InputRequest {
  method: string;
  params: Record<string, unknown>;
}

/** A round that asked the client: the requests by key and the signed state of the next round. */
export const InputRequired = Type.Object(
  {
    requests: Type.Record(
      Type.String(),
      Type.Object({ method: Type.String(), params: JsonObject }, { additionalProperties: false }),
    ),
    state: Type.String(),
  },
  { additionalProperties: false },
);
export type InputRequired = Static<typeof InputRequired>;
