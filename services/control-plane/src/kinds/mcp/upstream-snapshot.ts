/**
 * What an upstream MCP server lists besides its tools: a sync keeps a bounded snapshot of its
 * resources and prompts (`upstream_server.resources`, `.prompts`), checked entry by entry. The
 * exposures they are attached to serve them (exposure/upstream-catalog.ts).
 */
import {
  UPSTREAM_CATALOG_LIMITS,
  compileUriTemplate,
  findUnstorable,
  matchesUriTemplate,
  storableText,
  type UriTemplateMatcher,
} from '@bindery/contracts';
import type { Prompt, Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import type { SkippedEntry } from './instance.ts';
import { skippedWarnings } from './upstream-names.ts';

/**
 * What an entry says of itself for clients to show, kept as the server listed it: its `_meta` (MCP
 * Apps declare a tool's UI there, and a `ui://` resource's sandbox), its `icons`, and a resource's
 * `annotations`.
 */
export interface Presentation {
  meta?: Record<string, unknown>;
  icons?: unknown[];
  annotations?: Record<string, unknown>;
}

/** One resource of a server's snapshot (`upstream_server.resources`). */
export interface ResourceEntry extends Presentation {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mime_type?: string;
  size?: number;
}

/** One resource template of a server's snapshot (`upstream_server.resource_templates`). */
export interface ResourceTemplateEntry extends Presentation {
  uri_template: string;
  name: string;
  title?: string;
  description?: string;
  mime_type?: string;
}

export interface PromptArgumentEntry {
  name: string;
  description?: string;
  required?: boolean;
}

/** One prompt of a server's snapshot (`upstream_server.prompts`), by its upstream name. */
export interface PromptEntry extends Presentation {
  name: string;
  title?: string;
  description?: string;
  arguments: PromptArgumentEntry[];
}

/** The longest prompt name (and argument name) kept: what the internal route takes. */
const PROMPT_NAME_MAX = 256;
/** Characters of a URI or prompt name written to the audit trail and log lines. */
const SHOWN_MAX = 200;

/**
 * Text as the snapshot stores it: NULs and unpaired surrogates (which a JSON column refuses) made
 * U+FFFD, cut to maxTextChars without splitting a pair.
 */
function cut(text: string): string {
  const max = UPSTREAM_CATALOG_LIMITS.maxTextChars;
  const clean = storableText(text);
  if (clean.length <= max) return clean;
  let end = max - 1;
  // Never end on the first half of a pair.
  if (/[\uD800-\uDBFF]/.test(clean.charAt(end - 1))) end -= 1;
  return `${clean.slice(0, end)}…`;
}

/** True when `text` can be stored and named as it is (a URI or a name: it cannot be rewritten). */
function storableAsIs(text: string): boolean {
  return storableText(text) === text;
}

/** A URI or a name as log lines, warnings and the audit trail show it: cut to SHOWN_MAX. */
export function shown(text: string): string {
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX - 1)}…` : text;
}

/** A listing of the pool's (pool.ts), as far as a snapshot needs it. */
interface Listed<T> {
  items: T[];
  truncated: boolean;
  withheld?: number;
  skipped?: SkippedEntry[];
  moreSkipped?: number;
}

const optionalText = (key: string, value: unknown) =>
  typeof value === 'string' ? { [key]: cut(value) } : {};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The entry's `_meta`, `icons` and (`withAnnotations`) `annotations`, as listed, when they are of
 * their type, storable and together at most UPSTREAM_CATALOG_LIMITS.maxPresentationChars of JSON;
 * otherwise none of them, said in `warnings` (`what` names the entry). They are never rewritten:
 * a client reads a UI's address out of them.
 */
export function presentationOf(
  listed: { _meta?: unknown; icons?: unknown; annotations?: unknown },
  what: string,
  warnings: string[],
  withAnnotations = false,
): Presentation {
  const kept: Presentation = {
    ...(isPlainObject(listed._meta) && { meta: listed._meta }),
    ...(Array.isArray(listed.icons) && { icons: listed.icons }),
    ...(withAnnotations && isPlainObject(listed.annotations) && { annotations: listed.annotations }),
  };
  if (Object.keys(kept).length === 0) return kept;
  const max = UPSTREAM_CATALOG_LIMITS.maxPresentationChars;
  if (JSON.stringify(kept).length > max) {
    warnings.push(
      `${what}: its _meta, icons and annotations take over ${max} characters; they were left out`,
    );
    return {};
  }
  if (findUnstorable(kept) !== undefined) {
    warnings.push(
      `${what}: its _meta, icons or annotations hold a NUL or a broken character; they were left out`,
    );
    return {};
  }
  return kept;
}

/**
 * A server's resources as the snapshot keeps them: URIs over maxUriChars or listed twice skipped,
 * names, titles and descriptions cut to maxTextChars; what was left out is said in `warnings`.
 */
export function resourceSnapshot(listed: Listed<Resource>, warnings: string[]): ResourceEntry[] {
  const { maxResources, maxUriChars } = UPSTREAM_CATALOG_LIMITS;
  skippedWarnings('resource', listed, warnings);
  if (listed.truncated)
    warnings.push(`the server lists more than ${maxResources} resources; the rest were skipped`);
  if (listed.withheld)
    warnings.push(`${listed.withheld} resource(s) whose URI holds one of the server's secrets were left out`);
  const seen = new Set<string>();
  const entries: ResourceEntry[] = [];
  const budget = new SnapshotBudget('resources', warnings);
  let long = 0;
  for (const resource of listed.items) {
    const uri = resource.uri;
    if (typeof uri !== 'string' || uri === '' || uri.length > maxUriChars || !storableAsIs(uri)) {
      long += 1;
      continue;
    }
    if (seen.has(uri)) {
      warnings.push(`resource "${shown(uri)}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(uri);
    const size = resource.size;
    const entry = {
      uri,
      name: cut(typeof resource.name === 'string' ? resource.name : uri),
      ...optionalText('title', resource.title),
      ...optionalText('description', resource.description),
      ...optionalText('mime_type', resource.mimeType),
      ...(typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 && { size }),
      ...presentationOf(resource, `resource "${shown(uri)}"`, warnings, true),
    } as ResourceEntry;
    if (!budget.takes(entry)) break;
    entries.push(entry);
  }
  if (long > 0)
    warnings.push(
      `${long} resource(s) with an empty URI, one over ${maxUriChars} characters or one with a NUL or a broken character were skipped`,
    );
  return entries;
}

/**
 * A server's resource templates as the snapshot keeps them: a template that is empty, too long,
 * listed twice or not an RFC 6570 template skipped, texts cut; what was left out is in `warnings`.
 */
export function resourceTemplateSnapshot(
  listed: Listed<ResourceTemplate>,
  warnings: string[],
): ResourceTemplateEntry[] {
  const { maxResourceTemplates, maxUriChars } = UPSTREAM_CATALOG_LIMITS;
  skippedWarnings('resource template', listed, warnings);
  if (listed.truncated)
    warnings.push(
      `the server lists more than ${maxResourceTemplates} resource templates; the rest were skipped`,
    );
  if (listed.withheld)
    warnings.push(
      `${listed.withheld} resource template(s) holding one of the server's secrets were left out`,
    );
  const seen = new Set<string>();
  const entries: ResourceTemplateEntry[] = [];
  const budget = new SnapshotBudget('resource templates', warnings);
  for (const template of listed.items) {
    const uriTemplate = template.uriTemplate;
    if (
      typeof uriTemplate !== 'string' ||
      uriTemplate === '' ||
      uriTemplate.length > maxUriChars ||
      !storableAsIs(uriTemplate)
    ) {
      warnings.push(
        `a resource template that is empty, over ${maxUriChars} characters, or holds a NUL or a broken character was skipped`,
      );
      continue;
    }
    const compiled = compileUriTemplate(uriTemplate);
    if ('problem' in compiled) {
      warnings.push(`resource template "${shown(uriTemplate)}" was skipped: ${compiled.problem}`);
      continue;
    }
    if (seen.has(uriTemplate)) {
      warnings.push(`resource template "${shown(uriTemplate)}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(uriTemplate);
    const entry = {
      uri_template: uriTemplate,
      name: cut(typeof template.name === 'string' ? template.name : uriTemplate),
      ...optionalText('title', template.title),
      ...optionalText('description', template.description),
      ...optionalText('mime_type', template.mimeType),
      ...presentationOf(template, `resource template "${shown(uriTemplate)}"`, warnings, true),
    } as ResourceTemplateEntry;
    if (!budget.takes(entry)) break;
    entries.push(entry);
  }
  return entries;
}

// Templates compiled once per template text (a snapshot's are few, bounded by the catalog limits).
const compiledTemplates = new Map<string, UriTemplateMatcher | null>();
const COMPILED_KEPT = 10_000;

/** True when `uri` is one of `templates` filled in (RFC 6570, matched in linear time). */
export function matchesTemplate(uri: string, templates: readonly ResourceTemplateEntry[]): boolean {
  if (uri.length > UPSTREAM_CATALOG_LIMITS.maxUriChars) return false;
  return templates.some((entry) => {
    let matcher = compiledTemplates.get(entry.uri_template);
    if (matcher === undefined) {
      const compiled = compileUriTemplate(entry.uri_template);
      matcher = 'problem' in compiled ? null : compiled;
      if (compiledTemplates.size >= COMPILED_KEPT) compiledTemplates.clear();
      compiledTemplates.set(entry.uri_template, matcher);
    }
    return matcher !== null && matchesUriTemplate(matcher, uri);
  });
}

/**
 * Characters of one server's resources (or prompts) as stored, at most: the snapshot travels in the
 * config of every AEI the server is attached to, so its size is bounded whatever the counts allow.
 */
export const SNAPSHOT_MAX_CHARS = 1_048_576;

/** Counts what a snapshot holds; past SNAPSHOT_MAX_CHARS the rest is skipped, with a warning. */
class SnapshotBudget {
  #left = SNAPSHOT_MAX_CHARS;

  constructor(
    private readonly list: string,
    private readonly warnings: string[],
  ) {}

  /** Whether `entry` fits; when it does not, the warning says the rest was skipped. */
  takes(entry: unknown): boolean {
    this.#left -= JSON.stringify(entry).length;
    if (this.#left >= 0) return true;
    this.warnings.push(
      `the server's ${this.list} are more than ${SNAPSHOT_MAX_CHARS} characters; the rest were skipped`,
    );
    return false;
  }
}

/**
 * A server's prompts as the snapshot keeps them: names empty, over 256 characters or listed twice
 * skipped, at most maxPromptArguments arguments each, texts cut; what was left out is in `warnings`.
 */
export function promptSnapshot(listed: Listed<Prompt>, warnings: string[]): PromptEntry[] {
  const { maxPrompts, maxPromptArguments } = UPSTREAM_CATALOG_LIMITS;
  skippedWarnings('prompt', listed, warnings);
  if (listed.truncated)
    warnings.push(`the server lists more than ${maxPrompts} prompts; the rest were skipped`);
  if (listed.withheld)
    warnings.push(`${listed.withheld} prompt(s) whose name holds one of the server's secrets were left out`);
  const seen = new Set<string>();
  const entries: PromptEntry[] = [];
  const budget = new SnapshotBudget('prompts', warnings);
  for (const prompt of listed.items) {
    const name = prompt.name;
    if (typeof name !== 'string' || name === '' || name.length > PROMPT_NAME_MAX || !storableAsIs(name)) {
      warnings.push(
        `a prompt with a name that is empty, over ${PROMPT_NAME_MAX} characters or holds a NUL or a broken character was skipped`,
      );
      continue;
    }
    if (seen.has(name)) {
      warnings.push(`prompt "${shown(name)}" is listed twice; the first is kept`);
      continue;
    }
    seen.add(name);
    const args: PromptArgumentEntry[] = [];
    let dropped = 0;
    let requiredDropped = false;
    for (const arg of prompt.arguments ?? []) {
      const usable =
        typeof arg.name === 'string' &&
        arg.name !== '' &&
        arg.name.length <= PROMPT_NAME_MAX &&
        storableAsIs(arg.name) &&
        !args.some((a) => a.name === arg.name) &&
        args.length < maxPromptArguments;
      if (!usable) {
        dropped += 1;
        if (arg.required === true) requiredDropped = true;
        continue;
      }
      args.push({
        name: arg.name,
        ...optionalText('description', arg.description),
        ...(typeof arg.required === 'boolean' && { required: arg.required }),
      });
    }
    // A required argument no client could send would make the prompt unusable: it is not served.
    if (requiredDropped) {
      warnings.push(
        `prompt "${shown(storableText(name))}" was skipped: a required argument of it is unnamed, named twice, over ${PROMPT_NAME_MAX} characters or past the first ${maxPromptArguments}`,
      );
      continue;
    }
    if (dropped > 0) {
      warnings.push(
        `prompt "${shown(name)}": ${dropped} optional argument(s) unnamed, named twice, over ${PROMPT_NAME_MAX} characters or past the first ${maxPromptArguments} were left out`,
      );
    }
    const entry: PromptEntry = {
      name,
      ...optionalText('title', prompt.title),
      ...optionalText('description', prompt.description),
      arguments: args,
      ...presentationOf(prompt, `prompt "${shown(name)}"`, warnings),
    };
    if (!budget.takes(entry)) break;
    entries.push(entry);
  }
  return entries;
}

/** A stored snapshot, as read back (anything else than an array reads as empty). */
export function storedEntries<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}
