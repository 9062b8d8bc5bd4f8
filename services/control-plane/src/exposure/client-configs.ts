/**
 * Ready to connect: the URLs of an exposure on the public gateway and configuration snippets for
 * common MCP clients, answered with the api_key when an AEI is created or its key rotated. Every
 * snippet holds the key (in the URL), so it is shown once, like the key. The stdio entry's
 * snippets (`bindery-mcp <caller>`) hold no key: they name the user's personal MCP key instead.
 */
import { fileURLToPath } from 'node:url';
import { MCP_SERVER_PATH, type AeiConnection, type StdioConfigs } from '@bindery/contracts';

/** The server's name inside client configs: the exposure's name as a slug. */
export function serverName(aeiName: string): string {
  const slug = aeiName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug === '' ? 'bindery' : slug;
}

/** One word for a POSIX shell: single-quoted unless it is plainly safe. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** mcp-remote refuses plain http except to localhost and 127.0.0.1 unless told otherwise. */
function needsAllowHttp(url: URL): boolean {
  return url.protocol === 'http:' && url.hostname !== 'localhost' && url.hostname !== '127.0.0.1';
}

/** The MCP endpoint of an api_key on a gateway reached at `gatewayPublicUrl`. */
export function mcpUrl(gatewayPublicUrl: string, apiKey: string): string {
  return `${gatewayPublicUrl}${MCP_SERVER_PATH}/${encodeURIComponent(apiKey)}`;
}

/**
 * How clients reach an exposure: `mcp_url` (key in the path), `mcp_url_header` (key in an
 * `Authorization: Bearer` header) and snippets for Claude Desktop (through the mcp-remote bridge,
 * since it launches local servers only), VS Code, Cursor and the MCP Inspector's CLI.
 */
export function connectionOf(gatewayPublicUrl: string, aeiName: string, apiKey: string): AeiConnection {
  const url = mcpUrl(gatewayPublicUrl, apiKey);
  const name = serverName(aeiName);
  const bridgeArgs = ['mcp-remote', url, ...(needsAllowHttp(new URL(url)) ? ['--allow-http'] : [])];
  return {
    mcp_url: url,
    mcp_url_header: `${gatewayPublicUrl}${MCP_SERVER_PATH}`,
    client_configs: {
      claude_desktop: {
        file: 'claude_desktop_config.json',
        config: { mcpServers: { [name]: { command: 'npx', args: bridgeArgs } } },
      },
      vscode: { file: '.vscode/mcp.json', config: { servers: { [name]: { type: 'http', url } } } },
      cursor: { file: '.cursor/mcp.json', config: { mcpServers: { [name]: { url } } } },
      mcp_inspector: {
        command: [
          'npx',
          '@modelcontextprotocol/inspector',
          '--cli',
          url,
          '--transport',
          'http',
          '--method',
          'tools/list',
        ]
          .map(shellWord)
          .join(' '),
      },
    },
  };
}

/**
 * The stdio entry's script, from where this control plane lies on disk: the snippets are for
 * clients on the machine that runs it (a client elsewhere needs the path of its own checkout).
 */
const BINDERY_MCP_BIN = fileURLToPath(
  new URL('../../../../packages/bindery-mcp/bin/bindery-mcp.js', import.meta.url),
);

/** What goes in BINDERY_KEY: the user's own personal key, which no answer of an AEI holds. */
const PERSONAL_KEY_PLACEHOLDER = '<your personal MCP key: POST /api/v2/mcp-keys>';

/**
 * Snippets starting `bindery-mcp <caller>` (through node, so no executable bit or PATH is needed)
 * in Claude Desktop, VS Code and Cursor, with the gateway's URL and a placeholder for the personal
 * key. `note` says which profile they serve: the one `caller` is mapped to.
 */
export function stdioConfigs(gatewayPublicUrl: string, caller: string, note: string): StdioConfigs {
  const name = `bindery-${caller}`;
  const server = {
    command: 'node',
    args: [BINDERY_MCP_BIN, caller],
    env: { BINDERY_URL: gatewayPublicUrl, BINDERY_KEY: PERSONAL_KEY_PLACEHOLDER },
  };
  return {
    caller,
    note,
    claude_desktop: { file: 'claude_desktop_config.json', config: { mcpServers: { [name]: server } } },
    vscode: { file: '.vscode/mcp.json', config: { servers: { [name]: { type: 'stdio', ...server } } } },
    cursor: { file: '.cursor/mcp.json', config: { mcpServers: { [name]: server } } },
  };
}
