// Types of header-params-server.mjs for the TypeScript tests that import it.
export function headerParamsHandler(): unknown;
