/**
 * `bindery-mcp [caller] --check`: whether the gateway answers (`GET /healthz`) and which profile
 * the caller gets (`GET /api/v2/rest/tools` with the same credentials), as a few lines on stdout.
 * 0 when both worked, 1 otherwise.
 */
import { RestClient, type RestProfile } from './rest.ts';
import { mcpEndpoint, networkReason, type Credentials } from './settings.ts';

const CHECK_TIMEOUT_MS = 5_000;

export async function runCheck(credentials: Credentials, caller: string | undefined): Promise<number> {
  const lines: string[] = [];
  let ok = true;

  try {
    const response = await fetch(`${credentials.url}/healthz`, {
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.ok) lines.push(`gateway:  ${credentials.url} answers (GET /healthz: ${response.status})`);
    else {
      ok = false;
      lines.push(`gateway:  ${credentials.url} is not healthy (GET /healthz: ${response.status})`);
    }
  } catch (error) {
    ok = false;
    lines.push(`gateway:  ${credentials.url} is unreachable (${networkReason(error)})`);
  }

  lines.push(`endpoint: ${mcpEndpoint(credentials, caller).href}`);
  lines.push(`key:      ${credentials.personal ? 'a personal key' : "an exposure's api_key"}`);
  try {
    const { profile, tools } = await new RestClient(credentials, caller, CHECK_TIMEOUT_MS).tools();
    lines.push(`profile:  ${profile.aei_name} (${profile.aei_id}), ${how(profile, caller, credentials)}`);
    lines.push(`tools:    ${tools.length}`);
  } catch (error) {
    ok = false;
    lines.push(`profile:  unknown: ${(error as Error).message}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return ok ? 0 : 1;
}

function how(profile: RestProfile, caller: string | undefined, credentials: Credentials): string {
  if (profile.via === 'key' || !credentials.personal) {
    return `the exposure of this api_key${caller === undefined ? '' : " (the caller only labels the relay's log)"}`;
  }
  if (profile.via === 'map') return `mapped to caller "${profile.caller ?? caller}"`;
  return caller === undefined
    ? 'your default profile (no caller given; over MCP the gateway tries the client’s name first)'
    : `your default profile (caller "${caller}" is not mapped)`;
}
