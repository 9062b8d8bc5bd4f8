/**
 * Recognising the database errors the domain turns into user-facing ones, or acts on.
 */
import { DomainError } from './errors.ts';

/** True for a unique-constraint violation (Prisma P2002), optionally on a given field. */
export function uniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

/**
 * Whether the database refused a statement for the data of its rows (SQLSTATE class 22, data
 * exception, or 23, integrity constraint violation) rather than failing to run it at all. Prisma
 * puts the SQLSTATE in `meta.code` for raw statements, or in the driver adapter's error it wraps;
 * a statement run without Prisma (pg, PGlite) fails with it in `code`.
 */
export function refusedForData(error: unknown): boolean {
  return refusalFacts(error) !== undefined;
}

/** Prisma's codes for refusals, as the SQLSTATE each stands for (when no driver error says it). */
const PRISMA_STATES = new Map([
  ['P2000', '22001'],
  ['P2002', '23505'],
  ['P2003', '23503'],
  ['P2011', '23502'],
]);

/** What a database refusal says of itself, wherever Prisma or the driver adapter put it. */
interface RefusalFacts {
  /** The SQLSTATE: class 22 (data exception) or 23 (integrity constraint violation). */
  state: string;
  /** The database's own message (quotes table and constraint names; never shown to users). */
  text: string;
  constraint: { fields?: unknown; index?: unknown } | undefined;
  table: string | undefined;
  /** Whether Prisma's client ran the statement (a domain's), rather than a bare driver session. */
  viaPrisma: boolean;
}

function refusalFacts(error: unknown): RefusalFacts | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const failed = error as {
    code?: unknown;
    message?: unknown;
    meta?: {
      code?: unknown;
      driverAdapterError?: {
        cause?: { originalCode?: unknown; originalMessage?: unknown; constraint?: unknown; table?: unknown };
      };
    };
  };
  const cause = failed.meta?.driverAdapterError?.cause;
  const state =
    cause?.originalCode ?? failed.meta?.code ?? PRISMA_STATES.get(String(failed.code)) ?? failed.code;
  if (typeof state !== 'string' || !/^2[23]/.test(state)) return undefined;
  const constraint = cause?.constraint;
  return {
    state,
    text: typeof cause?.originalMessage === 'string' ? cause.originalMessage : String(failed.message ?? ''),
    constraint: typeof constraint === 'object' && constraint !== null ? constraint : undefined,
    table: typeof cause?.table === 'string' ? cause.table : undefined,
    viaPrisma: typeof failed.code === 'string' && /^P\d{4}$/.test(failed.code),
  };
}

/**
 * The column(s) a constraint covers, from its fields when the driver names them, else from its
 * name: Prisma names constraints `{table}_{columns}_{fkey|key}`, and the database's message quotes
 * the tables involved. Columns are snake_case, as the API's fields are.
 */
function constraintFields(facts: RefusalFacts, suffix: '_fkey' | '_key'): string[] {
  const fields = facts.constraint?.fields;
  if (Array.isArray(fields) && fields.every((f) => typeof f === 'string') && fields.length > 0) {
    return fields as string[];
  }
  const named = facts.constraint?.index ?? /constraint "([^"]+)"/.exec(facts.text)?.[1];
  if (typeof named !== 'string' || !named.endsWith(suffix)) return [];
  const tables = [facts.table, ...[...facts.text.matchAll(/table "([^"]+)"/g)].map((m) => m[1])];
  const table = tables
    .filter((t): t is string => t !== undefined && named.startsWith(`${t}_`))
    .sort((a, b) => b.length - a.length)[0];
  const columns = named.slice(table === undefined ? 0 : table.length + 1, -suffix.length);
  return columns === '' ? [] : [columns];
}

/** Owner columns scope a uniqueness ("your projects' slugs"); the field a caller chose is the rest. */
const chosen = (fields: string[]) => {
  const rest = fields.map((f) => f.replace(/^user_id_/, '')).filter((f) => f !== 'user_id');
  return rest.length > 0 ? rest : fields;
};

/**
 * The 4xx a statement the database refused for the data it was given deserves (a reference to a
 * row that does not exist, a duplicate a check before it missed, a value the column cannot hold),
 * naming the field; undefined for any other failure. Every route's error handler asks this before
 * answering INTERNAL, so a constraint a domain check misses is still the caller's 4xx, not a 500.
 * Only statements run through Prisma's client count: the audit trail's own driver session writes
 * rows no caller gave, and a row it cannot write stays INTERNAL. The database's own text is never
 * shown: it quotes internal names and may quote values.
 */
export function constraintRefusal(error: unknown): DomainError | undefined {
  const facts = refusalFacts(error);
  if (!facts?.viaPrisma) return undefined;
  switch (facts.state) {
    case '23503': {
      const [field] = constraintFields(facts, '_fkey');
      // "update or delete on table P violates ... on table C": rows of C still refer to this one.
      if (/^update or delete/.test(facts.text)) {
        return new DomainError(
          'CONFLICT',
          `other records still refer to this one${field ? ` (by ${field})` : ''}; remove them first`,
          field ? { field } : undefined,
        );
      }
      return new DomainError(
        'NOT_FOUND',
        `${field ?? 'a reference'}: what it refers to does not exist`,
        field ? { field } : undefined,
      );
    }
    case '23505': {
      const fields = chosen(constraintFields(facts, '_key'));
      return new DomainError(
        'CONFLICT',
        fields.length > 0 ? `${fields.join(', ')}: already taken` : 'a record like this exists already',
        fields.length > 0 ? { field: fields[0], fields } : undefined,
      );
    }
    case '23502': {
      const field = /column "([^"]+)"/.exec(facts.text)?.[1];
      return new DomainError(
        'VALIDATION_FAILED',
        `${field ?? 'a required field'} may not be null`,
        field ? { field } : undefined,
      );
    }
    case '23001':
      return new DomainError('CONFLICT', 'other records still refer to this one; remove them first');
    default:
      return new DomainError(
        'VALIDATION_FAILED',
        'a value was refused by the database (too long, out of range or of the wrong form for its field)',
      );
  }
}
