/**
 * The API catalog of a progressive AEI, derived from its cached config v2 alone: apps (projects),
 * categories (ADI category, or the table's name), APIs (bindings) and their details, and a ranked
 * keyword search. Pure functions: no I/O, no session.
 */
import type { ConfigBinding, ConfigV2, ToolAnnotations } from '@bindery/contracts';
import { dataSchemaOf } from './tool-index.ts';

export interface App {
  id: string;
  slug: string;
  name: string;
}

export interface Category {
  id: string;
  name: string;
  description: string;
}

export interface ApiSummary {
  name: string;
  description: string;
  category_id: string;
}

export interface Parameter {
  name: string;
  type: string;
  required: boolean;
  description: string | null;
  default: unknown;
}

export interface ApiDetails extends ApiSummary {
  /** A human-readable name, when the config gives one. */
  title?: string;
  parameters: Parameter[];
  response_schema: Record<string, unknown> | null;
  /** What the API does to its data (read-only, destructive, ...), as in a direct tools/list. */
  annotations?: ToolAnnotations;
}

/** A category's id: its name in lower-case words joined by dashes. */
export function categoryId(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'general'
  );
}

/** The apps (projects) the AEI's enabled bindings belong to. */
export function appsOf(config: ConfigV2): App[] {
  const apps = new Map<string, App>();
  for (const b of config.bindings) apps.set(b.app_id, { id: b.app_id, slug: b.app, name: b.app_name });
  return [...apps.values()];
}

/** The app named by id or slug, or undefined when the AEI has no binding in it. */
export function findApp(config: ConfigV2, appId: string): App | undefined {
  return appsOf(config).find((a) => a.id === appId || a.slug === appId);
}

function bindingsOf(config: ConfigV2, app: App): ConfigBinding[] {
  return config.bindings.filter((b) => b.app_id === app.id);
}

function summary(b: ConfigBinding): ApiSummary {
  return { name: b.tool_name, description: b.tool_description, category_id: categoryId(b.category) };
}

/** The categories of an app, in the order their first API appears. */
export function categoriesOf(config: ConfigV2, app: App): Category[] {
  const found = new Map<string, { name: string; count: number }>();
  for (const b of bindingsOf(config, app)) {
    const id = categoryId(b.category);
    const entry = found.get(id) ?? { name: b.category, count: 0 };
    entry.count++;
    found.set(id, entry);
  }
  return [...found].map(([id, { name, count }]) => ({
    id,
    name,
    description: `${count} API${count === 1 ? '' : 's'} about ${name}`,
  }));
}

/** The APIs of one category of an app (empty for an unknown category). */
export function apisOf(config: ConfigV2, app: App, category: string): ApiSummary[] {
  return bindingsOf(config, app)
    .filter((b) => categoryId(b.category) === category)
    .map(summary);
}

function typeOf(schema: Record<string, unknown>): string {
  const type = schema.type;
  if (Array.isArray(type)) return type.join('|');
  if (typeof type === 'string') return type;
  if (Array.isArray(schema.enum)) return 'enum';
  return 'any';
}

/** The parameters an API takes, from its effective input schema. */
export function parametersOf(inputSchema: Record<string, unknown>): Parameter[] {
  const properties = (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(inputSchema.required) ? (inputSchema.required as string[]) : []);
  return Object.entries(properties).map(([name, schema]) => ({
    name,
    type: typeOf(schema),
    required: required.has(name),
    description: typeof schema.description === 'string' ? schema.description : null,
    default: schema.default ?? null,
  }));
}

/** Details of the named APIs of an app; names it does not have are listed apart. */
export function detailsOf(
  config: ConfigV2,
  app: App,
  names: readonly string[],
): { apis: ApiDetails[]; unknown: string[] } {
  const byName = new Map(bindingsOf(config, app).map((b) => [b.tool_name, b]));
  const apis: ApiDetails[] = [];
  const unknown: string[] = [];
  for (const name of names) {
    const b = byName.get(name);
    if (!b) {
      unknown.push(name);
      continue;
    }
    apis.push({
      ...summary(b),
      ...(b.title !== undefined && { title: b.title }),
      parameters: parametersOf(b.input_schema),
      // Batch results carry the answer itself, so a wrapped answer's schema is what it wraps.
      response_schema: dataSchemaOf(b),
      ...(b.annotations !== undefined && { annotations: b.annotations }),
    });
  }
  return { apis, unknown };
}

/** The binding behind an API name in an app, if any. */
export function bindingOf(config: ConfigV2, app: App, name: string): ConfigBinding | undefined {
  return bindingsOf(config, app).find((b) => b.tool_name === name);
}

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1);

/**
 * APIs of an app ranked by keyword matches: a word in the name counts three, in the category two,
 * in the description one; ties keep catalog order. APIs matching nothing are left out.
 */
export function searchApis(
  config: ConfigV2,
  app: App,
  query: string,
  limit: number,
): (ApiSummary & { score: number })[] {
  const terms = [...new Set(words(query))];
  if (terms.length === 0) return [];
  return bindingsOf(config, app)
    .map((b, index) => {
      const name = words(b.tool_name.replace(/_/g, ' '));
      const category = words(b.category);
      const description = words(b.tool_description);
      let score = 0;
      for (const term of terms) {
        if (name.some((w) => w.startsWith(term))) score += 3;
        if (category.some((w) => w.startsWith(term))) score += 2;
        if (description.some((w) => w.startsWith(term))) score += 1;
      }
      return { ...summary(b), score, index };
    })
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, limit)
    .map(({ index: _index, ...rest }) => rest);
}
