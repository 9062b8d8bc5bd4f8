/**
 * `POST /api/v2/adis/trial-runs`: runs a tool that is not saved yet, once, with arguments, the way
 * a call of it would run (same checks, same sandbox and limits), and answers what it did. Nothing
 * is stored and no tool call is audited; a context it names is read, never written. Only custom
 * tools have trial runs.
 */
import { Type, type Static } from 'typebox';
import { ERROR_CODES } from '../errors.ts';
import { CreateCustomAdiBody } from './adi-bodies.ts';

const { kind: _kind, ...customFields } = CreateCustomAdiBody.properties;

/** The config of a trial run: a custom ADI's create body (`kind` may be left out). */
export const TrialRunCustomConfig = Type.Object(
  { kind: Type.Optional(Type.Literal('custom')), ...customFields },
  { additionalProperties: false, title: 'custom ADI (unsaved)' },
);
export type TrialRunCustomConfig = Static<typeof TrialRunCustomConfig>;

export const TrialRunBody = Type.Object(
  {
    kind: Type.Literal('custom', { description: 'the kind of the tool tried (custom only)' }),
    config: TrialRunCustomConfig,
    arguments: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'the arguments of the call, checked against config.input_schema; default {}',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TrialRunBody = Static<typeof TrialRunBody>;

/** One line the tool wrote to its console (`truncated` marks where output was dropped). */
export const TrialRunConsoleLine = Type.Object({
  level: Type.Union([
    Type.Literal('log'),
    Type.Literal('info'),
    Type.Literal('warn'),
    Type.Literal('error'),
    Type.Literal('debug'),
    Type.Literal('truncated'),
  ]),
  message: Type.String(),
});
export type TrialRunConsoleLine = Static<typeof TrialRunConsoleLine>;

/**
 * How the run went: `ok` with the tool's `result`, or not with the tool error a call would have
 * answered (`error`: code, message, details); its console lines and how long it took either way.
 */
export const TrialRunResult = Type.Object({
  ok: Type.Boolean(),
  result: Type.Optional(Type.Unknown({ description: 'what the tool answered (ok only)' })),
  error: Type.Optional(
    Type.Object({
      code: Type.Enum(ERROR_CODES),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
  console: Type.Array(TrialRunConsoleLine),
  duration_ms: Type.Number({ description: 'wall time of the run, in milliseconds' }),
});
export type TrialRunResult = Static<typeof TrialRunResult>;
