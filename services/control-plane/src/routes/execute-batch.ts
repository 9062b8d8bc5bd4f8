/**
 * `POST /internal/execute-batch`: the calls a gateway received at about the same time, in one
 * HTTP exchange. Per call, an exchange costs the gateway and this server a request and an answer
 * to write and read, and a pass through the framework; at many calls at once that was a large
 * share of a call's CPU on both sides (docs/decisions/046-batched-executions.md).
 *
 * Each line of the body is one call, `<adi_id>\t<ExecuteRequest JSON>`, and is parsed, checked and
 * validated on its own, by the same parser and schema as the single route's body: a line that
 * route would refuse gets that refusal (status and error body) as its own answer, and the other
 * calls run. Answers are NDJSON lines `{"i", "status", "body"}`, written as calls end; those ending
 * in the same turn of the event loop (the calls of one audit commit, most often) leave in one
 * write. The batch's connection closing cancels its calls where their kind can pass that on, and
 * `POST /internal/execute-batch/cancel` cancels one of them: a batch the gateway named (its
 * `x-bindery-batch` header) keeps a cancellation of its own for each line while it runs. Every
 * answer names this process (`x-bindery-instance`), so a gateway can tell when its control-plane
 * address leads to several processes, where a cancel might reach another one than the call's.
 */
