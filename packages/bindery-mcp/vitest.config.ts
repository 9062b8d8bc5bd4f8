// The relay's and the CLI's tests: each file starts a real stack (@bindery/test-support), the
// control plane on PostgreSQL, and runs `bindery-mcp` or `bindery` as a child process against it.
// The children run the built dist/: the workspace is built first, so they never run older code
// than the sources under test.
import { defineConfig } from 'vitest/config';
import { BUILD_SETUP } from '../../vitest.shared.ts';

export default defineConfig({
  test: {
    globalSetup: [BUILD_SETUP],
    include: ['test/**/*.test.ts'],
    env: { BINDERY_TEST_DB: 'postgres' },
    testTimeout: 60_000,
    hookTimeout: 90_000,
  },
});
