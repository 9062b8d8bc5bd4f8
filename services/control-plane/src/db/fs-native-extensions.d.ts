// The package ships no types; these are the two calls the data directory lock uses
// (see data-dir-lock.ts for why its locks are the right kind).
declare module 'fs-native-extensions' {
  /** Locks the file behind `fd` (exclusive unless `shared`); false when another descriptor holds it. */
  export function tryLock(fd: number, options?: { shared?: boolean }): boolean;
  export function unlock(fd: number): void;
}
