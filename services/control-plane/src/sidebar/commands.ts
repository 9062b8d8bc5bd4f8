/**
 * The sidebar's command language: a few shell-like commands on the session's context (a table and
 * a JSON Pointer in its data). Reads answer at once; writes are computed with context-ops' own
 * operations (the ones tools run) and become proposals (proposals.ts). Parsing is small and
 * explicit: a command's first word is its verb; a JSON value is the rest of the line after its path.
 */
import { formatPointer, nodeAtTokens, type JsonValue } from '@bindery/context-ops';
import { findUnstorable, unstorableMessage } from '@bindery/contracts';
import { DomainError } from '../domain/errors.ts';

export interface Parsed {
  verb: string;
  /** The words after the verb, unquoted ('…' literal, "…" with backslash escapes). */
  words: string[];
  /** The line after the verb, as typed (trimmed). */
  rest: string;
}

export const HELP = `Commands (paths are JSON Pointers relative to the context; "/" or "." is the context itself):
  tables                      your tables
  use TABLE [PATH]            choose the context: a table (name or id) and a path in its data
  use PATH  |  cd PATH        move within the table ("cd .." goes up)
  pwd                         the context and the table's version
  ls [PATH]                   members of an object, items of an array
  cat [PATH]                  the value as JSON
  query 'JMESPATH'            a JMESPath query on the context, e.g. query 'length(customers)'
  schema [PATH]               the JSON Schema inferred from the value
  set PATH JSON               replace (or create) the value at PATH
  merge PATH JSON             merge a JSON merge patch (RFC 7396) into the object at PATH
  add PATH JSON               append to the array at PATH, insert at PATH (an index, or "-"), or add a key
  rm PATH                     remove the value at PATH
  mv FROM TO  |  cp FROM TO   move or copy a value
  undo [PROPOSAL]             propose the inverse of your last applied change (or of PROPOSAL)
  proposals                   this session's proposals waiting for a verdict
  tools [EXPOSURE]            the tools of your exposures
  help TOOL                   a tool's description and arguments
  call TOOL --name value …    call a tool (EXPOSURE/TOOL when several have it): a read runs, a context
                              tool's write is proposed, other writes go through their exposure
  help                        this text
Writes never run at once: each becomes a proposal the person approves or rejects.`;

export const WRITE_VERBS: ReadonlySet<string> = new Set(['set', 'merge', 'add', 'rm', 'mv', 'cp', 'undo']);

interface Word {
  text: string;
  end: number;
}

/** The words of `text` from `from`, with where each ends (quotes as a shell reads them, no expansion). */
function lex(text: string, limit = Number.POSITIVE_INFINITY): Word[] {
  const words: Word[] = [];
  let i = 0;
  while (i < text.length && words.length < limit) {
    while (i < text.length && /\s/.test(text[i] as string)) i += 1;
    if (i >= text.length) break;
    let word = '';
    while (i < text.length && !/\s/.test(text[i] as string)) {
      const c = text[i] as string;
      if (c === "'") {
        const close = text.indexOf("'", i + 1);
        if (close < 0) throw syntax("a quote (') is not closed");
        word += text.slice(i + 1, close);
        i = close + 1;
      } else if (c === '"') {
        i += 1;
        while (i < text.length && text[i] !== '"') {
          if (text[i] === '\\' && i + 1 < text.length) i += 1;
          word += text[i];
          i += 1;
        }
        if (i >= text.length) throw syntax('a quote (") is not closed');
        i += 1;
      } else {
        word += c;
        i += 1;
      }
    }
    words.push({ text: word, end: i });
  }
  return words;
}

function syntax(message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message);
}

export function parseCommand(line: string): Parsed {
  const trimmed = line.trim();
  const verb = /^\S+/.exec(trimmed)?.[0] ?? '';
  const rest = trimmed.slice(verb.length).trim();
  const needsRaw = verb === 'query' || verb === 'set' || verb === 'merge' || verb === 'add';
  // The raw commands' words are read by their own rules (a JSON value may hold any quote).
  return { verb: verb.toLowerCase(), words: needsRaw ? [] : lex(rest).map((w) => w.text), rest };
}

