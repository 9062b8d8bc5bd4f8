// Seed 004's routing rules on a tool index built by hand (the function is pure): exact names win,
// upstream tools before native ones whatever a native hint says, a server hint (id, slug, prefix,
// `mcp:` form, any case) restricts, unknown hints are ignored and reported, ambiguity lists names.
import { describe, expect, it } from 'vitest';
import { routeTool, sourceHintOf, unknownToolRefusal } from '../src/mcp/tools/source-routing.ts';
import type { ExposedTool, ToolIndex } from '../src/mcp/tools/tool-index.ts';

function tool(name: string, originalName: string, server?: { id: string; slug: string; prefix: string }) {
  return {
    name,
    originalName,
    source: server ? `mcp:${server.slug}` : 'native',
    ...(server && { serverNames: [server.id, server.slug, server.prefix] }),
  } as ExposedTool;
}

function index(tools: ExposedTool[]): ToolIndex {
  return { list: tools, byName: new Map(tools.map((t) => [t.name, t])) };
}

const excel = { id: 'ups_1', slug: 'excel', prefix: 'xl' };
const sheets = { id: 'ups_2', slug: 'sheets', prefix: 'sh' };
const tools = index([
  tool('xl_read_data', 'read_data', excel),
  tool('read_rows', 'read_data'),
  tool('lookup', 'lookup'),
  tool('find_x', 'finder'),
  tool('sh_write', 'write', sheets),
]);
const nameOf = (routed: ReturnType<typeof routeTool>) => ('tool' in routed ? routed.tool.name : routed);

describe('routeTool', () => {
  it('takes an exact exposed name whatever the hint', () => {
    expect(nameOf(routeTool(tools, 'read_rows', 'excel'))).toBe('read_rows');
    expect(nameOf(routeTool(tools, 'xl_read_data', 'native'))).toBe('xl_read_data');
  });

  it('looks bare names up among upstream tools first, even with a native hint', () => {
    for (const hint of [undefined, 'native', 'Bindery', 'appflowy', '  ']) {
      expect(nameOf(routeTool(tools, 'read_data', hint))).toBe('xl_read_data');
    }
    expect(nameOf(routeTool(tools, 'write', undefined))).toBe('sh_write');
  });

  it('restricts to the server a hint names, by id, slug or prefix, in any case and as mcp:name', () => {
    for (const hint of ['ups_1', 'excel', 'XL', 'mcp:excel', 'MCP:Excel']) {
      expect(nameOf(routeTool(tools, 'read_data', hint))).toBe('xl_read_data');
    }
    expect(routeTool(tools, 'read_data', 'sheets')).toEqual({ notFound: true, server: 'mcp:sheets' });
    expect(routeTool(tools, 'finder', 'excel')).toEqual({ notFound: true, server: 'mcp:excel' });
    expect(nameOf(routeTool(tools, 'finder', 'nonsense'))).toBe('find_x');
  });

  it('falls back to native tools, and reports an unknown hint it ignored', () => {
    expect(routeTool(tools, 'lookup', 'nonsense')).toMatchObject({
      tool: { name: 'lookup' },
      ignoredHint: 'nonsense',
    });
    expect(routeTool(tools, 'lookup', 'native')).toEqual({
      tool: tools.byName.get('lookup'),
      ignoredHint: undefined,
    });
    expect(routeTool(tools, 'nothing', 'nonsense')).toEqual({ notFound: true, ignoredHint: 'nonsense' });
  });

  it('refuses a name two tools of the same tier have, listing both', () => {
    const twins = index([
      tool('a_read', 'read', excel),
      tool('b_read', 'read', sheets),
      tool('read_n', 'read'),
    ]);
    const routed = routeTool(twins, 'read', undefined);
    expect(routed).toEqual({ ambiguous: ['a_read', 'b_read'], ignoredHint: undefined });
    const refusal = unknownToolRefusal('read', routed, () => []);
    expect(refusal).toMatchObject({ ambiguous: true, details: { candidates: ['a_read', 'b_read'] } });
    expect(refusal.message).toContain('"a_read", "b_read"');
    expect(nameOf(routeTool(twins, 'read', 'sheets'))).toBe('b_read');
  });

  it('suggests close names for an unknown one, naming the server a hint restricted to', () => {
    const refusal = unknownToolRefusal('lookups', routeTool(tools, 'lookups', 'sh'), () =>
      tools.list.map((t) => t.name),
    );
    expect(refusal.message).toBe('unknown tool "lookups" on mcp:sheets; did you mean "lookup"?');
  });
});

describe('sourceHintOf', () => {
  it('reads a string hint of at most 128 characters from _meta, and nothing else', () => {
    expect(sourceHintOf({ _meta: { 'bindery/source': 'excel' } }, 'bindery/source')).toBe('excel');
    expect(sourceHintOf({ _meta: { 'bindery/source': 7 } }, 'bindery/source')).toBeUndefined();
    expect(sourceHintOf({ _meta: { 'bindery/source': 'x'.repeat(129) } }, 'bindery/source')).toBeUndefined();
    expect(sourceHintOf({}, 'bindery/source')).toBeUndefined();
  });
});
