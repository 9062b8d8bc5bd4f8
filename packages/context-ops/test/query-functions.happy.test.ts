// Pins that the budgeted interpreter answers legitimate queries exactly as the JMESPath library does
// (a corpus over every function and node type, compared with the library's own answers), that the
// few deliberate differences follow the JMESPath Community specification, and that every library
// function is either replaced by a bounded version or reviewed and metered as it is.
import { getRegisteredFunctions, search } from '@jmespath-community/jmespath';
import { describe, expect, it } from 'vitest';
import { executeRead, type JsonValue } from '../src/index.ts';
import { BOUNDED_FUNCTIONS, FUNCTION_TABLE, METERED_FUNCTIONS } from '../src/jmespath/functions.ts';

const DATA = {
  people: [
    { name: 'Ada', age: 36, city: 'London', tags: ['math', 'code'], note: '  first  ' },
    { name: 'Grace', age: 45, city: 'New York', tags: ['navy', 'code'], note: 'cobol\n' },
    { name: 'Linus', age: 21, city: 'Helsinki', tags: [], note: 'xxkernelxx' },
    { name: 'Émile', age: 36, city: 'Paris', tags: ['😀'], note: '' },
  ],
  matrix: [
    [1, 2],
    [3, [4, 5]],
  ],
  words: 'all chars',
  csv: 'average|-|min|-|max|-|mean|-|median',
  emoji: 'ab😀c',
  empty: {},
  nothing: null,
  flags: { on: true, off: false },
} as const;

function budgeted(expression: string, data: JsonValue = DATA as unknown as JsonValue): JsonValue {
  return executeRead('query', data, { query: expression }, {}).result;
}

const CORPUS = [
  // node types
  'people[0].name',
  'people[-1].city',
  'people[*].name',
  'people[?age > `30`].name',
  'people[?age == `36`] | [].name',
  "people[?contains(tags, 'code')].{n: name, a: age}",
  'people[].tags[]',
  'matrix[]',
  'matrix[][]',
  'people[1:3].name',
  'people[::-1].name',
  'words[2:5]',
  'words[::-2]',
  'emoji[1:3]',
  'flags.*',
  'flags.on && flags.off',
  'flags.on || flags.off',
  '!flags.off',
  'nothing || empty || `"fallback"`',
  'empty && `1`',
  'people[0].age > `30` ? `"old"` : `"young"`',
  '[people[0].name, people[1].name]',
  '{first: people[0].name, count: length(people)}',
  'people[0].age + people[1].age * `2` - `1`',
  'people[0].age / `8`',
  'people[0].age // `8`',
  'people[0].age % `8`',
  '-people[0].age',
  'people[0] == people[0]',
  'people[0] != people[1]',
  'matrix == `[[1, 2], [3, [4, 5]]]`',
  '$.words',
  'let $p = people[0] in people[?age == $p.age].name',
  // functions
  'abs(`-3`)',
  'avg(people[].age)',
  'ceil(`1.2`)',
  'floor(`1.8`)',
  "contains(words, 'char')",
  "ends_with(words, 'rs')",
  "starts_with(words, 'all')",
  "find_first(words, 'a')",
  "find_last(words, 'a', `1`)",
  "from_items([['a', `1`], ['b', `2`]])",
  'group_by(people, &city)',
  'items(flags)',
  "join(', ', people[].name)",
  'keys(flags)',
  'values(flags)',
  'length(people)',
  'length(emoji)',
  'length(flags)',
  "lower('ÀB')",
  "upper('straße')",
  'map(&name, people)',
  'max(people[].age)',
  'min(people[].age)',
  'max(people[].name)',
  'min(people[].name)',
  'max_by(people, &age).name',
  'min_by(people, &age).name',
  'merge(flags, `{"extra": 1}`)',
  'not_null(nothing, people[0].name)',
  "pad_left('7', `3`, '0')",
  "pad_right('a', `3`)",
  "pad_left('', `3`)",
  "replace(csv, '|-|', ', ')",
  "replace(csv, '|-|', ', ', `2`)",
  "replace('aabaaabaaaab', 'aa', '-', `3`)",
  "replace(words, '', '.')",
  "replace(words, 'a', 'b', `0`)",
  'reverse(emoji)',
  'reverse(people[].name)',
  'sort(people[].name)',
  "sort(['b', 'a', 'B', '😀', 'é'])",
  'sort_by(people, &age)[].name',
  'sort_by(people, &name)[].name',
  "split(csv, '|-|')",
  "split(csv, '|-|', `2`)",
  "split(words, '')",
  "split('a,b', ',', `5`)",
  'sum(people[].age)',
  'to_array(people[0].name)',
  'to_number(`"42"`)',
  'to_string(people[0])',
  'to_string(words)',
  'trim(people[0].note)',
  "trim_left(people[2].note, 'x')",
  "trim_right(people[2].note, 'x')",
  'trim_right(people[1].note)',
  'type(people)',
  'type(flags.on)',
  'zip(people[].name, people[].age)',
];

