// Pins what a server's resource and prompt snapshot keeps of what it lists (pure functions, no
// database): text a JSON column refuses (a NUL, half a surrogate pair, also where a cut would
// split a pair) never reaches the stored snapshot; a URI or name that cannot be stored as it is
// is skipped; a prompt whose required argument cannot be kept is not served; the snapshot stops
// at its size budget with a warning.
import type { Prompt, Resource } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { SNAPSHOT_MAX_CHARS, promptSnapshot, resourceSnapshot } from '../src/kinds/mcp/upstream-snapshot.ts';

/** True when `text` has no NUL and no unpaired surrogate (what a JSONB column stores). */
const storable = (text: string) =>
  // eslint-disable-next-line no-control-regex -- the NUL is what is looked for
  !/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

describe('resource snapshots', () => {
  it('cut long text without splitting a pair, and replace NULs and lone halves', () => {
    const warnings: string[] = [];
    // The emoji's first half lands right where the cut would end.
    const long = `${'a'.repeat(1998)}😀${'b'.repeat(200)}`;
    const [entry] = resourceSnapshot(
      {
        items: [{ uri: 'test://one', name: 'one\u0000', description: long, title: 'x\uD800y' } as Resource],
        truncated: false,
      },
      warnings,
    );
    for (const text of [entry!.name, entry!.description!, entry!.title!]) expect(storable(text)).toBe(true);
    expect(entry!.description!.length).toBeLessThanOrEqual(2000);
    expect(entry!.name).toBe('one\uFFFD');
    expect(entry!.title).toBe('x\uFFFDy');
  });

  it('skip a URI that cannot be stored as it is, and say how many were withheld for holding a secret', () => {
    const warnings: string[] = [];
    const entries = resourceSnapshot(
      {
        items: [
          { uri: 'test://bad\u0000', name: 'bad' },
          { uri: 'test://good', name: 'good' },
        ] as Resource[],
        truncated: false,
        withheld: 2,
      },
      warnings,
    );
    expect(entries.map((e) => e.uri)).toEqual(['test://good']);
    expect(warnings.join('\n')).toMatch(/2 resource\(s\) whose URI holds one of the server's secrets/);
    expect(warnings.join('\n')).toMatch(/1 resource\(s\) with an empty URI/);
  });

  it('stop at the size budget, with a warning', () => {
    const warnings: string[] = [];
    const items = Array.from({ length: 1000 }, (_, i) => ({
      uri: `test://r${i}`,
      name: `r${i}`,
      description: 'd'.repeat(1900),
    })) as Resource[];
    const entries = resourceSnapshot({ items, truncated: false }, warnings);
    expect(entries.length).toBeLessThan(1000);
    expect(JSON.stringify(entries).length).toBeLessThanOrEqual(SNAPSHOT_MAX_CHARS + entries.length + 2);
    expect(warnings.join('\n')).toMatch(/more than 1048576 characters; the rest were skipped/);
  });
});

describe('prompt snapshots', () => {
  it('do not serve a prompt whose required argument cannot be kept; drop optional ones with a warning', () => {
    const warnings: string[] = [];
    const entries = promptSnapshot(
      {
        items: [
          { name: 'broken', arguments: [{ name: 'who\u0000', required: true }] },
          { name: 'fine', arguments: [{ name: 'topic' }, { name: 'topic' }, { name: '' }] },
          { name: 'bad\uDC00name', arguments: [] },
        ] as Prompt[],
        truncated: false,
      },
      warnings,
    );
    expect(entries).toEqual([{ name: 'fine', arguments: [{ name: 'topic' }] }]);
    expect(warnings.join('\n')).toMatch(/prompt "broken" was skipped: a required argument/);
    expect(warnings.join('\n')).toMatch(/prompt "fine": 2 optional argument\(s\)/);
    expect(warnings.join('\n')).toMatch(/holds a NUL or a broken character was skipped/);
  });
});
