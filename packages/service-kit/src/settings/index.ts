/**
 * @bindery/service-kit/settings: both services' settings schemas, the parser and docs built on them,
 * and the typo check of unknown variables.
 */
import { CONTROL_PLANE_SETTINGS } from './control-plane.ts';
import { configurationDoc } from './docs.ts';
import { GATEWAY_SETTINGS } from './gateway.ts';
import { settingTypos } from './typos.ts';

export { localUrl } from './addresses.ts';
export { CONTROL_PLANE_SETTINGS } from './control-plane.ts';
export { GATEWAY_SETTINGS } from './gateway.ts';
export {
  ENCRYPTION_KEY_BYTES,
  canonicalNetwork,
  decodeEncryptionKey,
  parseSettings,
  settingsProblemsMessage,
  type Setting,
  type SettingValues,
  type SettingsResult,
  type SettingsSchema,
} from './schema.ts';
export { SETTING_PREFIXES, settingTypos } from './typos.ts';

/** Both schemas, in the order docs/configuration.md shows them. */
export const SERVICE_SETTINGS = [CONTROL_PLANE_SETTINGS, GATEWAY_SETTINGS] as const;

/** Every variable either service reads. */
export const SETTING_NAMES: readonly string[] = [
  ...new Set(SERVICE_SETTINGS.flatMap((schema) => Object.keys(schema.settings))),
];

/**
 * Variables with a settings prefix that the services do not read, and so are never typos: the
 * test suites' and the client entries' (`bindery-mcp` and `bindery` read BINDERY_URL and
 * BINDERY_KEY, `bindery-mcp --sidebar` the BINDERY_CONTROL_PLANE_URL and BINDERY_SIDEBAR_* ones,
 * often exported in the same shell as the services).
 */
const OTHER_VARIABLES = [
  'BINDERY_TEST_DB',
  'BINDERY_TEST_TEMPLATE',
  'BINDERY_URL',
  'BINDERY_KEY',
  'BINDERY_CONTROL_PLANE_URL',
  'BINDERY_SIDEBAR_SESSION',
  'BINDERY_SIDEBAR_TOKEN',
  'BINDERY_SIDEBAR_WAIT_MS',
];

/** The start-up warnings for an environment: one line per variable that looks like a misspelt setting. */
export function unknownSettingWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  return settingTypos(env, SETTING_NAMES, OTHER_VARIABLES);
}

/** docs/configuration.md as the schemas describe it. */
export function renderConfigurationDoc(): string {
  return configurationDoc(SERVICE_SETTINGS);
}
