/**
 * The relay's own log: one line per event on stderr (stdout carries MCP only), each prefixed
 * `bindery-mcp:` and the caller, so a desktop client's log of several servers stays readable.
 */
export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
}

export function stderrLogger(
  label: string | undefined,
  verbose: boolean,
  write: (line: string) => void = (line) => void process.stderr.write(line),
): Logger {
  const prefix = `bindery-mcp: ${label === undefined ? '' : `[${label}] `}`;
  const line = (level: LogLevel, message: string) => {
    if (level === 'debug' && !verbose) return;
    const tag = level === 'info' ? '' : `${level}: `;
    write(`${prefix}${tag}${message.replace(/\s*[\r\n]+\s*/g, ' ')}\n`);
  };
  return {
    debug: (message) => line('debug', message),
    info: (message) => line('info', message),
    warning: (message) => line('warning', message),
    error: (message) => line('error', message),
  };
}
