import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { gzipBudget } from './scripts/gzip-budget.ts';

// The console is served by the control plane under /console/ (its assets too).
export default defineConfig({
  base: '/console/',
  // Workspace packages (contracts) from their TypeScript sources, as in the tests.
  resolve: { conditions: ['bindery-source', 'module', 'browser', 'development|production'] },
  plugins: [react(), gzipBudget({ maxGzipBytes: 300 * 1024 })],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
});