/** `query`'s expression: the rest of the line, without one pair of surrounding single quotes. */
export function queryText(rest: string): string {
  if (rest.length >= 2 && rest.startsWith("'") && rest.endsWith("'")) return rest.slice(1, -1);
  return rest;
}

/** `set PATH JSON`: the path (a word) and the JSON value (the rest of the line, '…' stripped). */
export function pathAndValue(verb: string, rest: string): { path: string; value: JsonValue } {
  const first = lex(rest, 1)[0];
  if (first === undefined) throw syntax(`usage: ${verb} PATH JSON`);
  let json = rest.slice(first.end).trim();
  if (json.length >= 2 && json.startsWith("'") && json.endsWith("'")) json = json.slice(1, -1);
  if (json === '') throw syntax(`usage: ${verb} PATH JSON (the value is missing)`);
  let value: JsonValue;
  try {
    value = JSON.parse(json) as JsonValue;
  } catch (error) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `${verb}: the value is not JSON (${error instanceof Error ? error.message : String(error)}); strings need double quotes`,
    );
  }
  refuseUnstorable(value, `${verb}'s value`);
  return { path: first.text, value };
}

/**
 * A value parsed from a command line is input like a request body: a NUL, a lone surrogate or a
 * number past a double is refused here, as the body's own check would have (it reads the line as
 * one string and cannot see what its JSON holds).
 */
export function refuseUnstorable(value: unknown, part: string): void {
  const found = findUnstorable(value);
  if (found) throw new DomainError('VALIDATION_FAILED', unstorableMessage(part, found), { field: part });
}

/** Which context-ops operation (and its arguments) a write command is, on the context `node`. */
export function writeOperation(
  parsed: Parsed,
  node: JsonValue,
  relative: (path: string | undefined, argument?: string) => string[],
): { op: 'create' | 'update' | 'delete' | 'move' | 'copy'; args: Record<string, unknown> } {
  const { verb, words } = parsed;
  switch (verb) {
    case 'set':
    case 'merge':
    case 'add': {
      const { path, value } = pathAndValue(verb, parsed.rest);
      const tokens = relative(path);
      const pointer = formatPointer(tokens);
      const target = nodeAtTokens(node, tokens);
      if (verb === 'merge') return { op: 'update', args: { path: pointer, value, merge: true } };
      if (verb === 'set' && (target !== undefined || tokens.length === 0)) {
        return { op: 'update', args: { path: pointer, value } };
      }
      if (verb === 'add' && Array.isArray(target)) return { op: 'create', args: { path: pointer, value } };
      if (verb === 'add' && target !== undefined && !Array.isArray(nodeAtTokens(node, tokens.slice(0, -1)))) {
        throw new DomainError('CONFLICT', `add: "${pointer}" exists already (use set to replace it)`);
      }
      const parentTokens = tokens.slice(0, -1);
      const last = tokens.at(-1);
      const parent = nodeAtTokens(node, parentTokens);
      const parentPointer = formatPointer(parentTokens);
      if (last === undefined) throw syntax(`${verb}: give a path inside the context`);
      if (Array.isArray(parent)) {
        if (last === '-') return { op: 'create', args: { path: parentPointer, value } };
        if (!/^(0|[1-9][0-9]*)$/.test(last))
          throw syntax(`${verb}: "${last}" is not an array index (or "-")`);
        return { op: 'create', args: { path: parentPointer, value, index: Number(last) } };
      }
      return { op: 'create', args: { path: parentPointer, key: last, value } };
    }
    case 'rm':
      if (words.length !== 1) throw syntax('usage: rm PATH');
      return { op: 'delete', args: { path: formatPointer(relative(words[0])) } };
    case 'mv':
    case 'cp':
      if (words.length !== 2) throw syntax(`usage: ${verb} FROM TO`);
      return {
        op: verb === 'mv' ? 'move' : 'copy',
        args: {
          from: formatPointer(relative(words[0], 'from')),
          to: formatPointer(relative(words[1], 'to')),
        },
      };
    default:
      throw syntax(`unknown write command "${verb}"`);
  }
}
