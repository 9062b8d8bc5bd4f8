/**
 * `pattern` and `patternProperties` in the JSON Schemas users write (binding overrides, item
 * schemas), which agents' values are checked against on the event loop every tenant shares.
 *
 * JavaScript's RegExp backtracks (`^(a+)+$` against 26 "a"s and a "!" took a second, doubling with
 * each "a"), so patterns run on RE2 (re2js, pure JavaScript), whose time is linear in the input,
 * but also in the size of the compiled pattern: `(?:[a-c]|ab){700,999}$` compiles to 4,298
 * instructions and took 0.3 s on 4,000 characters, 8 s on 64 KiB. Hence three limits:
 * - a pattern compiling to more than MAX_PATTERN_PROGRAM_SIZE instructions is refused when its
 *   schema is saved (RE2 itself refuses a counted repeat over 1,000, nested ones multiplied);
 * - a string is checked only up to MAX_PATTERN_INPUT characters, and only up to
 *   PATTERN_WORK_PER_CHECK / program size, so one check costs at most about 100 ms; a longer one
 *   fails validation with a message naming the pattern;
 * - the checks of one validation stop after PATTERN_TIME_BUDGET_MS (LIMIT_EXCEEDED), so many
 *   strings in one call cannot add up to seconds either.
 *
 * JSON Schema patterns are ECMA-262 regular expressions. Each pattern is parsed as JavaScript (with
 * the `u` flag, as ajv compiles them) and written out in RE2's syntax with JavaScript's meaning:
 * `\s` is ECMA-262's white space and line terminators (RE2's is ASCII only), `.` excludes the four
 * line terminators (RE2's only `\n`), `[^]` and `[]` mean anything and nothing. What RE2 cannot run
 * (lookaround, backreferences, inline modifiers) is refused with a message naming the construct.
 */
import { RegExpParser, type AST } from '@eslint-community/regexpp';
import { RE2JS } from 're2js';
import { OpError } from './errors.ts';

/** Instructions a compiled pattern may have (RE2's `programSize`); `^[a-z]{1,64}$` has 131. */
export const MAX_PATTERN_PROGRAM_SIZE = 1_000;
/** The longest string checked against any pattern, in UTF-16 code units. */
export const MAX_PATTERN_INPUT = 65_536;
/**
 * Characters times instructions one check may cost: a 1,000-instruction pattern checks strings up
 * to 4,194 characters, one of up to 64 instructions the whole MAX_PATTERN_INPUT. Measured worst
 * cases at this bound took 70-90 ms (2-core host under load).
 */
export const PATTERN_WORK_PER_CHECK = 4_194_304;
/** Time the pattern checks of one validation may take together. */
export const PATTERN_TIME_BUDGET_MS = 500;

/** A pattern the engine will not run, with the reason; thrown while a schema is compiled. */
export class PatternRefused extends Error {
  override name = 'PatternRefused';
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`pattern ${JSON.stringify(pattern)} ${reason}`);
  }
}

/** A string one pattern check skipped because it is longer than the pattern may check. */
export interface UncheckedString {
  pattern: string;
  length: number;
  max: number;
}

/** What the pattern checks of one validation spent and skipped (see `trackPatternChecks`). */
export interface PatternChecks {
  spentMs: number;
  tooLong: UncheckedString[];
}

let active: PatternChecks | undefined;

/**
 * Runs `validate` with its pattern checks counted: strings too long to check are listed (the check
 * answers "no match", so a validation that met one must fail whatever else it says), and passing
 * PATTERN_TIME_BUDGET_MS throws LIMIT_EXCEEDED. Validation is synchronous, so one module-level
 * record serves; a validation inside another counts its own checks, and the outer's resume after.
 */
export function trackPatternChecks<T>(validate: () => T): { result: T; checks: PatternChecks } {
  const outer = active;
  const checks: PatternChecks = { spentMs: 0, tooLong: [] };
  active = checks;
  try {
    return { result: validate(), checks };
  } finally {
    active = outer;
  }
}

