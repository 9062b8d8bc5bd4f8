// Pins that no path an agent sends can leave its context or reach object internals: RFC 6901
// syntax (leading "/", "~" escapes), climbing tokens, prototype-pollution tokens, canonical array
// indexes, and the same rules applied through every operation that takes a pointer or a key.
import { describe, expect, it } from 'vitest';
import { executeRead, executeWrite, formatPointer, parsePointer } from '../src/index.ts';
import { crm, opError } from './fixtures.ts';

describe('parsePointer / formatPointer (RFC 6901)', () => {
  it('parses the root, plain tokens, empty tokens and both escapes', () => {
    expect(parsePointer('')).toEqual([]);
    expect(parsePointer('/customers/0/name')).toEqual(['customers', '0', 'name']);
    expect(parsePointer('/')).toEqual(['']);
    expect(parsePointer('/a~1b/m~0n')).toEqual(['a/b', 'm~n']);
    // ~1 is decoded before ~0, so "~01" is the literal "~1", not "/".
    expect(parsePointer('/~01')).toEqual(['~1']);
  });

  it('formats tokens back to the same pointer', () => {
    expect(formatPointer([])).toBe('');
    expect(formatPointer(['a/b', 'm~n', '0'])).toBe('/a~1b/m~0n/0');
    for (const pointer of ['', '/', '/a~1b/m~0n', '/~01', '/x/-/y']) {
      expect(formatPointer(parsePointer(pointer))).toBe(pointer);
    }
  });

  it('refuses a pointer without a leading slash', () => {
    const error = opError(() => parsePointer('customers/0'));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ pointer: 'customers/0', reason: 'missing_leading_slash' });
  });

  it.each(['/a~', '/a~2', '/~x/b', '/ok/~'])('refuses the bad escape in %s', (pointer) => {
    const error = opError(() => parsePointer(pointer));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.reason).toBe('bad_escape');
    expect(error.message).toContain('"~" must be followed by 0');
  });

  it.each(['/..', '/customers/../settings', '/.', '/customers/./0'])(
    'refuses the climbing token in %s',
    (pointer) => {
      const error = opError(() => parsePointer(pointer));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details?.reason).toBe('climbing_token');
      expect(error.message).toContain('cannot climb out');
    },
  );

  it.each(['/__proto__', '/a/constructor', '/constructor/prototype', '/x/__proto__/polluted'])(
    'refuses the reserved token in %s',
    (pointer) => {
      const error = opError(() => parsePointer(pointer));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details?.reason).toBe('reserved_token');
    },
  );

  it('judges tokens after unescaping, and knows no escapes beyond ~0 and ~1', () => {
    // "~1" turns into "/" inside one token: "/..~1x" is the single key "../x", not a climb.
    expect(parsePointer('/..~1x')).toEqual(['../x']);
    // "~2e~2e" is not an escape RFC 6901 knows: refused as a bad escape, never decoded to "..".
    expect(opError(() => parsePointer('/~2e~2e')).details?.reason).toBe('bad_escape');
    // Percent-encoding means nothing in a JSON Pointer string: "%2e%2e" is an ordinary key.
    expect(parsePointer('/%2e%2e')).toEqual(['%2e%2e']);
  });
});

