/**
 * The function table of the budgeted interpreter. Every library function runs behind a meter that
 * charges its inputs before and its output after; the ones that can build far more than they are
 * given, or that hide superlinear work, are replaced here by bounded versions:
 *
 * - pad_left, pad_right: the width is checked against the string limit before padding.
 * - replace: walks the real occurrences (the library allocates an array of `count` slots and
 *   rescans from the start each time); the result's length is known and checked before it is built.
 * - join: the result's length is summed and checked first. split: pieces counted and checked first.
 * - trim, trim_left, trim_right: one linear pass (the library's regex is quadratic on long runs).
 * - to_string: a metered JSON writer (values can share subtrees; JSON.stringify would expand them).
 * - sort, sort_by: charged n log n; sort_by evaluates each key once.
 * - max, min: a loop (the library spreads the array into Math.max, which throws on large arrays).
 * - length, reverse: no array of every code point for strings.
 * - zip: the result's size is checked first. merge: charged per key, and own keys only.
 * - map, sort_by, group_by, max_by, min_by: evaluate `&expr` with the interpreter that calls them,
 *   so `let` variables are visible inside (the library's versions see only the outer scope).
 * - type and the runtime's type test: only expression references the interpreter made are
 *   expressions; a data object with an `expref` key is an object.
 *
 * Where these versions answer differently from the library, they follow the JMESPath Community
 * specification: `sort` orders numbers numerically (the library compares them as text), `replace`
 * with a count replaces that many occurrences of the original string (the library rescans text it
 * just inserted), `max_by`/`min_by` compare string keys and may answer a falsy item, and `group_by`
 * accepts keys named like Object.prototype members.
 */
import {
  TreeInterpreter,
  TYPE_ARRAY,
  TYPE_BOOLEAN,
  TYPE_EXPREF,
  TYPE_NULL,
  TYPE_NUMBER,
  TYPE_OBJECT,
  TYPE_STRING,
} from '@jmespath-community/jmespath';
import { setOwn, type JsonObject, type JsonValue } from '../json.ts';
import { writeJson } from '../serialize.ts';
import type { BudgetedInterpreter, ExpressionNode } from './interpreter.ts';
import { ARRAY_SLOT_BYTES, OBJECT_MEMBER_BYTES, VALUE_HEADER_BYTES, type Meter } from './meter.ts';

type Args = unknown[];

interface FunctionEntry {
  _func: (this: Runtime, args: Args) => unknown;
  _signature: unknown[];
}

/** The library runtime's members the bounded functions use (`this` of a table function). */
export interface Runtime {
  _interpreter: BudgetedInterpreter;
  _functionTable: Record<string, FunctionEntry>;
  getTypeName(value: unknown): number | undefined;
  TYPE_NAME_TABLE: Readonly<Record<number, string>>;
}

type Bounded = (this: Runtime, args: Args) => unknown;

/** Expression references (`&expr`) built by a budgeted interpreter; nothing else is an expression. */
export const EXPREFS = new WeakSet<object>();

/** The library's type test, except that only the interpreter's own `&expr` values are expressions. */
export function typeNameOf(value: unknown): number | undefined {
  if (value === null) return TYPE_NULL;
  switch (typeof value) {
    case 'string':
      return TYPE_STRING;
    case 'number':
      return TYPE_NUMBER;
    case 'boolean':
      return TYPE_BOOLEAN;
    case 'object':
      if (Array.isArray(value)) return TYPE_ARRAY;
      return EXPREFS.has(value) ? TYPE_EXPREF : TYPE_OBJECT;
    default:
      return undefined;
  }
}

const TYPE_NAMES: Record<number, string> = {
  [TYPE_NUMBER]: 'number',
  [TYPE_STRING]: 'string',
  [TYPE_ARRAY]: 'array',
  [TYPE_OBJECT]: 'object',
  [TYPE_BOOLEAN]: 'boolean',
  [TYPE_EXPREF]: 'expression',
  [TYPE_NULL]: 'null',
};

function typeName(value: unknown): string {
  return TYPE_NAMES[typeNameOf(value) ?? -1] ?? 'unknown';
}

