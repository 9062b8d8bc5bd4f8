// Benchmark-only preload for a service started with --expose-gc: a full garbage collection on
// SIGUSR2, so a benchmark reads the heap of what is kept, not of garbage not yet collected.
process.on('SIGUSR2', () => globalThis.gc?.());
