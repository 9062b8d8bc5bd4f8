// Workspace packages resolve to their TypeScript sources in tests (vitest.shared.ts).
import { defineConfig } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.ts';

export default defineConfig({ ...sourceResolution });