function ensureNonNegativeInteger(value: unknown): number {
  if (typeof value !== 'number' || value < 0 || Math.floor(value) !== value) {
    throw new Error('invalid-value: expecting a non-negative integer.');
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Strings

/** Joins many pieces without an array (or a rope) of every piece: parts are folded every 4,096. */
class StringBuilder {
  readonly #chunks: string[] = [];
  #parts: string[] = [];

  push(piece: string): void {
    this.#parts.push(piece);
    if (this.#parts.length >= 4_096) {
      this.#chunks.push(this.#parts.join(''));
      this.#parts = [];
    }
  }

  toString(): string {
    return this.#chunks.join('') + this.#parts.join('');
  }
}

function padFunction(name: 'pad_left' | 'pad_right'): Bounded {
  return function pad(this: Runtime, args: Args): string {
    const subject = args[0] as string;
    const width = args[1] as number;
    const padding = (args[2] as string | undefined) || ' ';
    if (padding.length > 1) {
      throw new Error(
        `invalid value, ${name} expects its 'pad' parameter to be a valid string with a single codepoint`,
      );
    }
    ensureNonNegativeInteger(width);
    // As the library: an empty subject stays empty.
    if (subject === '' || width <= subject.length) return subject;
    this._interpreter.meter.reserveString(width);
    return name === 'pad_left' ? subject.padStart(width, padding) : subject.padEnd(width, padding);
  };
}

// Occurrences of a non-empty `search`, left to right without overlaps, at most `limit`.
function countOccurrences(subject: string, search: string, limit: number, meter: Meter): number {
  let count = 0;
  for (
    let at = subject.indexOf(search);
    at !== -1 && count < limit;
    at = subject.indexOf(search, at + search.length)
  ) {
    count += 1;
    if ((count & 1_023) === 0) meter.step(1_024);
  }
  return count;
}

const replace: Bounded = function replace(this: Runtime, args: Args): string {
  const [subject, search, by, countArg] = args as [string, string, string, number | null | undefined];
  const meter = this._interpreter.meter;
  if (countArg === 0) return subject;
  const limit = countArg === undefined || countArg === null ? Infinity : ensureNonNegativeInteger(countArg);
  // The library splits on "" into UTF-16 units: "" occurs between every two of them.
  const occurrences =
    search === ''
      ? Math.min(Math.max(subject.length - 1, 0), limit)
      : countOccurrences(subject, search, limit, meter);
  if (occurrences === 0) return subject;
  const length = subject.length + occurrences * (by.length - search.length);
  meter.reserveString(length);
  meter.reserveBytes(2 * length);
  const out = new StringBuilder();
  if (search === '') {
    for (let i = 0; i < occurrences; i += 1) {
      out.push(subject[i] as string);
      out.push(by);
    }
    out.push(subject.slice(occurrences));
    return out.toString();
  }
  let from = 0;
  for (let k = 0; k < occurrences; k += 1) {
    const at = subject.indexOf(search, from);
    out.push(subject.slice(from, at));
    out.push(by);
    from = at + search.length;
  }
  out.push(subject.slice(from));
  return out.toString();
};

const join: Bounded = function join(this: Runtime, args: Args): string {
  const [glue, list] = args as [string, string[]];
  let length = glue.length * Math.max(list.length - 1, 0);
  for (const item of list) length += item.length;
  this._interpreter.meter.reserveString(length);
  return list.join(glue);
};

function splitFunction(library: FunctionEntry['_func']): Bounded {
  return function split(this: Runtime, args: Args): unknown {
    const [subject, search] = args as [string, string];
    const meter = this._interpreter.meter;
    const pieces = search === '' ? subject.length : countOccurrences(subject, search, Infinity, meter) + 1;
    // The library splits in full even with a count (and joins the rest again): pieces of the whole
    // string, then the joined remainder.
    meter.reserveBytes(pieces * (ARRAY_SLOT_BYTES + VALUE_HEADER_BYTES) + subject.length);
    return library.call(this, args);
  };
}

// \s of a regular expression plus U+0085, the library's default set of characters to trim.
const WHITESPACE = /[\s\x85]/;

function trimFunction(ends: 'both' | 'left' | 'right'): Bounded {
  return function trim(this: Runtime, args: Args): string {
    const subject = args[0] as string;
    const chars = args[1] as string | undefined;
    // As the library: a missing or empty set means whitespace; otherwise each UTF-16 unit of it.
    const set = chars
      ? new Set(Array.from({ length: chars.length }, (_, i) => chars.charCodeAt(i)))
      : undefined;
    const trimmed = (i: number) =>
      set ? set.has(subject.charCodeAt(i)) : WHITESPACE.test(subject[i] as string);
    let start = 0;
    let end = subject.length;
    if (ends !== 'right') while (start < end && trimmed(start)) start += 1;
    if (ends !== 'left') while (end > start && trimmed(end - 1)) end -= 1;
    this._interpreter.meter.step(start + (subject.length - end));
    return start === 0 && end === subject.length ? subject : subject.slice(start, end);
  };
}

const toString: Bounded = function toString(this: Runtime, args: Args): string {
  const [value] = args;
  if (typeof value === 'string') return value;
  const meter = this._interpreter.meter;
  const out = new StringBuilder();
  let length = 0;
  writeJson(value, {
    reserve(minimumUnits) {
      meter.reserveString(length + minimumUnits);
    },
    write(chunk) {
      length += chunk.length;
      meter.reserveString(length);
      meter.step();
      out.push(chunk);
    },
  });
  return out.toString();
};

// Strings in code point order without building arrays of code points: UTF-16 units compare in code
// point order except surrogates (which encode code points above U+FFFF) against U+E000..U+FFFF.
function compareStrings(a: string, b: string, meter: Meter): number {
  const shorter = Math.min(a.length, b.length);
  let i = 0;
  while (i < shorter && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  meter.step(1 + (i >>> 4));
  if (i === shorter) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  if (x >= 0xd800 && y >= 0xd800) return inCodePointOrder(x) - inCodePointOrder(y);
  return x - y;
}

function inCodePointOrder(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  return unit >= 0xd800 ? unit + 0x2000 : unit;
}

function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i + 1 < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length -= 1;
        i += 1;
      }
    }
  }
  return length;
}