import {
  CONTROL_PLANE_INSTANCE_HEADER,
  ERROR_STATUS,
  EXECUTE_BATCH_ADI_ID_RE,
  EXECUTE_BATCH_ID_HEADER,
  EXECUTE_BATCH_ID_RE,
  ExecuteBatchCancel,
  EXECUTE_BATCH_MAX_CALLS,
  EXECUTE_BATCH_MEDIA_TYPE,
  ExecuteRequest,
  ToolResult,
  type ExecuteBatchAnswer,
} from '@bindery/contracts';
import type { FastifyError, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { executeBinding, type ExecutorOptions } from '../execution/executor.ts';
import { DomainError } from '../domain/errors.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { abortedOnClose, onCallerGone } from '../http/caller-gone.ts';
import { INTERNAL_ERROR, errorBody, mapError } from '../http/error-handler.ts';
import { jsonTextParser } from '../http/json-body.ts';
import { errorResponses } from '../http/schemas.ts';

const CALLER_GONE = 'the gateway closed the batch';
const CANCELLED = 'the gateway cancelled the call';

/** A line's call, or the answer refusing it. */
type Line = { adiId: string; body: ExecuteRequest } | { refused: ExecuteBatchAnswer['body']; status: number };

/** Cuts that named a batch before it arrived, kept this long (a cancel can overtake its batch). */
const EARLY_CUT_MS = 30_000;
/** Such cuts kept at most (the oldest go first). */
const EARLY_CUTS_MAX = 1_000;

export function executeBatchRoute(app: AdminApp, executor: ExecutorOptions, instance: string): void {
  const ctx = app.domain;
  const parseJson = jsonTextParser(app);
  /** The named batches running here: each line's own cancellation (undefined once answered). */
  const running = new Map<string, (AbortController | undefined)[]>();
  /** Cuts of batches not (yet) running here: applied if the batch arrives soon after. */
  const early = new Map<string, { lines: Set<number>; at: number }>();
  // Once the server is stopping, an answer closes its connection (as every other answer does,
  // app.ts), so the gateway sends its next batch elsewhere or on a new connection.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Only this route takes the body as text; its lines are parsed below.
  app.addContentTypeParser(EXECUTE_BATCH_MEDIA_TYPE, { parseAs: 'string' }, (_request, text, done) =>
    done(null, text),
  );

  /** The call on line `text`, checked as the single route checks its body. */
  function readLine(request: FastifyRequest, text: string): Line {
    const tab = text.indexOf('\t');
    const adiId = tab === -1 ? '' : text.slice(0, tab);
    const refuse = (error: Error): Line => {
      const mapped = mapError(error, request) ?? {
        code: 'VALIDATION_FAILED' as const,
        message: 'invalid call',
      };
      return { status: ERROR_STATUS[mapped.code], refused: errorBody(request, mapped) };
    };
    if (!EXECUTE_BATCH_ADI_ID_RE.test(adiId)) {
      return refuse(
        new DomainError('VALIDATION_FAILED', 'a batch line starts with an ADI id and a tab', {
          field: 'adi_id',
        }),
      );
    }
    let parsed: { error: Error | null; value?: unknown } | undefined;
    // The parser answers at once (it is synchronous, callback-style).
    parseJson(request, text.slice(tab + 1), (error, value) => {
      parsed = { error, value };
    });
    if (!parsed) throw new Error('the JSON parser did not answer synchronously');
    if (parsed.error) return refuse(parsed.error);
    // The single route's validator (same compiler, same options, so the same coercions and errors).
    const validate = request.compileValidationSchema(ExecuteRequest, 'body');
    if (!validate(parsed.value)) {
      const failure = Object.assign(new Error('invalid call'), {
        validation: validate.errors ?? [],
        validationContext: 'body',
      }) as unknown as FastifyError;
      return refuse(failure);
    }
    return { adiId, body: parsed.value as ExecuteRequest };
  }

  app.post(
    '/execute-batch',
    {
      schema: {
        tags: ['internal'],
        summary:
          'Run several bound tools in one exchange: a text body of lines `<adi_id>\\t<ExecuteRequest JSON>`; ' +
          `the answer is NDJSON, one {"i", "status", "body"} per call as it ends (at most ${EXECUTE_BATCH_MAX_CALLS} calls)`,
        security: [{ internalToken: [] }],
        consumes: [EXECUTE_BATCH_MEDIA_TYPE],
        body: Type.String({ description: 'one call per line: ADI id, tab, ExecuteRequest as JSON' }),
        response: { ...errorResponses(413) },
      },
    },
    async (request, reply) => {
      const texts = (request.body as string).split('\n');
      if (texts.at(-1) === '') texts.pop();
      if (texts.length === 0 || texts.length > EXECUTE_BATCH_MAX_CALLS) {
        throw new DomainError(
          'VALIDATION_FAILED',
          `a batch holds 1 to ${EXECUTE_BATCH_MAX_CALLS} calls, one per line; this one has ${texts.length}`,
          { max_calls: EXECUTE_BATCH_MAX_CALLS },
        );
      }
      const lines = texts.map((text) => readLine(request, text));
      // The single route's serializer of its answer (fields outside ToolResult dropped alike);
      // compiled once per route, before anything is sent.
      const serialize = reply.compileSerializationSchema(
        ToolResult as unknown as Record<string, unknown>,
        '200',
      ) as (result: unknown) => string;
      const socket = request.raw.socket;
      reply.hijack();
      const raw = reply.raw;
      // A named batch's calls can be cancelled one by one while it runs (not a name in use).
      const named = request.headers[EXECUTE_BATCH_ID_HEADER];
      const batchId =
        typeof named === 'string' && EXECUTE_BATCH_ID_RE.test(named) && !running.has(named)
          ? named
          : undefined;
      const own: (AbortController | undefined)[] | undefined =
        batchId === undefined ? undefined : lines.map(() => new AbortController());
      // The connection closing cancels every call still running: one signal for an unnamed batch;
      // a named batch's lines each have their own, which the close aborts too (rather than a
      // signal per line combining two: AbortSignal.any costs about 26 µs of CPU on Node 20).
      const cancelled = own === undefined ? abortedOnClose(raw, CALLER_GONE) : undefined;
      if (batchId !== undefined && own !== undefined) {
        running.set(batchId, own);
        raw.once('close', () => running.delete(batchId));
        onCallerGone(raw, () => {
          for (const controller of own) controller?.abort(CALLER_GONE);
        });
        const cut = early.get(batchId);
        early.delete(batchId);
        if (cut !== undefined && performance.now() - cut.at < EARLY_CUT_MS) {
          for (const line of cut.lines) own[line]?.abort(CANCELLED);
        }
      }
      raw.writeHead(200, {
        'content-type': EXECUTE_BATCH_MEDIA_TYPE,
        'cache-control': 'no-store',
        [CONTROL_PLANE_INSTANCE_HEADER]: instance,
        ...(closing && { connection: 'close' }),
      });
      // Sends the head now: the gateway's time limit on the head is not its calls' business.
      raw.flushHeaders();
      let out = '';
      let scheduled = false;
      let left = lines.length;
      const flush = () => {
        scheduled = false;
        if (out === '' || raw.writableEnded) return;
        const chunk = out;
        out = '';
        if (left === 0) {
          // A batch that began before the server started stopping still holds a keep-alive
          // connection: it is closed once answered, so the shutdown does not wait for it.
          raw.end(chunk, () => {
            if (closing) socket.end();
          });
        } else raw.write(chunk);
      };
      const line500 = (i: number): ExecuteBatchAnswer => ({
        i,
        status: 500,
        body: errorBody(request, INTERNAL_ERROR),
      });
      // Each line is answered once (a refusal at once, a call when it settles); one whose answer
      // cannot be serialised becomes its own 500.
      const answer = (i: number, serialized: () => string) => {
        let text: string;
        try {
          text = serialized();
        } catch (error) {
          request.log.error({ err: error, line: i }, 'a batched call’s answer could not be serialised');
          text = JSON.stringify(line500(i));
        }
        out += `${text}\n`;
        left--;
        if (own !== undefined) own[i] = undefined;
        if (left === 0) {
          if (batchId !== undefined) running.delete(batchId);
          flush();
        } else if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      };
      lines.forEach((line, i) => {
        if ('refused' in line) {
          return answer(i, () => JSON.stringify({ i, status: line.status, body: line.refused }));
        }
        const signal = own?.[i]?.signal ?? cancelled;
        executeBinding(ctx, line.adiId, line.body, executor, signal).then(
          (result) => answer(i, () => `{"i":${i},"status":200,"body":${serialize(result)}}`),
          (error: unknown) => {
            // What the single route's error handler would have answered.
            const mapped = error instanceof Error ? mapError(error, request) : undefined;
            if (!mapped) {
              request.log.error(
                { err: error, line: i, adi_id: line.adiId },
                'unhandled error in a batched call',
              );
            }
            const failed: ExecuteBatchAnswer = mapped
              ? { i, status: ERROR_STATUS[mapped.code], body: errorBody(request, mapped) }
              : line500(i);
            answer(i, () => JSON.stringify(failed));
          },
        );
      });
    },
  );

  app.post(
    '/execute-batch/cancel',
    {
      schema: {
        tags: ['internal'],
        summary:
          'Cancel calls of a running batch (by line), each as closing its connection would cancel it alone; ' +
          '404 when no such batch runs on this control plane (the cut is kept 30 s, should the batch arrive after it)',
        security: [{ internalToken: [] }],
        body: ExecuteBatchCancel,
        response: {
          200: Type.Object({ cancelled: Type.Integer({ description: 'calls that were still running' }) }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => {
      const { batch, lines } = request.body as ExecuteBatchCancel;
      const own = running.get(batch);
      if (own === undefined) {
        // It may not have arrived yet (the cancel took another connection): cut it when it does.
        const known = early.get(batch);
        if (known !== undefined) for (const line of lines) known.lines.add(line);
        else {
          if (early.size >= EARLY_CUTS_MAX) early.delete(early.keys().next().value!);
          early.set(batch, { lines: new Set(lines), at: performance.now() });
        }
        throw new DomainError(
          'NOT_FOUND',
          `no batch ${batch} runs on this control plane (it ended, or runs on another)`,
          {
            batch,
          },
        );
      }
      let cancelledCalls = 0;
      for (const line of new Set(lines)) {
        const controller = own[line];
        if (controller === undefined || controller.signal.aborted) continue;
        controller.abort(CANCELLED);
        cancelledCalls += 1;
      }
      return { cancelled: cancelledCalls };
    },
  );
}
