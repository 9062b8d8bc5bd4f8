// Types of transparent-server.mjs for the TypeScript tests that import it.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

export const CITIES: string[];
export const APP_URI: string;
export const APP_HTML: string;
export const TOOLS: Tool[];
export function createTransparentServer(): Server;
