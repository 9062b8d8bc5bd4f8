#!/usr/bin/env node
// Runs the built src/bindery.ts (dist/, made by `pnpm install` or `pnpm build`) with plain node.
await import('../dist/bindery.js');
