#!/usr/bin/env node
// Runs src/bindery.ts through tsx: no build step.
import { URL, fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// This package's compiler options, wherever the client starts it from.
register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../src/bindery.ts');
