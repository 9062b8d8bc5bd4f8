// Pins how a table's rules judge a write from its edits (context-ops' own diff): replacing array
// items under a path protected from deletion removes them even when the array grows, moving or
// reordering them does not, one of two equal items removed is a removal; removing a container
// counts its members against max_items_per_change; rule paths spell array indexes as the data does,
// and a context path spelt "-1" is judged at the index it reaches.
import { diffChanges, type JsonValue } from '@bindery/context-ops';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.ts';
import { canonicalPath, compileRules, ruleVerdicts, type CompiledRules } from '../src/context/table-rules.ts';

function verdictsOf(
  rules: CompiledRules,
  before: JsonValue,
  after: JsonValue,
  at: string[] = [],
  by: 'tool' | 'agent' | 'person' = 'tool',
) {
  const changes = diffChanges(before, after, at);
  return ruleVerdicts(rules, { at, before, after, changes, by });
}

const broken = (verdicts: { ok: boolean; rule: string }[]) =>
  verdicts.filter((v) => !v.ok).map((v) => v.rule);

const A = { id: 1, name: 'a', secret: 's' };
const B = { id: 2, name: 'b' };
const keep = compileRules({ protect: [{ path: '/customers', deny: ['delete'] }] });

describe('protect … delete', () => {
  it('refuses items replaced by others, even when the array grows', () => {
    expect(broken(verdictsOf(keep, { customers: [A, B] }, { customers: [{}, {}, {}] }))).toEqual(['protect']);
  });

  it('lets items move, be reordered or gain fields, and new ones come in front', () => {
    expect(broken(verdictsOf(keep, { customers: [A, B] }, { customers: [B, A] }))).toEqual([]);
    expect(broken(verdictsOf(keep, { customers: [A, B] }, { customers: [{ ...A, vip: true }, B] }))).toEqual(
      [],
    );
    expect(broken(verdictsOf(keep, { customers: [A, B] }, { customers: [{ id: 0 }, A, B] }))).toEqual([]);
  });

  it('counts equal items one by one', () => {
    expect(broken(verdictsOf(keep, { customers: [B, B] }, { customers: [B] }))).toEqual(['protect']);
  });

  it('refuses a key removed under it, whatever path the write ran at', () => {
    expect(broken(verdictsOf(keep, { customers: [A, B] }, [{ id: 1, name: 'a' }, B], ['customers']))).toEqual(
      ['protect'],
    );
    expect(broken(verdictsOf(keep, { customers: [A, B], other: 1 }, { other: 1 }))).toEqual(['protect']);
  });
});

describe('max_items_per_change', () => {
  it('counts the members of a removed container', () => {
    const cap = compileRules({ max_items_per_change: 2 });
    expect(broken(verdictsOf(cap, { customers: [A, B, B] }, {}))).toEqual(['max_items_per_change']);
    expect(broken(verdictsOf(cap, { customers: [A, B] }, {}))).toEqual([]);
  });
});

describe('rule paths', () => {
  it('spell array indexes as the data does', () => {
    for (const path of ['/customers/-1', '/customers/01', '/customers/+1']) {
      expect(() => compileRules({ person_only: [path] })).toThrow(DomainError);
    }
    expect(() => compileRules({ person_only: ['/customers/1', '/settings/x-1'] })).not.toThrow();
  });

  it('judge a context spelt with "-1" at the index it reaches', async () => {
    const data = { customers: [A, B] };
    const read = async (prefix: string[]) => (prefix.length === 1 ? data.customers : data) as JsonValue;
    const at = await canonicalPath(['customers', '-1'], read);
    expect(at).toEqual(['customers', '1']);
    const rules = compileRules({ person_only: ['/customers/1'] });
    expect(broken(verdictsOf(rules, B, { ...B, name: 'x' }, at))).toEqual(['person_only']);
    expect(broken(verdictsOf(rules, B, { ...B, name: 'x' }, at, 'person'))).toEqual([]);
  });
});
