/** docs/configuration.md, rendered from the schemas (`pnpm docs:settings` writes it). */
import type { Setting } from './schema.ts';

/** What the docs need of a schema (its checks are not shown). */
interface Described {
  readonly service: string;
  readonly settings: Readonly<Record<string, Setting<unknown>>>;
}

const cell = (text: string) => text.replaceAll('|', '\\|');

function table(schema: Described): string {
  const rows = Object.entries(schema.settings).map(
    ([name, s]) => `| \`${name}\` | ${cell(s.kind)} | ${cell(s.shownDefault)} | ${cell(s.doc)} |`,
  );
  return [
    `## ${schema.service[0]!.toUpperCase()}${schema.service.slice(1)}`,
    '',
    '| variable | kind | default | meaning |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/** The whole document for the given schemas, one table each. */
export function configurationDoc(schemas: readonly Described[]): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated from the settings schemas (packages/service-kit/src/settings) by `pnpm docs:settings`; do not edit. -->',
    '',
    'Each service reads its settings from environment variables once, at start. An empty value counts',
    'as unset. Invalid values stop the start with one line per problem, naming the variable, the value',
    '(a secret only by its length) and what is allowed. A variable that looks like a misspelt setting',
    '(close to a known name, or with a settings prefix such as `BINDERY_` or `GATEWAY_`) gets a',
    'warning at start naming the setting it probably meant.',
    '',
    'Defaults written with `$NAME` follow that setting: moving the services with `PORT` and',
    '`GATEWAY_PORT` is enough for each to find the other. `pnpm start` passes every variable below to',
    'both services, generates `INTERNAL_TOKEN` and `OPS_TOKEN` when unset, and points `GATEWAY_URLS` at',
    'the local gateway (`http://127.0.0.1:$GATEWAY_PORT`).',
    '',
    ...schemas.flatMap((schema) => [table(schema), '']),
  ].join('\n');
}
