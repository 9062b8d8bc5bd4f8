// Pins what deepFreeze promises to the validators (freeze.ts): a frozen schema or config is
// remembered by the object (the same validator, the same checked copy), an unfrozen one is read
// afresh every time (a change to it counts), and a bad frozen config is refused every time.
import { describe, expect, it } from 'vitest';
import { OpError, compileUserSchema, deepFreeze, validateAdiConfig } from '../src/index.ts';

describe('frozen schemas and configs', () => {
  it('a frozen schema keeps its validator; an unfrozen one that changed gets a new one', () => {
    const frozen = deepFreeze({ type: 'object', properties: { n: { type: 'integer' } } });
    expect(compileUserSchema(frozen)).toBe(compileUserSchema(frozen));
    expect(compileUserSchema(frozen)({ n: 1 })).toBe(true);
    expect(compileUserSchema(frozen)({ n: 'x' })).toBe(false);
    const open: Record<string, unknown> = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(compileUserSchema(open)({ n: 'x' })).toBe(false);
    open.properties = { n: { type: 'string' } };
    expect(compileUserSchema(open)({ n: 'x' })).toBe(true);
  });

  it('a frozen config is checked once, answers a frozen copy, and a bad one is refused each time', () => {
    const config = deepFreeze({ preview_keys: ['id', 'name'] });
    const checked = validateAdiConfig('preview', config);
    expect(checked).toEqual({ preview_keys: ['id', 'name'] });
    expect(checked).not.toBe(config);
    expect(Object.isFrozen(checked)).toBe(true);
    expect(validateAdiConfig('preview', config)).toBe(checked);
    const bad = deepFreeze({ nope: true });
    for (let i = 0; i < 2; i += 1) expect(() => validateAdiConfig('update', bad)).toThrow(OpError);
  });
});
