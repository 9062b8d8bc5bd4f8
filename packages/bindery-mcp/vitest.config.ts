// The relay's and the CLI's tests: each file starts a real stack (@bindery/test-support), the
// control plane on PostgreSQL, and runs `bindery-mcp` or `bindery` as a child process against it.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    env: { BINDERY_TEST_DB: 'postgres' },
    testTimeout: 60_000,
    hookTimeout: 90_000,
  },
});
