/**
 * Group commit of the audit trail: the rows of concurrent calls share one INSERT. A call's row is
 * queued, and the call's answer waits until the INSERT carrying it has committed, so nothing
 * acknowledged is ever missing from the trail, whatever happens to the process afterwards.
 *
 * One flush at a time: it takes up to `batchMax` rows off the queue and writes them in one
 * statement; rows queued meanwhile form the next batch, which starts as soon as the flush ends.
 * When idle, the first row starts a flush after `flushMs` (0: at the end of the current turn of
 * the event loop, so rows of calls finishing together still share it). A batch the database
 * refuses for a row's data is written again row by row, so only the calls of the bad rows fail.
 *
 * A row's id is made when its batch is taken off the queue, not when it is queued: flushes run one
 * at a time, so on one control plane ids grow in the order rows commit, and a row commits within
 * one INSERT's time of its id's timestamp. The live stream (audit-stream.ts) relies on that.
 */
import type { ExecutionRecord } from '../audit/audit.ts';
import { argumentsDigest } from '../audit/audit.ts';
import { refusedForData } from '../domain/prisma-errors.ts';
import type { SqlSession } from '../db/migrate.ts';
import { newIds } from '../domain/ids.ts';
import type { AuditMeter } from '../metrics.ts';

export interface AuditWriterOptions {
  /** How long the first row queued while idle waits for others before its flush (0: none). */
  flushMs: number;
  /** Rows per INSERT at most. */
  batchMax: number;
  /** Rows queued at most (at least `batchMax`); beyond, new rows wait for room. */
  queueMax: number;
  meter: AuditMeter;
  log?: { warn(details: object, message: string): void } | undefined;
}

/** One `audit_event` row. */
interface AuditRow {
  id: string;
  userId: string;
  action: string;
  aeiId: string | null;
  bindingId: string | null;
  adiId: string | null;
  toolName: string | null;
  operation: string | null;
  status: string;
  errorCode: string | null;
  durationMs: number;
  argsDigest: string;
  requestId: string | null;
  caller: string | null;
  sourceHint: string | null;
  sourceUsed: string | null;
  traceId: string | null;
}

interface Pending {
  row: AuditRow;
  resolve(): void;
  reject(error: unknown): void;
}

/** The row of `record`, without its id (given when its batch is written). */
function auditRow(record: ExecutionRecord): AuditRow {
  return {
    id: '',
    userId: record.userId,
    action: record.action,
    aeiId: record.aeiId ?? null,
    bindingId: record.bindingId ?? null,
    adiId: record.adiId ?? null,
    toolName: record.toolName ?? null,
    operation: record.operation ?? null,
    status: record.status,
    errorCode: record.errorCode ?? null,
    durationMs: Math.round(record.durationMs),
    argsDigest: argumentsDigest(record.args ?? {}),
    requestId: record.requestId ?? null,
    caller: record.caller ?? null,
    sourceHint: record.sourceHint ?? null,
    sourceUsed: record.sourceUsed ?? null,
    traceId: record.traceId ?? null,
  };
}

/** The row's fields in the order of COLUMNS. */
const ORDER: readonly (keyof AuditRow)[] = [
  'id',
  'userId',
  'action',
  'aeiId',
  'bindingId',
  'adiId',
  'toolName',
  'operation',
  'status',
  'errorCode',
  'durationMs',
  'argsDigest',
  'requestId',
  'caller',
  'sourceHint',
  'sourceUsed',
  'traceId',
];

const COLUMNS = `"id", "user_id", "action", "aei_id", "binding_id", "adi_id", "tool_name", "operation",
  "status", "error_code", "duration_ms", "args_digest", "request_id", "caller", "source_hint", "source_used",
  "trace_id"`;

/**
 * One row: the common case at low concurrency, where it costs less than the array form. Its
 * parameters' types are spelled out, as the array form's are: a named statement keeps the types
 * it was prepared with.
 */
const INSERT_ONE = `INSERT INTO "audit_event" (${COLUMNS})
  VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
    $10::text, $11::int4, $12::text, $13::text, $14::text, $15::text, $16::text, $17::text)
  ON CONFLICT ("id") DO NOTHING`;

/**
 * Many rows in one statement: one array per column, unnested into rows, so the statement and its
 * 17 parameters are the same whatever the batch size (Prisma's createMany builds and interprets 17
 * parameters per row, ten to twenty times slower here for 500 rows).
 */
const INSERT_MANY = `INSERT INTO "audit_event" (${COLUMNS})
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::int4[], $12::text[], $13::text[],
    $14::text[], $15::text[], $16::text[], $17::text[])
  ON CONFLICT ("id") DO NOTHING`;

/**
 * Writes `rows` in one statement, without Prisma: its work per raw statement (about 0.7 ms for
 * this one, twice what PostgreSQL takes to commit it) was most of a cheap call's time. A row
 * already there (its batch committed though the answer was lost, then retried) is skipped. Both
 * statements are named, so PostgreSQL parses and plans each once per connection: a quarter of
 * the database's CPU for a batch of seven rows, measured.
 */
