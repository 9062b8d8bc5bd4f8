/**
 * The benchmark's own command-line arguments. `pnpm bench:x -- --engine pglite` hands the script
 * the `--` too, which `parseArgs` would take for the end of the options.
 */
export function benchArgs(): string[] {
  return process.argv.slice(2).filter((arg) => arg !== '--');
}