/** A compiled pattern as ajv uses it: `test` answers whether the pattern occurs in the string. */
export interface SchemaPattern {
  readonly source: string;
  readonly programSize: number;
  /** The longest string this pattern checks. */
  readonly maxInput: number;
  test(input: string): boolean;
  toString(): string;
}

/** Compiles a schema's pattern for RE2 with JavaScript's meaning; throws PatternRefused. */
export function compilePattern(source: string): SchemaPattern {
  const pattern = parse(source);
  const estimate = estimatedSize(pattern.alternatives);
  // Compiling is itself linear in the program: a pattern far past the limit is refused unbuilt.
  if (estimate > 4 * MAX_PATTERN_PROGRAM_SIZE)
    throw tooComplex(source, `about ${estimate.toLocaleString('en')}`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(new Translation(source).alternatives(pattern.alternatives));
  } catch (error) {
    if (error instanceof PatternRefused) throw error;
    throw new PatternRefused(
      source,
      `cannot be used: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const programSize = re.programSize();
  if (programSize > MAX_PATTERN_PROGRAM_SIZE) throw tooComplex(source, programSize.toLocaleString('en'));
  const maxInput = Math.min(MAX_PATTERN_INPUT, Math.floor(PATTERN_WORK_PER_CHECK / programSize));
  return {
    source,
    programSize,
    maxInput,
    test(input: string): boolean {
      const checks = active;
      if (input.length > maxInput) {
        checks?.tooLong.push({ pattern: source, length: input.length, max: maxInput });
        return false;
      }
      const started = performance.now();
      const found = re.test(input);
      if (checks !== undefined) {
        checks.spentMs += performance.now() - started;
        if (checks.spentMs > PATTERN_TIME_BUDGET_MS) throw patternTimeExceeded();
      }
      return found;
    },
    // ajv shares one compiled pattern among schemas by this key.
    toString: () => `/${source}/u`,
  };
}

/** The message for a string longer than `max`, the most `pattern` checks. */
export function describeUnchecked({ pattern, length, max }: UncheckedString): string {
  return (
    `must be at most ${max.toLocaleString('en')} characters long to be checked against pattern ` +
    `${JSON.stringify(pattern)} (it has ${length.toLocaleString('en')})`
  );
}

function tooComplex(source: string, size: string): PatternRefused {
  return new PatternRefused(
    source,
    `is too complex to check quickly: it compiles to ${size} instructions, more than the ` +
      `${MAX_PATTERN_PROGRAM_SIZE.toLocaleString('en')} allowed; use fewer or smaller counted repeats ({n,m})`,
  );
}

function patternTimeExceeded(): OpError {
  return new OpError(
    'LIMIT_EXCEEDED',
    `Checking the values against the schema's patterns took more than ${PATTERN_TIME_BUDGET_MS} ms; ` +
      'send fewer or shorter strings at once.',
    { limit: 'pattern_time', budget_ms: PATTERN_TIME_BUDGET_MS },
  );
}

// ECMAScript 2025 syntax, so constructs newer than the running engine (inline modifiers) are named
// in the refusal rather than reported as a syntax error.
const parser = new RegExpParser({ ecmaVersion: 2025 });

function parse(source: string): AST.Pattern {
  try {
    return parser.parsePattern(source, 0, source.length, { unicode: true });
  } catch (error) {
    throw new PatternRefused(
      source,
      `is not a valid ECMA-262 regular expression: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

// An upper bound of RE2's program size, from the syntax tree: counted repeats multiply.
function estimatedSize(alternatives: AST.Alternative[]): number {
  let size = alternatives.length;
  for (const alternative of alternatives) {
    for (const element of alternative.elements) size += elementSize(element);
  }
  return size;
}

function elementSize(element: AST.Element): number {
  switch (element.type) {
    case 'Quantifier': {
      const copies = Number.isFinite(element.max) ? element.max : element.min + 1;
      return Math.max(1, copies) * (elementSize(element.element) + 1);
    }
    case 'Group':
    case 'CapturingGroup':
      return estimatedSize(element.alternatives) + 2;
    case 'Assertion':
      return element.kind === 'lookahead' || element.kind === 'lookbehind'
        ? estimatedSize(element.alternatives)
        : 1;
    default:
      return 1;
  }
}

type Ranges = readonly (readonly [number, number])[];

const MAX_CODE_POINT = 0x10ffff;
// ECMA-262 WhiteSpace and LineTerminator: what `\s` matches in JavaScript.
const SPACE: Ranges = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const LINE_TERMINATORS: Ranges = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const ASCII: Ranges = [[0x00, 0x7f]];
const EVERYTHING: Ranges = [[0, MAX_CODE_POINT]];

/** The ECMA-262 white space and line terminators `\s` matches (exported for the tests). */
export const ECMA_WHITE_SPACE: Ranges = SPACE;

function complement(ranges: Ranges): Ranges {
  const result: [number, number][] = [];
  let next = 0;
  for (const [low, high] of ranges) {
    if (low > next) result.push([next, low - 1]);
    next = high + 1;
  }
  if (next <= MAX_CODE_POINT) result.push([next, MAX_CODE_POINT]);
  return result;
}

function codePoint(value: number): string {
  const char = String.fromCodePoint(value);
  return /^[0-9A-Za-z]$/.test(char) ? char : `\\x{${value.toString(16)}}`;
}

function rangeList(ranges: Ranges): string {
  return ranges
    .map(([low, high]) => (low === high ? codePoint(low) : `${codePoint(low)}-${codePoint(high)}`))
    .join('');
}

// JavaScript's long General_Category names and aliases; RE2 knows the one- and two-letter ones.
const CATEGORY_ALIASES: Readonly<Record<string, string>> = {
  Other: 'C',
  Control: 'Cc',
  cntrl: 'Cc',
  Format: 'Cf',
  Private_Use: 'Co',
  Surrogate: 'Cs',
  Letter: 'L',
  Lowercase_Letter: 'Ll',
  Modifier_Letter: 'Lm',
  Other_Letter: 'Lo',
  Titlecase_Letter: 'Lt',
  Uppercase_Letter: 'Lu',
  Mark: 'M',
  Combining_Mark: 'M',
  Spacing_Mark: 'Mc',
  Enclosing_Mark: 'Me',
  Nonspacing_Mark: 'Mn',
  Number: 'N',
  Decimal_Number: 'Nd',
  digit: 'Nd',
  Letter_Number: 'Nl',
  Other_Number: 'No',
  Punctuation: 'P',
  punct: 'P',
  Connector_Punctuation: 'Pc',
  Dash_Punctuation: 'Pd',
  Close_Punctuation: 'Pe',
  Final_Punctuation: 'Pf',
  Initial_Punctuation: 'Pi',
  Other_Punctuation: 'Po',
  Open_Punctuation: 'Ps',
  Symbol: 'S',
  Currency_Symbol: 'Sc',
  Modifier_Symbol: 'Sk',
  Math_Symbol: 'Sm',
  Other_Symbol: 'So',
  Separator: 'Z',
  Line_Separator: 'Zl',
  Paragraph_Separator: 'Zp',
  Space_Separator: 'Zs',
};

/** Writes one parsed JavaScript pattern in RE2's syntax, keeping JavaScript's meaning. */
class Translation {
  constructor(private readonly source: string) {}

  alternatives(alternatives: AST.Alternative[]): string {
    return alternatives
      .map((alternative) => alternative.elements.map((e) => this.element(e)).join(''))
      .join('|');
  }

  private refuse(construct: string): never {
    throw new PatternRefused(this.source, `uses ${construct}, which the linear-time engine cannot run`);
  }

  private element(element: AST.Element): string {
    switch (element.type) {
      case 'Assertion':
        switch (element.kind) {
          case 'start':
            return '^';
          // Without the m flag both mean the whole string's ends, as RE2's do without its m flag.
          case 'end':
            return '$';
          // \w is ASCII in both, so word boundaries agree.
          case 'word':
            return element.negate ? '\\B' : '\\b';
          case 'lookahead':
            return this.refuse(element.negate ? 'a negative lookahead (?!...)' : 'a lookahead (?=...)');
          case 'lookbehind':
            return this.refuse(element.negate ? 'a negative lookbehind (?<!...)' : 'a lookbehind (?<=...)');
        }
        break;
      case 'Quantifier':
        return `(?:${this.element(element.element)})${quantifier(element)}`;
      case 'Group':
        if (element.modifiers !== null) this.refuse('an inline modifier (?ims-ims:...)');
        return `(?:${this.alternatives(element.alternatives)})`;
      // Only whether the pattern occurs is asked: groups need not capture.
      case 'CapturingGroup':
        return `(?:${this.alternatives(element.alternatives)})`;
      case 'Backreference':
        return this.refuse(
          `a backreference (\\${typeof element.ref === 'number' ? element.ref : `k<${element.ref}>`})`,
        );
      case 'Character':
        return codePoint(element.value);
      case 'CharacterSet':
        if (element.kind === 'any') return `[^${rangeList(LINE_TERMINATORS)}]`;
        if (element.kind === 'property') return this.property(element, false);
        return `[${element.negate ? '^' : ''}${rangeList(escapeRanges(element.kind))}]`;
      case 'CharacterClass':
        return this.characterClass(element);
      case 'ExpressionCharacterClass':
        return this.refuse('a set operation in a character class');
    }
    return this.refuse('an unknown construct');
  }

  private characterClass(node: AST.CharacterClass): string {
    if (node.elements.length === 0) {
      // [] matches nothing and [^] anything; RE2 reads "[]" and "[^]" as the start of a class.
      return `[${node.negate ? '' : '^'}${rangeList(EVERYTHING)}]`;
    }
    const parts = node.elements.map((element) => {
      switch (element.type) {
        case 'Character':
          return codePoint(element.value);
        case 'CharacterClassRange':
          return `${codePoint(element.min.value)}-${codePoint(element.max.value)}`;
        case 'CharacterSet':
          if (element.kind === 'property') return this.property(element, true);
          // A negated escape inside a class (`[\S\d]`) is spelled out as the ranges it matches.
          return rangeList(
            element.negate ? complement(escapeRanges(element.kind)) : escapeRanges(element.kind),
          );
        default:
          return this.refuse('a string or set operation in a character class');
      }
    });
    return `[${node.negate ? '^' : ''}${parts.join('')}]`;
  }

  // `inClass`: written inside a character class, where a class cannot nest.
  private property(node: AST.UnicodePropertyCharacterSet, inClass: boolean): string {
    const p = node.negate ? 'P' : 'p';
    if (node.strings) this.refuse(`a property of strings (\\p{${node.key}})`);
    if (node.value === null) {
      // A binary property: RE2 knows Any; ASCII is a range; the others it lacks.
      if (node.key === 'Any') return `\\${p}{Any}`;
      if (node.key === 'ASCII') {
        if (inClass) return rangeList(node.negate ? complement(ASCII) : ASCII);
        return `[${node.negate ? '^' : ''}${rangeList(ASCII)}]`;
      }
      return this.refuse(`the binary property \\${p}{${node.key}}`);
    }
    if (node.key === 'General_Category' || node.key === 'gc') {
      return `\\${p}{${CATEGORY_ALIASES[node.value] ?? node.value}}`;
    }
    if (node.key === 'Script' || node.key === 'sc') return `\\${p}{${node.value}}`;
    return this.refuse(`\\${p}{${node.key}=${node.value}} (script extensions)`);
  }
}

function escapeRanges(kind: 'digit' | 'space' | 'word'): Ranges {
  return kind === 'digit' ? DIGIT : kind === 'space' ? SPACE : WORD;
}

function quantifier({ min, max, greedy }: AST.Quantifier): string {
  let count: string;
  if (min === 0 && max === Infinity) count = '*';
  else if (min === 1 && max === Infinity) count = '+';
  else if (min === 0 && max === 1) count = '?';
  else if (max === Infinity) count = `{${min},}`;
  else if (min === max) count = `{${min}}`;
  else count = `{${min},${max}}`;
  return greedy ? count : `${count}?`;
}
