// The console's browser tests: a real control plane (its own process, on a fresh database) serving
// the console's build, driven in headless Chromium. One file at a time: they share one machine's CPU.
import { defineConfig } from 'vitest/config';
import { BUILD_SETUP, sourceResolution } from '../../vitest.shared.ts';

export default defineConfig({
  ...sourceResolution,
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: [BUILD_SETUP, 'test/support/build.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
