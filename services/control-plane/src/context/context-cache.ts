/**
 * Parsed contexts kept in memory, keyed by table and pointer and stamped with the table version
 * they hold. The store (context-store.ts) reuses a node of the table's latest version as is, and
 * brings an older one forward by the patches written since, instead of fetching and parsing the
 * subtree again. Nodes are never mutated (the engine copies on write, and so does replaying
 * patches), so sharing them is safe.
 */
import type { JsonValue } from '@bindery/context-ops';
import { LRUCache } from 'lru-cache';
import type { ContextCacheMeter } from '../metrics.ts';

/** A context node at a version, with its JSON text made when first needed. */
export class CachedContext {
  #text: string | undefined;

  constructor(
    readonly version: number,
    readonly node: JsonValue,
    text: string | undefined,
    /** Its JSON size: exact when read, estimated after patches (the cache's budget counts it). */
    readonly bytes: number,
  ) {
    this.#text = text;
  }

  /** The node's JSON text if it is at hand already (read, or made for a worker thread). */
  get knownText(): string | undefined {
    return this.#text;
  }

  /**
   * The node's JSON text (what a query worker thread parses, query-pool.ts): as read from the
   * database, or serialised once on first use after a write.
   */
  text(): string {
    this.#text ??= JSON.stringify(this.node);
    return this.#text;
  }
}

export class ContextCache {
  readonly #entries: LRUCache<string, CachedContext>;
  readonly #maxBytes: number;
  readonly #meter: ContextCacheMeter;

  /**
   * `maxBytes` bounds the summed JSON size of cached nodes (their heap cost is a few times that, the
   * text itself included).
   */
  constructor(maxBytes: number, meter: ContextCacheMeter) {
    this.#maxBytes = maxBytes;
    this.#meter = meter;
    this.#entries = new LRUCache<string, CachedContext>({ maxSize: Math.max(1, maxBytes) });
  }

  /** The node cached for this context, whatever its version. */
  get(tableId: string, pointer: string): CachedContext | undefined {
    return this.#entries.get(key(tableId, pointer));
  }

  /**
   * How a read was served: `hit` (the cached node was the latest), `forward` (brought forward by
   * patches), `miss` (read from the database).
   */
  counted(result: 'hit' | 'forward' | 'miss'): void {
    this.#meter[result].inc();
  }

  /**
   * Caches a node read (or written) at `version`, with its JSON text when at hand; answers it as a
   * CachedContext. A node over the whole budget is not kept.
   */
  set(
    tableId: string,
    pointer: string,
    version: number,
    node: JsonValue,
    text: string | undefined,
    bytes = text?.length ?? 0,
  ): CachedContext {
    const entry = new CachedContext(version, node, text, Math.max(1, bytes));
    if (this.#maxBytes <= 0 || entry.bytes > this.#maxBytes) return entry;
    const current = this.#entries.get(key(tableId, pointer));
    // A slower read of an older version never replaces a newer node.
    if (current !== undefined && current.version > version) return entry;
    this.#entries.set(key(tableId, pointer), entry, { size: entry.bytes });
    // Entries only come and go here (no TTL): evictions happen inside `set` above.
    this.#meter.entries.set(this.#entries.size);
    this.#meter.bytes.set(this.#entries.calculatedSize);
    return entry;
  }
}

function key(tableId: string, pointer: string): string {
  return `${tableId}\u0000${pointer}`;
}