describe('legitimate queries answer as the library does', () => {
  it.each(CORPUS)('%s', (expression) => {
    expect(budgeted(expression)).toEqual(search(DATA as unknown as JsonValue, expression));
  });
});

describe('where the bounded functions follow the specification instead of the library', () => {
  it('sort orders numbers by value (the library compares them as text)', () => {
    expect(budgeted('sort(@)', [10, 9, 1, 100])).toEqual([1, 9, 10, 100]);
    expect(search([10, 9, 1, 100], 'sort(@)')).toEqual([1, 10, 100, 9]);
  });

  it('replace with a count replaces occurrences in the original string only', () => {
    expect(budgeted("replace('aaa', 'a', 'ba', `2`)")).toBe('babaa');
    expect(search({}, "replace('aaa', 'a', 'ba', `2`)")).toBe('bbaaa');
  });

  it('max_by and min_by compare string keys, and answer an item that is falsy', () => {
    expect(budgeted('max_by(people, &name).name')).toBe('Émile');
    expect(budgeted('min_by(people, &city).name')).toBe('Linus');
    expect(budgeted('max_by(@, &@)', [0, -1])).toBe(0);
  });

  it('expressions passed to functions see the variables of an enclosing let', () => {
    expect(budgeted('let $x = `1` in map(&$x, `[1, 2]`)')).toEqual([1, 1]);
    expect(budgeted('let $min = `30` in sort_by(people[?age > $min], &age)[].name')).toEqual([
      'Ada',
      'Émile',
      'Grace',
    ]);
  });

  it('group_by accepts keys named like Object.prototype members', () => {
    expect(budgeted('group_by(@, &k)', [{ k: 'constructor' }, { k: 'toString' }])).toEqual({
      constructor: [{ k: 'constructor' }],
      toString: [{ k: 'toString' }],
    });
  });
});

describe('raw string literals, as JEP 12a of the Community specification writes them', () => {
  // JEP 12, which 12a replaced, kept both backslashes of \\; 12a (and the library) make it one,
  // so a raw string can end in a backslash.
  it("\\' is a quote and \\\\ one backslash; any other backslash is kept", () => {
    expect(budgeted(String.raw`'foo\'bar'`)).toBe("foo'bar");
    expect(budgeted(String.raw`'foo\\bar'`)).toBe(String.raw`foo\bar`);
    expect(budgeted(String.raw`'\\'`)).toBe('\\');
    expect(budgeted(String.raw`'C:\\Users\\'`)).toBe('C:\\Users\\');
    expect(budgeted(String.raw`'\z\n'`)).toBe(String.raw`\z\n`);
  });
});

describe('the function table', () => {
  it('covers every library function: replaced by a bounded version, or reviewed and metered as is', () => {
    const library = getRegisteredFunctions().sort();
    const reviewed = [...Object.keys(BOUNDED_FUNCTIONS), ...METERED_FUNCTIONS].sort();
    expect(reviewed).toEqual(library);
    expect(Object.keys(FUNCTION_TABLE).sort()).toEqual(library);
  });
});
