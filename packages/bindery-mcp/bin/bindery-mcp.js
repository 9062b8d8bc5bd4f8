#!/usr/bin/env node
// Runs src/bindery-mcp.ts through tsx: no build step. Nothing may reach stdout before it (MCP only).
import { URL, fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// This package's compiler options, wherever the client starts it from.
register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../src/bindery-mcp.ts');
