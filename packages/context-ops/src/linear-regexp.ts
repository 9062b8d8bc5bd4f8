/**
 * The regular expression engine for `pattern` and `patternProperties` in JSON Schemas that users
 * write (binding overrides, item schemas) and agents' values are checked against. JavaScript's
 * RegExp backtracks: `^(a+)+$` against 26 "a"s and a "!" took a second, and each more "a" doubles
 * it, on the event loop every tenant shares. RE2 (re2js, a pure JavaScript port) matches in time
 * linear in the input. It lacks lookaround and backreferences; a schema using them is refused when
 * it is saved, with the engine's message.
 */
import type { CodeOptions } from 'ajv/dist/2020.js';
import { RE2JS } from 're2js';

type RegExpEngine = NonNullable<CodeOptions['regExp']>;

/** Ajv's `code.regExp` option: compiles a schema pattern with RE2 (ajv passes the `u` flag; RE2 always reads code points). */
export const linearRegExp: RegExpEngine = Object.assign((pattern: string) => RE2JS.compile(pattern), {
  code: 'RE2JS.compile',
});