function reverseString(text: string): string {
  const out = new StringBuilder();
  for (let i = text.length - 1; i >= 0; i -= 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xdc00 && unit <= 0xdfff && i > 0) {
      const high = text.charCodeAt(i - 1);
      if (high >= 0xd800 && high <= 0xdbff) {
        out.push(text.slice(i - 1, i + 1));
        i -= 1;
        continue;
      }
    }
    out.push(text[i] as string);
  }
  return out.toString();
}

// ---------------------------------------------------------------------------------------------
// Arrays and objects

function sortCost(length: number): number {
  return length * Math.ceil(Math.log2(length + 1));
}

const sort: Bounded = function sort(this: Runtime, args: Args): unknown {
  const list = args[0] as (string | number)[];
  if (list.length === 0) return list;
  const meter = this._interpreter.meter;
  meter.step(sortCost(list.length));
  meter.reserveBytes(list.length * ARRAY_SLOT_BYTES);
  // The signature admits only all-strings or all-numbers.
  if (typeof list[0] === 'string') return [...(list as string[])].sort((a, b) => compareStrings(a, b, meter));
  return [...(list as number[])].sort((a, b) => a - b);
};

// Keys of `&expr` over `list`, all numbers or all strings, as sort_by needs them.
function sortKeys(
  runtime: Runtime,
  list: JsonValue[],
  expref: ExpressionNode,
): {
  keys: (number | string)[];
  type: 'number' | 'string';
} {
  const interpreter = runtime._interpreter;
  const keys: (number | string)[] = [];
  let type: 'number' | 'string' | undefined;
  for (const item of list) {
    const key = interpreter.visit(expref, item);
    const actual = typeName(key);
    if (type === undefined) {
      if (actual !== 'number' && actual !== 'string') {
        throw new Error(`Invalid type: unexpected type (${actual})`);
      }
      type = actual;
    } else if (actual !== type) {
      throw new Error(`Invalid type: expected (${type}), received ${actual}`);
    }
    keys.push(key as number | string);
  }
  return { keys, type: type ?? 'number' };
}

