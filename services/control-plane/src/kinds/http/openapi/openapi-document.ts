/**
 * Reading an OpenAPI document for import: JSON or YAML text (or an object already parsed), OpenAPI
 * 3.0, 3.1 or Swagger 2.0, upgraded to 3.1 and with its `$ref`s resolved by @scalar/openapi-parser.
 * Only references inside the document are resolved: the parser fetches nothing unless given its
 * URL plugin, which is never given here, so an external `$ref` stays unresolved and is reported.
 */
import { MAX_JSON_DEPTH, jsonNestsDeeperThan } from '@bindery/contracts';
import { dereference, normalize, upgrade } from '@scalar/openapi-parser';
import { DomainError } from '../../../domain/errors.ts';

/** A resolved document, upgraded to OpenAPI 3.1 (plain JSON values, possibly sharing subtrees). */
export interface OpenApiDocument {
  spec: Record<string, unknown>;
  /** The version the document declared: "2.0", "3.0.3", "3.1.0"... */
  declaredVersion: string;
  /** One line per reference the parser could not resolve. */
  warnings: string[];
}

// Far deeper than any real API description (tens of levels), shallow enough for the parser's
// recursive resolution to stay clear of the stack limit.
const MAX_DOCUMENT_DEPTH = 4 * MAX_JSON_DEPTH;

function invalid(message: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `document: ${message}`, { field: 'document', ...extra });
}

/** The document resolved; throws VALIDATION_FAILED (field `document`) saying what is wrong and where. */
export function loadOpenApiDocument(input: unknown): OpenApiDocument {
  const parsed = typeof input === 'string' ? parseText(input) : structuredClone(input);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid('an OpenAPI document is a JSON or YAML object');
  }
  const document = withoutProtoKeys(parsed as Record<string, unknown>);
  const declaredVersion = checkVersion(document);
  let spec: Record<string, unknown>;
  try {
    const upgraded = upgrade(document).specification as Record<string, unknown> | null;
    if (upgraded === null) throw new Error('nothing to upgrade');
    spec = upgraded;
  } catch (error) {
    throw invalid(`could not be read as OpenAPI ${declaredVersion}: ${messageOf(error)}`);
  }
  const resolved = dereference(spec);
  const warnings = (resolved.errors ?? []).map((error) =>
    error.code === 'EXTERNAL_REFERENCE_NOT_FOUND'
      ? `${error.message}: references outside the document are never fetched; what uses it accepts any value`
      : error.message,
  );
  return { spec: (resolved.schema ?? spec) as Record<string, unknown>, declaredVersion, warnings };
}

function checkVersion(document: Record<string, unknown>): string {
  const { openapi, swagger } = document;
  if (typeof openapi === 'string') {
    if (/^3\.[0-2]\.\d+/.test(openapi) || /^3\.[0-2]$/.test(openapi)) return openapi;
    throw invalid(`OpenAPI ${openapi} is not supported (3.0, 3.1 and Swagger 2.0 are)`, { version: openapi });
  }
  if (swagger !== undefined) {
    if (String(swagger) === '2.0') return '2.0';
    throw invalid(`Swagger ${String(swagger)} is not supported (3.0, 3.1 and Swagger 2.0 are)`, {
      version: String(swagger),
    });
  }
  throw invalid('not an OpenAPI document: it has no "openapi" (3.x) or "swagger" (2.0) version field');
}

function parseText(text: string): unknown {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  if (body.trim() === '') throw invalid('the document is empty');
  const first = body.trimStart()[0];
  if (first === '{' || first === '[') {
    if (jsonNestsDeeperThan(body, MAX_DOCUMENT_DEPTH)) {
      throw invalid(`JSON nested deeper than ${MAX_DOCUMENT_DEPTH} levels`);
    }
    try {
      return JSON.parse(body);
    } catch (error) {
      throw jsonError(body, error);
    }
  }
  let value: unknown;
  try {
    // The parser's own YAML reading (the `yaml` library, alias expansion bounded).
    value = normalize(body);
  } catch (error) {
    throw yamlError(error);
  }
  if (value === undefined) throw invalid('neither JSON nor YAML');
  return value;
}

function jsonError(text: string, error: unknown): DomainError {
  const reason = messageOf(error);
  const position = /at position (\d+)/.exec(reason)?.[1];
  if (position === undefined) return invalid(`not valid JSON: ${reason}`, { reason });
  const before = text.slice(0, Number(position));
  const line = before.split('\n').length;
  const column = Number(position) - before.lastIndexOf('\n');
  return invalid(`not valid JSON at line ${line}, column ${column}: ${reason}`, { reason, line, column });
}

function yamlError(error: unknown): DomainError {
  // The yaml library's message is a first line, then a code frame of the document.
  const reason = messageOf(error).split('\n')[0]!.replace(/:$/, '');
  const at = (error as { linePos?: { line: number; col: number }[] }).linePos?.[0];
  return invalid(`not valid YAML: ${reason}`, {
    reason,
    ...(at !== undefined && { line: at.line, column: at.col }),
  });
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}

/**
 * The document with every `__proto__` key dropped (JSON.parse makes it an own key; an assignment
 * of it while resolving would swap an object's prototype), and its depth checked, in one pass
 * without recursion.
 */
function withoutProtoKeys(document: Record<string, unknown>): Record<string, unknown> {
  const stack: [unknown, number][] = [[document, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_DOCUMENT_DEPTH) throw invalid(`nested deeper than ${MAX_DOCUMENT_DEPTH} levels`);
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, depth + 1]);
      continue;
    }
    if (Object.hasOwn(value, '__proto__')) delete (value as Record<string, unknown>)['__proto__'];
    for (const item of Object.values(value)) stack.push([item, depth + 1]);
  }
  return document;
}
