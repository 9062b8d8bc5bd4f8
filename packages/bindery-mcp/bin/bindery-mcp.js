#!/usr/bin/env node
// Runs the built src/bindery-mcp.ts (dist/, made by `pnpm install` or `pnpm build`) with plain node. Nothing may reach stdout before it (MCP only).
await import('../dist/bindery-mcp.js');