const sortBy: Bounded = function sortBy(this: Runtime, args: Args): unknown {
  const [list, expref] = args as [JsonValue[], ExpressionNode];
  if (list.length === 0) return [];
  const meter = this._interpreter.meter;
  const { keys, type } = sortKeys(this, list, expref);
  meter.step(sortCost(list.length));
  meter.reserveBytes(2 * list.length * ARRAY_SLOT_BYTES);
  const order = Array.from({ length: list.length }, (_, i) => i);
  const compare =
    type === 'string'
      ? (i: number, j: number) => compareStrings(keys[i] as string, keys[j] as string, meter) || i - j
      : (i: number, j: number) => (keys[i] as number) - (keys[j] as number) || i - j;
  return order.sort(compare).map((i) => list[i]);
};

function extremeBy(direction: 1 | -1): Bounded {
  return function extreme(this: Runtime, args: Args): unknown {
    const [list, expref] = args as [JsonValue[], ExpressionNode];
    if (list.length === 0) return null;
    const meter = this._interpreter.meter;
    const interpreter = this._interpreter;
    let best = 0;
    let bestKey: unknown;
    let type: string | undefined;
    for (let i = 0; i < list.length; i += 1) {
      const key = interpreter.visit(expref, list[i] as JsonValue);
      const actual = typeof key;
      if (type === undefined) {
        if (actual !== 'number' && actual !== 'string') {
          throw new Error(`Invalid type: expected one of (number | string), received ${typeName(key)}`);
        }
        type = actual;
        bestKey = key;
        continue;
      }
      if (actual !== type) throw new Error(`Invalid type: expected (${type}), received ${typeName(key)}`);
      const order =
        type === 'string'
          ? compareStrings(key as string, bestKey as string, meter)
          : (key as number) - (bestKey as number);
      if (order * direction > 0) {
        best = i;
        bestKey = key;
      }
    }
    return list[best];
  };
}

// max/min as the library (numbers by value, strings by localeCompare), in a loop instead of a spread.
function extreme(direction: 1 | -1): Bounded {
  return function extremeOf(this: Runtime, args: Args): unknown {
    const list = args[0] as (number | string)[];
    if (list.length === 0) return null;
    const meter = this._interpreter.meter;
    let best = list[0] as number | string;
    for (let i = 1; i < list.length; i += 1) {
      const item = list[i] as number | string;
      if (typeof item === 'number') {
        if ((item - (best as number)) * direction > 0) best = item;
      } else {
        meter.step(1 + ((item.length + (best as string).length) >>> 4));
        if ((best as string).localeCompare(item) * direction < 0) best = item;
      }
    }
    return best;
  };
}

const map: Bounded = function map(this: Runtime, args: Args): unknown {
  const [expref, list] = args as [ExpressionNode, JsonValue[]];
  const interpreter = this._interpreter;
  const mapped: unknown[] = [];
  for (const item of list) mapped.push(interpreter.visit(expref, item));
  return mapped;
};

