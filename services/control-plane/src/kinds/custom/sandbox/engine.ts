/**
 * The QuickJS engine of one worker thread: the synchronous release build of quickjs-emscripten,
 * loaded once per thread (about 30 ms) and reused by its calls, each of which makes its own
 * runtime and context (about 0.3 ms).
 *
 * Memory: QuickJS's `setMemoryLimit` only bounds a single allocation in this build (the
 * WebAssembly libc reports no allocation sizes, so QuickJS never adds them up), so a tool could
 * grow the memory with many small allocations up to the 2 GiB WebAssembly maximum. The engine is
 * therefore given its own WebAssembly memory with a maximum: the build's static data and stack
 * plus the per-call budget. Past it, growth fails, QuickJS's allocator returns NULL and the tool
 * gets a QuickJS "out of memory" error, which the call reports as LIMIT_EXCEEDED (memory).
 * A runtime frees everything when it is disposed, so the next call on the thread starts with the
 * whole budget again. A thread runs one call at a time (piscina gives a worker one task at a time),
 * which is what lets a call read `growthRefused` as its own.
 */
import releaseSyncExport from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type CustomizeVariantOptions,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';

// The package's types describe its CommonJS build (the variant under `default`); loaded as an ES
// module, its default export is the variant itself. Either way, this is the variant.
const releaseSync = (
  'type' in releaseSyncExport ? releaseSyncExport : releaseSyncExport.default
) as QuickJSSyncVariant;
// The compiler's libraries here carry WebAssembly's types but not its global value.
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const { Memory } = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
  }
).WebAssembly;

const PAGE_BYTES = 64 * 1024;
// The build's INITIAL_MEMORY (16 MiB): its WebAssembly module asks for at least this much.
const INITIAL_PAGES = 256;
// Static data and stack of the build, measured: 16 MiB of memory leave about 10.8 MiB to QuickJS.
const BUILD_OVERHEAD_BYTES = 6 * 1024 * 1024;

/** A thread's QuickJS module and what is known of its memory. */
export interface Engine {
  module: QuickJSWASMModule;
  /**
   * Whether the memory refused to grow (it is at its maximum) since `reset()`. An allocation that
   * fails then is the memory budget's doing, whatever QuickJS managed to throw for it (out of
   * memory while making the error object itself, it throws `null`).
   */
  readonly growthRefused: boolean;
  reset(): void;
}

let engine: Promise<Engine> | undefined;

/** This thread's engine for calls of `memoryBytes` each (made on first use, or after a discard). */
export function quickjsEngine(memoryBytes: number): Promise<Engine> {
  if (engine !== undefined) return engine;
  const maximum = Math.max(INITIAL_PAGES, Math.ceil((BUILD_OVERHEAD_BYTES + memoryBytes) / PAGE_BYTES));
  const memory = new Memory({ initial: INITIAL_PAGES, maximum });
  let refused = false;
  // Emscripten grows the memory through this method and takes a throw as "no more memory"; the
  // wrapper only notes that it happened.
  const grow = memory.grow.bind(memory);
  memory.grow = (pages: number) => {
    try {
      return grow(pages);
    } catch (error) {
      refused = true;
      throw error;
    }
  };
  const loading = newQuickJSWASMModuleFromVariant(
    newVariant(releaseSync, {
      wasmMemory: memory as unknown as NonNullable<CustomizeVariantOptions['wasmMemory']>,
    }),
  ).then((module) => ({
    module,
    get growthRefused() {
      return refused;
    },
    reset() {
      refused = false;
    },
  }));
  engine = loading;
  // A failed load is not kept: the next call tries again.
  loading.catch(() => {
    if (engine === loading) engine = undefined;
  });
  return loading;
}
/** Drops this thread's engine (one that may be damaged); the next call loads a fresh one. */
export function discardEngine(): void {
  engine = undefined;
}
