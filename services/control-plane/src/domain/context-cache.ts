/**
 * Parsed contexts kept in memory, keyed by table and pointer and stamped with the table version
 * they were read at. A read checks the version first (one cheap indexed query) and reuses the
 * parsed node when nothing has been written since, instead of fetching and parsing the subtree
 * again. Nodes are never mutated (the engine copies on write), so sharing them is safe; a write
 * by any control plane moves the version, so a stale entry is never used.
 */
import type { JsonValue } from '@bindery/context-ops';
import { LRUCache } from 'lru-cache';
import type { ContextCacheMeter } from '../metrics.ts';

interface Entry {
  version: number;
  node: JsonValue;
  /** The node's JSON text, as read or written: what a query worker thread parses (query-pool.ts). */
  text: string;
}

export class ContextCache {
  readonly #entries: LRUCache<string, Entry>;
  readonly #maxBytes: number;
  readonly #meter: ContextCacheMeter;

  /**
   * `maxBytes` bounds the summed JSON size of cached nodes (their heap cost is a few times that, the
   * text itself included).
   */
  constructor(maxBytes: number, meter: ContextCacheMeter) {
    this.#maxBytes = maxBytes;
    this.#meter = meter;
    this.#entries = new LRUCache<string, Entry>({ maxSize: Math.max(1, maxBytes) });
  }

  /** The node (and its JSON text) cached for this table version, if any. */
  get(tableId: string, pointer: string, version: number): { node: JsonValue; text: string } | undefined {
    const entry = this.#entries.get(`${tableId}\u0000${pointer}`);
    if (entry?.version === version) {
      this.#meter.hit.inc();
      return entry;
    }
    this.#meter.miss.inc();
    return undefined;
  }

  /**
   * Caches a node read (or written) at `version` with its JSON text (kept too: the text is in hand
   * anyway, and re-serialising a large node for a query worker would block the event loop); a node
   * over the whole budget is not kept.
   */
  set(tableId: string, pointer: string, version: number, node: JsonValue, text: string): void {
    const bytes = text.length;
    if (this.#maxBytes <= 0 || bytes > this.#maxBytes) return;
    this.#entries.set(`${tableId}\u0000${pointer}`, { version, node, text }, { size: Math.max(1, bytes) });
    // Entries only come and go here (no TTL): evictions happen inside `set` above.
    this.#meter.entries.set(this.#entries.size);
    this.#meter.bytes.set(this.#entries.calculatedSize);
  }
}