const groupBy: Bounded = function groupBy(this: Runtime, args: Args): unknown {
  const [list, expref] = args as [JsonValue[], ExpressionNode];
  const interpreter = this._interpreter;
  const groups = new Map<string, JsonValue[]>();
  for (const item of list) {
    const key = interpreter.visit(expref, item ?? {});
    if (typeof key !== 'string') {
      throw new Error(`Invalid type: expected one of (string), received ${typeName(key)}`);
    }
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  const grouped: JsonObject = {};
  for (const [key, items] of groups) setOwn(grouped, key, items);
  return grouped;
};

const merge: Bounded = function merge(this: Runtime, args: Args): unknown {
  const meter = this._interpreter.meter;
  const merged: JsonObject = {};
  for (const object of args as JsonObject[]) {
    const keys = Object.keys(object);
    meter.step(keys.length);
    for (const key of keys) setOwn(merged, key, object[key] as JsonValue);
  }
  return merged;
};

const length: Bounded = function length(this: Runtime, args: Args): number {
  const [value] = args;
  if (typeof value === 'string') return codePointLength(value);
  if (Array.isArray(value)) return value.length;
  const keys = Object.keys(value as object).length;
  this._interpreter.meter.step(keys);
  return keys;
};

const reverse: Bounded = function reverse(this: Runtime, args: Args): unknown {
  const [value] = args;
  if (typeof value === 'string') {
    this._interpreter.meter.reserveBytes(2 * value.length);
    return reverseString(value);
  }
  return (value as JsonValue[]).slice().reverse();
};

function zipFunction(library: FunctionEntry['_func']): Bounded {
  return function zip(this: Runtime, args: Args): unknown {
    const lists = args as JsonValue[][];
    let shortest = Infinity;
    for (const list of lists) shortest = Math.min(shortest, list.length);
    // Checked first: one long array passed many times zips into far more slots than it has.
    const slots = shortest * (lists.length + 2);
    this._interpreter.meter.reserveBytes(slots * ARRAY_SLOT_BYTES);
    this._interpreter.meter.step(slots);
    return library.call(this, args);
  };
}

const type: Bounded = function type(this: Runtime, args: Args): string {
  const name = typeName(args[0]);
  if (name === 'expression' || name === 'unknown') throw new Error('invalid-type');
  return name;
};

// ---------------------------------------------------------------------------------------------
// The table

// A private interpreter of the library's own: its functions are reused (they are pure) and its
// signatures copied. The library's exported instance, which other code may use, is never touched.
const LIBRARY_FUNCTIONS = new (
  Object.getPrototypeOf(TreeInterpreter).constructor as new () => { runtime: Runtime }
)().runtime._functionTable;

function library(name: string): FunctionEntry['_func'] {
  const entry = LIBRARY_FUNCTIONS[name];
  if (!entry) throw new Error(`the JMESPath library has no function ${name}`);
  return entry._func;
}

/** Functions replaced by bounded versions (each named in the header of this file). */
export const BOUNDED_FUNCTIONS: Readonly<Record<string, Bounded>> = {
  pad_left: padFunction('pad_left'),
  pad_right: padFunction('pad_right'),
  replace,
  join,
  split: splitFunction(library('split')),
  trim: trimFunction('both'),
  trim_left: trimFunction('left'),
  trim_right: trimFunction('right'),
  to_string: toString,
  sort,
  sort_by: sortBy,
  max: extreme(1),
  min: extreme(-1),
  max_by: extremeBy(1),
  min_by: extremeBy(-1),
  map,
  group_by: groupBy,
  merge,
  length,
  reverse,
  zip: zipFunction(library('zip')),
  type,
};

/**
 * Library functions used as they are, behind the meter: each does work linear in its inputs (which
 * the meter charges first) and builds at most what it was given.
 */
export const METERED_FUNCTIONS = [
  'abs',
  'avg',
  'ceil',
  'contains',
  'ends_with',
  'find_first',
  'find_last',
  'floor',
  'from_items',
  'items',
  'keys',
  'lower',
  'not_null',
  'starts_with',
  'sum',
  'to_array',
  'to_number',
  'upper',
  'values',
] as const;

function inputSize(value: unknown): number {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  return 0;
}

// Charges a call: its inputs before it runs (the signature check already walked typed arrays), what
// it built after. An input handed back unchanged was not built.
function metered(run: Bounded): Bounded {
  return function meteredFunction(this: Runtime, args: Args): unknown {
    const meter = this._interpreter.meter;
    let size = 1;
    for (const arg of args) size += inputSize(arg);
    meter.step(size);
    const result = run.call(this, args);
    if (args.includes(result)) return result;
    if (typeof result === 'string') meter.string(result.length);
    else if (Array.isArray(result)) meter.array(result.length);
    else if (typeof result === 'object' && result !== null) {
      meter.alloc(VALUE_HEADER_BYTES + Object.keys(result).length * OBJECT_MEMBER_BYTES);
    }
    return result;
  };
}

function buildTable(): Record<string, FunctionEntry> {
  // Without a prototype, `constructor(@)` is an unknown function rather than Object.
  const table = Object.create(null) as Record<string, FunctionEntry>;
  for (const [name, entry] of Object.entries(LIBRARY_FUNCTIONS)) {
    const bounded = BOUNDED_FUNCTIONS[name];
    if (bounded === undefined && !(METERED_FUNCTIONS as readonly string[]).includes(name)) {
      // A library update brought a function nobody has looked at: refuse it rather than run it blind.
      continue;
    }
    table[name] = { _signature: entry._signature, _func: metered(bounded ?? entry._func) };
  }
  return Object.freeze(table);
}

/** The budgeted interpreter's function table (shared, frozen; the functions find the meter on `this`). */
export const FUNCTION_TABLE: Record<string, FunctionEntry> = buildTable();
