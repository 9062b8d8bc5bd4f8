// A real MCP server of the 2026-07-28 era that offers the tasks extension (tasks.mjs), for tests:
// run as a script it serves stdio; imported, `tasksHandler()` gives the web handler for HTTP. Its
// tasks live in this process. Tools: greet, slow_compute, failing_job, protocol_error_job,
// confirm_delete, multi_input, test_tool_with_task (tasks.mjs says what each does).
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { pathToFileURL } from 'node:url';
import { serveTaskTools, TASKS_EXTENSION, TaskStore } from './tasks.mjs';

const store = new TaskStore();

function createTasksServer() {
  const server = new McpServer(
    { name: 'bindery-test-tasks-upstream', version: '1.0.0' },
    { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } },
  );
  serveTaskTools(server, store);
  store.serve(server);
  return server;
}

/** The web-standard handler serving this server over Streamable HTTP. */
export function tasksHandler() {
  return createMcpHandler(() => createTasksServer(), { legacy: 'reject' });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  serveStdio(() => createTasksServer(), { legacy: 'reject' });
}
