/**
 * Writes docs/configuration.md from the settings schemas (`pnpm docs:settings`); a test fails when
 * the file differs from what this would write.
 */
import { writeFileSync } from 'node:fs';
import { CONFIGURATION_DOC, configurationDocText } from './configuration-doc.ts';

writeFileSync(CONFIGURATION_DOC, await configurationDocText());
process.stdout.write('wrote docs/configuration.md\n');
