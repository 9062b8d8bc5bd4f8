// Pins the URI template matcher upstream resources are read through (RFC 6570, linear in the URI):
// the templates MCP servers list match as their own routers read them (simple, reserved, path,
// label, query and fragment expressions); a URI that does not fit is refused; a template that
// cannot be read one way (two expressions side by side, an unclosed brace, an unknown operator)
// does not compile; and a template built to make a backtracking matcher crawl answers at once for
// the longest URI an agent may send.
import { describe, expect, it } from 'vitest';
import { compileUriTemplate, matchesUriTemplate, type UriTemplateMatcher } from '../src/uri-template.ts';

function compiled(template: string): UriTemplateMatcher {
  const result = compileUriTemplate(template);
  if ('problem' in result) throw new Error(`${template}: ${result.problem}`);
  return result;
}

describe('matching', () => {
  it('reads the templates servers list', () => {
    const cases: [string, string, boolean][] = [
      ['test://template/{id}/data', 'test://template/123/data', true],
      ['test://template/{id}/data', 'test://template/1/2/data', false],
      ['test://template/{id}/data', 'test://template//data', false],
      ['test://items/{id}', 'test://items/42', true],
      ['test://items/{id}', 'test://items/42/more', false],
      ['file:///{+path}', 'file:///home/ada/notes.md', true],
      ['repo://{owner}/{repo}/blob{/path*}', 'repo://ada/engine/blob/src/main.rs', true],
      ['repo://{owner}/{repo}/blob{/path*}', 'repo://ada/engine/blob', true],
      ['search://q{?query,limit}', 'search://q?query=owls&limit=5', true],
      ['search://q{?query,limit}', 'search://qx', false],
      ['doc://{name}{.ext}', 'doc://readme.md', true],
      ['page://{id}{#section}', 'page://7#intro', true],
      ['doc://{name}{.ext}', 'doc://x.y/z', false],
      ['search://q{?query}', 'search://q?anything#x', false],
      ['search://q{?query}', 'search://q?other=1', false],
      ['repo://r{/path*}', 'repo://r/a/b?x', false],
      ['code://{id:3}', 'code://abcd', false],
      ['code://{id:3}', 'code://abc', true],
      ['plain://fixed', 'plain://fixed', true],
      ['plain://fixed', 'plain://fixed/', false],
    ];
    for (const [template, uri, expected] of cases) {
      expect([template, uri, matchesUriTemplate(compiled(template), uri)]).toEqual([template, uri, expected]);
    }
  });
});

describe('compiling', () => {
  it('refuses what cannot be read one way, or is not RFC 6570', () => {
    for (const template of ['a{+b}{+c}', 'x{id', 'x}y', 'x{!id}', 'x{id name}', '', 'x{'.repeat(1)]) {
      expect(compileUriTemplate(template), template).toHaveProperty('problem');
    }
    expect(compileUriTemplate(`x${'{a}-'.repeat(33)}`)).toMatchObject({
      problem: expect.stringContaining('at most 32 expressions'),
    });
  });

  it('answers a template built for backtracking, on the longest URI, without crawling', () => {
    const matcher = compiled(`a${'{+b}x'.repeat(30)}z`);
    const uri = `a${'x'.repeat(4094)}y`;
    expect(matchesUriTemplate(matcher, uri)).toBe(false);
    expect(matchesUriTemplate(matcher, `a${'bx'.repeat(30)}z`)).toBe(true);
  });
});
