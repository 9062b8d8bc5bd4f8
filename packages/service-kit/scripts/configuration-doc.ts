/** docs/configuration.md's path and text: the schemas' rendering, formatted as the repository formats Markdown. */
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { renderConfigurationDoc } from '../src/settings/index.ts';

export const CONFIGURATION_DOC = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));

/** The text docs/configuration.md must hold. */
export async function configurationDocText(): Promise<string> {
  const options = (await resolveConfig(CONFIGURATION_DOC)) ?? {};
  return format(renderConfigurationDoc(), { ...options, filepath: CONFIGURATION_DOC });
}
