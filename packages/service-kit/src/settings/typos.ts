/**
 * "Did you mean": environment variables that look like a misspelt setting. A setting with a typo
 * would otherwise keep its default without a word.
 */
import { closest, distance } from 'fastest-levenshtein';

/** Prefixes only settings use: an unknown name with one of them is most likely a setting gone wrong. */
export const SETTING_PREFIXES = [
  'BINDERY_',
  'GATEWAY_',
  'CONTROL_PLANE_',
  'QUERY_',
  'CONFIG_',
  'CATALOG_',
  'BREAKER_',
  'RATE_LIMIT_',
  'EXECUTE_',
  'UNKNOWN_KEY_',
] as const;

/**
 * One warning line per unknown variable that looks like a typo of a known one: within edit
 * distance 2 of a known name (and less than a third of that name's length, so `HOME` is not taken
 * for `HOST`), or carrying a settings prefix. Names in `ignore` (variables the project's own tools
 * read) never warn.
 */
export function settingTypos(
  env: Readonly<Record<string, string | undefined>>,
  known: readonly string[],
  ignore: readonly string[] = [],
): string[] {
  const knownSet = new Set(known);
  const ignored = new Set(ignore);
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    // Settings are upper case; lower-case names belong to package managers and shells.
    if (knownSet.has(name) || ignored.has(name) || !/^[A-Z][A-Z0-9_]*$/.test(name)) continue;
    const nearest = closest(name, known as string[]);
    const d = distance(name, nearest);
    const near = d <= 2 && d < nearest.length / 3;
    const prefix = SETTING_PREFIXES.find((p) => name.startsWith(p));
    if (!near && prefix === undefined) continue;
    // With a prefix but nothing near, the closest name of the same prefix reads best.
    const samePrefix = prefix === undefined ? [] : known.filter((k) => k.startsWith(prefix));
    const suggestion = near || samePrefix.length === 0 ? nearest : closest(name, samePrefix);
    warnings.push(`unknown setting ${name} is ignored: did you mean ${suggestion}?`);
  }
  return warnings;
}
