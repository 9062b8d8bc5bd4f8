/**
 * The log stream of a session (MCP `notifications/message`): what the gateway tells a client about
 * its own tool calls, filtered by the level the client set with `logging/setLevel` (`warning`
 * until it sets one). Lines are built from the call alone (its name, result and duration), so a
 * session never sees another session's or another exposure's lines.
 *
 * | line                                                 | level                       | logger       |
 * | ---------------------------------------------------- | --------------------------- | ------------ |
 * | a call starts; it finishes, with its duration         | debug                       | `bindery`    |
 * | a refusal (the tool was not run as asked)             | warning                     | `bindery`    |
 * | a failure (the tool or its upstream failed)           | error                       | `bindery`    |
 * | a custom tool's console line                          | its console level (below)   | `console`    |
 * | an upstream server's stderr line during the call      | info                        | `upstream`   |
 */
import {
  CONSOLE_META_KEY,
  ERROR_CODES,
  STDERR_META_KEY,
  logLevelAllows,
  type ErrorCode,
} from '@bindery/contracts';
import type {
  CallToolResult,
  LoggingLevel,
  LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';

/** The level of a session that never sent `logging/setLevel`. */
export const DEFAULT_LOG_LEVEL: LoggingLevel = 'warning';

export type LogLine = LoggingMessageNotification['params'];

/** True when a session at `threshold` receives lines of `level`. */
export function allows(threshold: LoggingLevel, level: LoggingLevel): boolean {
  return logLevelAllows(threshold, level);
}

/** Codes that say something broke (the tool, its upstream, the platform); the others, that the call was refused. */
const FAILURES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'UPSTREAM_FAILED',
  'TIMEOUT',
  'OUTCOME_UNKNOWN',
  'INTERNAL',
]);
const REFUSALS: ReadonlySet<string> = new Set(ERROR_CODES.filter((code) => !FAILURES.has(code)));

/** A custom tool's console levels as MCP levels (`truncated` says lines were dropped). */
const CONSOLE_LEVELS: Record<string, LoggingLevel> = {
  debug: 'debug',
  log: 'info',
  info: 'info',
  warn: 'warning',
  error: 'error',
  truncated: 'warning',
};

/** The most console (and stderr) lines one call turns into messages: the control plane keeps 100 and 50. */
const MAX_LINES_OF_A_KIND = 100;

export function startLine(tool: string): LogLine {
  return { level: 'debug', logger: 'bindery', data: { tool, event: 'started' } };
}

/** A refusal the gateway answers itself (an unknown tool): the call never started. */
export function refusalLine(tool: string, message: string): LogLine {
  return { level: 'warning', logger: 'bindery', data: { tool, event: 'refused', message } };
}

/** The lines of a finished call: its console and stderr lines, its failure if any, then its end. */
export function finishLines(tool: string, result: CallToolResult, durationMs: number): LogLine[] {
  const lines: LogLine[] = [];
  const meta = result._meta ?? {};
  // The control plane bounds both lists; the bound here keeps a malformed result harmless too.
  const consoleLines = meta[CONSOLE_META_KEY];
  if (Array.isArray(consoleLines)) {
    for (const entry of consoleLines.slice(0, MAX_LINES_OF_A_KIND) as unknown[]) {
      if (typeof entry !== 'object' || entry === null) continue;
      const { level, message } = entry as { level?: unknown; message?: unknown };
      lines.push({
        level: CONSOLE_LEVELS[String(level)] ?? 'info',
        logger: 'console',
        data: { tool, message: String(message) },
      });
    }
  }
  const stderr = meta[STDERR_META_KEY];
  if (Array.isArray(stderr)) {
    for (const line of stderr.slice(0, MAX_LINES_OF_A_KIND) as unknown[]) {
      if (typeof line === 'string')
        lines.push({ level: 'info', logger: 'upstream', data: { tool, stderr: line } });
    }
  }
  const status = result.isError ? 'error' : 'ok';
  if (result.isError) {
    const error = errorOf(result);
    const refused = error.code !== undefined && REFUSALS.has(error.code);
    lines.push({
      level: refused ? 'warning' : 'error',
      logger: 'bindery',
      data: { tool, event: refused ? 'refused' : 'failed', ...error, duration_ms: durationMs },
    });
  }
  lines.push({
    level: 'debug',
    logger: 'bindery',
    data: { tool, event: 'finished', status, duration_ms: durationMs },
  });
  return lines;
}

/** The `{code, message}` of an error result: ours carry `{"error": {...}}` as text; others, the text. */
function errorOf(result: CallToolResult): { code?: string; message?: string } {
  const first = result.content.find((item) => item.type === 'text');
  const text = first && 'text' in first ? String(first.text) : '';
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (parsed.error && typeof parsed.error.code === 'string') {
      return { code: parsed.error.code, message: String(parsed.error.message ?? '') };
    }
  } catch {
    // Not ours: an upstream tool's own error text.
  }
  return { message: text.length > 500 ? `${text.slice(0, 499)}…` : text };
}