async function insertRows(sql: AuditSql, rows: readonly AuditRow[]): Promise<void> {
  const [only] = rows;
  if (rows.length === 1 && only)
    await sql.query(
      INSERT_ONE,
      ORDER.map((key) => only[key]),
      'bindery_audit_one',
    );
  else
    await sql.query(
      INSERT_MANY,
      ORDER.map((key) => rows.map((row) => row[key])),
      'bindery_audit_many',
    );
}

/** Where the writer's statements run (the database's plain session, outside Prisma). */
export type AuditSql = Pick<SqlSession, 'query'>;

export class AuditWriter {
  readonly #sql: AuditSql;
  readonly #options: AuditWriterOptions;
  /** Rows for the next flushes, at most `queueMax`. */
  #queue: Pending[] = [];
  /** Rows that found the queue full, in arrival order: they enter it as flushes make room. */
  #waiting: Pending[] = [];
  /** The flush loop running, if any. */
  #flushing: Promise<void> | undefined;
  /** The start of the next flush, when one is due. */
  #due: { cancel(): void } | undefined;
  /** From shutdown on: every row is flushed at once. */
  #hurry = false;

  constructor(sql: AuditSql, options: AuditWriterOptions) {
    this.#sql = sql;
    this.#options = { ...options, queueMax: Math.max(options.queueMax, options.batchMax) };
  }

  /**
   * Queues the audit row of one execution; settles once its INSERT committed (or rejects with the
   * database's error when its row could not be written). The meter sees the row in flight until
   * then, and how long it waited.
   */
  record(record: ExecutionRecord): Promise<void> {
    const { meter } = this.#options;
    const started = performance.now();
    meter.inFlight.inc();
    const written = new Promise<void>((resolve, reject) => {
      const pending: Pending = { row: auditRow(record), resolve, reject };
      if (this.#queue.length < this.#options.queueMax && this.#waiting.length === 0) {
        this.#queue.push(pending);
        this.#schedule();
      } else {
        meter.queueFull.inc();
        this.#waiting.push(pending);
      }
    });
    const settled = () => {
      meter.inFlight.dec();
      meter.seconds.observe((performance.now() - started) / 1000);
    };
    return written.then(settled, (error: unknown) => {
      settled();
      throw error;
    });
  }

  /** From now on, flushes start at once (the app is shutting down: nothing should wait for a timer). */
  hurry(): void {
    this.#hurry = true;
    this.#schedule();
  }

  /** Writes every row queued or waiting, and resolves once none is left and no flush runs. */
  async close(): Promise<void> {
    this.hurry();
    while (this.#flushing) await this.#flushing;
  }

  #schedule(): void {
    if (this.#flushing || this.#queue.length === 0) return;
    if (this.#hurry || this.#queue.length >= this.#options.batchMax) {
      this.#due?.cancel();
      this.#due = undefined;
      this.#flushing = this.#flush();
      return;
    }
    if (this.#due) return;
    const start = () => {
      this.#due = undefined;
      if (!this.#flushing) this.#flushing = this.#flush();
    };
    if (this.#options.flushMs > 0) {
      const timer = setTimeout(start, this.#options.flushMs);
      this.#due = { cancel: () => clearTimeout(timer) };
    } else {
      const immediate = setImmediate(start);
      this.#due = { cancel: () => clearImmediate(immediate) };
    }
  }

  /** Writes batches until the queue is empty: rows queued during a flush have waited already. */
  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#options.batchMax);
        // Ids in ascending order (those made in one millisecond otherwise sort by their random
        // part); a row retried row by row keeps the id it was first written with.
        const ids = newIds('evt', batch.length);
        for (const [index, pending] of batch.entries()) pending.row.id = ids[index]!;
        while (this.#waiting.length > 0 && this.#queue.length < this.#options.queueMax) {
          this.#queue.push(this.#waiting.shift()!);
        }
        await this.#write(batch);
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /** Writes one batch and settles its rows' promises; never throws. */
  async #write(batch: Pending[]): Promise<void> {
    const { meter } = this.#options;
    try {
      await insertRows(
        this.#sql,
        batch.map((pending) => pending.row),
      );
      meter.batchRows.observe(batch.length);
      for (const pending of batch) pending.resolve();
      return;
    } catch (error) {
      if (batch.length === 1 || !refusedForData(error)) {
        // The database did not run it (connection lost, closed): retrying row by row would fail
        // the same way, once per row.
        for (const pending of batch) pending.reject(error);
        return;
      }
      this.#options.log?.warn(
        { err: error, rows: batch.length },
        'audit batch refused for the data of a row: writing its rows one by one',
      );
    }
    for (const [index, pending] of batch.entries()) {
      try {
        await insertRows(this.#sql, [pending.row]);
        meter.batchRows.observe(1);
        pending.resolve();
      } catch (error) {
        pending.reject(error);
        if (!refusedForData(error)) {
          for (const rest of batch.slice(index + 1)) rest.reject(error);
          return;
        }
      }
    }
  }
}
