// Gateway suites: unit tests, and end-to-end tests against a real control plane process.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { testTimeout: 60_000, hookTimeout: 90_000 },
});
