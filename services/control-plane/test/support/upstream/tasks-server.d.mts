// Types of tasks-server.mjs for the TypeScript tests that import it.
export function tasksHandler(): unknown;
