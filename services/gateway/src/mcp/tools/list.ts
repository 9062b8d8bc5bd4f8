/**
 * The pages of `tools/list`, built once per cached config and served from then on: the result
 * object (the SDK path sends it as it is) and the bytes of a JSON answer carrying it, which the
 * direct answer sends with the request's id spliced in. A list of 1,000 tools is about 570 KiB of
 * JSON; serialising it again for every request was most of what a list cost.
 *
 * Pages hang off the exposure object, like its tool index (`tool-index.ts`): a cached config is
 * immutable and replaced whole, so they go when it goes (an invalidation, a new version, the LRU),
 * and the cache counts their bytes in its budget (`ExposureCache.charge`). A direct-mode page is
 * keyed by its offset; a progressive exposure has one page, its catalog tools. Cursors name the
 * config version they were cut from (`mcp/pagination.ts`).
 */
import { progressiveTools } from '@bindery/contracts';
import { ErrorCode, type ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import type { ControlPlaneClient } from '../../control-plane/client.ts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import { toolIndex } from './tool-index.ts';
import { pageOf, startIn, versionOf } from '../pagination.ts';
import { WireError } from '../wire-error.ts';

export interface ListPage {
  /** The page's result, frozen: shared by every request that lists it. */
  result: ListToolsResult;
  /** `,"result":<result>}`: what follows the id in `{"jsonrpc":"2.0","id":<id>,"result":…}`. */
  tail: Buffer;
  /** What keeping the page costs: its bytes and an estimate of the result object's own heap. */
  bytes: number;
}

/** What precedes the id in every direct answer: JSON.stringify puts `jsonrpc` first, then `id`. */
const HEAD = Buffer.from('{"jsonrpc":"2.0","id":');

/**
 * The heap a page's result object holds beyond what it shares with the config (names, schemas and
 * annotations are the config's own objects): one small object and an array slot per tool.
 */
const RESULT_BYTES_PER_TOOL = 96;
const RESULT_BYTES = 256;

interface Pages {
  /** The page size they were cut with (a setting: constant in a process, but checked). */
  pageSize: number;
  byOffset: Map<number, ListPage>;
}

const built = new WeakMap<Exposure, Pages>();

export interface ListPageOptions {
  pageSize: number;
  client: ControlPlaneClient;
  /** Told the bytes of each page built, to count them with the exposure in the cache. */
  charge(exposure: Exposure, bytes: number): void;
}

/**
 * The page of `exposure`'s tools/list that `cursor` names (the first without one), built on first
 * use. Throws WireError -32602 for a cursor the gateway did not hand out for this list.
 */
export function listPage(exposure: Exposure, cursor: string | undefined, options: ListPageOptions): ListPage {
  const progressive = exposure.kind === 'aei' && exposure.config.aei.exposure_mode === 'progressive';
  let offset = 0;
  if (progressive) {
    // One page and never a nextCursor: no cursor can be one the gateway handed out.
    if (cursor !== undefined) {
      throw new WireError(ErrorCode.InvalidParams, 'this list has one page; list again without a cursor');
    }
  } else if (cursor !== undefined) {
    offset = startIn(exposure, toolIndex(exposure, options.client).list, cursor, (t) => t.name);
  }
  let pages = built.get(exposure);
  if (pages?.pageSize !== options.pageSize) {
    pages = { pageSize: options.pageSize, byOffset: new Map() };
    built.set(exposure, pages);
  }
  let page = pages.byOffset.get(offset);
  if (!page) {
    const result = progressive ? catalogResult(exposure) : directResult(exposure, offset, options);
    const tail = Buffer.from(`,"result":${JSON.stringify(result)}}`);
    page = {
      result,
      tail,
      bytes: tail.length + RESULT_BYTES + RESULT_BYTES_PER_TOOL * result.tools.length,
    };
    pages.byOffset.set(offset, page);
    options.charge(exposure, page.bytes);
  }
  return page;
}

function catalogResult(exposure: Extract<Exposure, { kind: 'aei' }>): ListToolsResult {
  const tools = progressiveTools(exposure.config.aei.catalog_search);
  return freeze({ tools: tools.map((t) => ({ ...t, inputSchema: t.inputSchema as never })) });
}

function directResult(exposure: Exposure, offset: number, options: ListPageOptions): ListToolsResult {
  const { list } = toolIndex(exposure, options.client);
  const page = pageOf(list, offset, options.pageSize, versionOf(exposure), (t) => t.name);
  return freeze({
    tools: page.items.map((t) => ({
      name: t.name,
      ...(t.title !== undefined && { title: t.title }),
      description: t.description,
      inputSchema: t.inputSchema as never,
      ...(t.outputSchema !== undefined && { outputSchema: t.outputSchema as never }),
      ...(t.annotations !== undefined && { annotations: t.annotations }),
      ...(t.icons !== undefined && { icons: t.icons as never[] }),
      ...(t.meta !== undefined && { _meta: t.meta }),
    })),
    ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }),
  });
}

/** The result and its tool entries are shared by every request: nothing may change them. */
function freeze(result: ListToolsResult): ListToolsResult {
  for (const tool of result.tools) Object.freeze(tool);
  Object.freeze(result.tools);
  return Object.freeze(result);
}

/**
 * The chunks of the direct answer to request `id` with this page: the same bytes as
 * `JSON.stringify({jsonrpc: '2.0', id, result})`. The id is serialised here, never copied from
 * the request's text.
 */
export function listAnswer(id: string | number, page: ListPage): readonly Buffer[] {
  return [HEAD, Buffer.from(JSON.stringify(id)), page.tail];
}