describe('pointer arguments of every operation', () => {
  const climbing = '/../secrets';
  const cases: [string, Record<string, unknown>][] = [
    ['create', { path: climbing, value: 1 }],
    ['update', { path: climbing, value: 1 }],
    ['delete', { path: climbing }],
    ['move', { from: climbing, to: '/x' }],
    ['move', { from: '/count', to: climbing }],
    ['copy', { from: climbing, to: '/x' }],
    ['copy', { from: '/count', to: climbing }],
  ];

  it.each(cases)('%s refuses a climbing path in %j and leaves nothing changed', (op, args) => {
    const context = crm();
    const error = opError(() => executeWrite(op as 'create', context, args, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toMatchObject({ token: '..', reason: 'climbing_token', pointer: climbing });
    expect(context).toEqual(crm());
  });

  it('names the argument that carried the bad pointer', () => {
    const error = opError(() => executeWrite('move', crm(), { from: '/count', to: 'settings' }, {}));
    expect(error.details).toEqual({ argument: 'to', pointer: 'settings', reason: 'missing_leading_slash' });
    expect(error.message).toContain('`to`');
  });

  it('never lets __proto__ reach Object.prototype through create, update, copy or move', () => {
    const attempts: [string, Record<string, unknown>][] = [
      ['update', { path: '/__proto__/polluted', value: true }],
      ['update', { path: '/customers/0/__proto__', value: { polluted: true } }],
      ['create', { path: '/__proto__', key: 'polluted', value: true }],
      ['create', { path: '/settings', key: '__proto__', value: { polluted: true } }],
      ['copy', { from: '/settings', to: '/__proto__' }],
      ['move', { from: '/settings', to: '/constructor/prototype/polluted' }],
    ];
    for (const [op, args] of attempts) {
      const error = opError(() => executeWrite(op as 'create', crm(), args, {}));
      expect(error.code).toBe('VALIDATION_FAILED');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a value carrying a "__proto__" key, however deep', () => {
    const value = JSON.parse('{"name":"x","nested":[{"__proto__":{"polluted":true}}]}') as unknown;
    const error = opError(() => executeWrite('create', crm(), { path: '/customers', value }, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ argument: 'value', pointer: '/nested/0' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses reserved and climbing names as the `key` of create', () => {
    for (const key of ['constructor', 'prototype', '..', '.']) {
      const error = opError(() => executeWrite('create', crm(), { path: '/settings', key, value: 1 }, {}));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details?.argument).toBe('key');
    }
  });

  it.each(['01', '-1', '1.0', ' 1', '1e0', '0x1'])('refuses the non-canonical array index %s', (token) => {
    const error = opError(() => executeWrite('update', crm(), { path: `/customers/${token}`, value: 1 }, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toMatchObject({ argument: 'path', token, reason: 'bad_array_index' });
  });

  it('accepts "-" only as the last token of a move/copy target inside an array', () => {
    expect(
      opError(() => executeWrite('update', crm(), { path: '/customers/-', value: 1 }, {})).details,
    ).toMatchObject({
      token: '-',
      reason: 'append_token',
    });
    expect(
      opError(() => executeWrite('copy', crm(), { from: '/customers/-', to: '/x' }, {})).details,
    ).toMatchObject({
      argument: 'from',
      reason: 'append_token',
    });
    expect(
      opError(() => executeWrite('copy', crm(), { from: '/count', to: '/customers/-/x' }, {})).details,
    ).toMatchObject({
      argument: 'to',
      reason: 'append_token',
    });
    const appended = executeWrite('copy', crm(), { from: '/count', to: '/customers/-' }, {});
    expect(appended.result).toEqual({ from: '/count', to: '/customers/3' });
  });

  it('treats "-" as an ordinary key inside an object', () => {
    const written = executeWrite('copy', crm(), { from: '/count', to: '/settings/-' }, {});
    expect(written.result).toEqual({ from: '/count', to: '/settings/-' });
    expect((written.context as { settings: Record<string, unknown> }).settings['-']).toBe(3);
  });
});

describe('JMESPath cannot reach object internals', () => {
  it('answers null for prototype members that are not own keys', () => {
    for (const query of [
      'constructor',
      'toString',
      '__proto__',
      'customers[0].constructor',
      'hasOwnProperty',
    ]) {
      expect(executeRead('query', crm(), { query }, {}).result).toBeNull();
    }
  });

  it('still reads own keys that happen to share a prototype member name', () => {
    const context = { constructor: 'Ferrari', drivers: [{ constructor: 'McLaren' }] };
    expect(executeRead('query', context, { query: 'constructor' }, {}).result).toBe('Ferrari');
    expect(executeRead('query', context, { query: 'drivers[].constructor' }, {}).result).toEqual(['McLaren']);
  });

  it('refuses a multiselect that would build a "__proto__" key', () => {
    const error = opError(() => executeRead('query', crm(), { query: '{__proto__: settings}' }, {}));
    expect(error.code).toBe('INVALID_QUERY');
  });
});
