/**
 * A custom tool that answers an MCP tool result: `{content: [...], structuredContent?, isError?}`.
 *
 * The rule that tells one from plain data (which becomes JSON text, as before): the answer is an
 * object whose keys are only `content`, `structuredContent` and `isError`, and whose `content` is
 * an array in which every item is an object whose `type` is one of MCP's content types (`text`,
 * `image`, `audio`, `resource`, `resource_link`). Anything else (another key beside them, an item
 * without such a type, `content` that is not an array) is data, so tools that returned such
 * objects before answer exactly as they did.
 *
 * Once an answer is taken for a result, each item must be what MCP says it is, or the call fails
 * with UPSTREAM_FAILED naming the item and the field: the checks are written out here rather than
 * taken from the SDK's schemas so that a tool's author reads which item and which field is wrong.
 * Bounds: at most MAX_CONTENT_ITEMS items; a `uri` of at most MAX_URI_LENGTH characters and a
 * `mimeType` of at most MAX_MIME_TYPE_LENGTH; the whole result's JSON is bounded, as every answer
 * of the tool, by RESULT_LIMIT_BYTES in the sandbox (RESULT_TOO_LARGE).
 */
import type { JsonValue } from '@bindery/context-ops';
import { DomainError } from '../../domain/errors.ts';

export const CONTENT_TYPES = ['text', 'image', 'audio', 'resource', 'resource_link'] as const;
/** The most content items one result may carry. */
export const MAX_CONTENT_ITEMS = 100;
export const MAX_URI_LENGTH = 8 * 1024;
export const MAX_MIME_TYPE_LENGTH = 255;

type JsonObject = { [key: string]: JsonValue };

/** An answer taken for an MCP tool result, its items checked. */
export interface ContentResult {
  content: JsonObject[];
  structuredContent?: JsonObject;
  isError?: boolean;
}

const RESULT_KEYS: ReadonlySet<string> = new Set(['content', 'structuredContent', 'isError']);
const TYPES: ReadonlySet<string> = new Set(CONTENT_TYPES);
// Standard base64 with its padding (MCP's `data` and `blob`); linear, whatever the input.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MIME_TYPE = /^[A-Za-z0-9][\w!#$&^.+-]*\/[A-Za-z0-9][\w!#$&^.+-]*(?:\s*;.*)?$/;
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S*$/;

/** The fields each content type may have, besides `type`, `annotations` and `_meta`. */
const FIELDS: Record<(typeof CONTENT_TYPES)[number], readonly string[]> = {
  text: ['text'],
  image: ['data', 'mimeType'],
  audio: ['data', 'mimeType'],
  resource: ['resource'],
  resource_link: ['uri', 'name', 'title', 'description', 'mimeType', 'size'],
};

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when `answer` is an MCP tool result by the rule above (its items not yet checked). */
export function isContentResult(answer: JsonValue): boolean {
  if (!isObject(answer) || !Array.isArray(answer.content)) return false;
  if (Object.keys(answer).some((key) => !RESULT_KEYS.has(key))) return false;
  return answer.content.every(
    (item) => isObject(item) && typeof item.type === 'string' && TYPES.has(item.type),
  );
}

/**
 * Checks a result `isContentResult` accepted: every item, `structuredContent` (an object) and
 * `isError` (a boolean). Throws UPSTREAM_FAILED naming the tool, the item and the field.
 */
export function checkContentResult(answer: JsonObject, toolName: string): ContentResult {
  const fail = (where: string, why: string, details: Record<string, unknown> = {}) =>
    new DomainError('UPSTREAM_FAILED', `tool ${toolName} answered a result whose ${where} ${why}`, {
      field: where,
      ...details,
    });
  const content = answer.content as JsonObject[];
  if (content.length > MAX_CONTENT_ITEMS) {
    throw fail(
      'content',
      `has ${content.length} items, more than the ${MAX_CONTENT_ITEMS} a result may carry`,
      {
        limit: MAX_CONTENT_ITEMS,
      },
    );
  }
  content.forEach((item, index) => checkItem(item, `content/${index}`, fail));
  const { structuredContent, isError } = answer;
  if (structuredContent !== undefined && !isObject(structuredContent)) {
    throw fail('structuredContent', 'is not an object (MCP structured content is a JSON object)');
  }
  if (isError !== undefined && typeof isError !== 'boolean') {
    throw fail('isError', 'is not a boolean');
  }
  return {
    content,
    ...(structuredContent !== undefined && { structuredContent: structuredContent as JsonObject }),
    ...(isError !== undefined && { isError: isError as boolean }),
  };
}

type Fail = (where: string, why: string, details?: Record<string, unknown>) => DomainError;

function checkItem(item: JsonObject, where: string, fail: Fail): void {
  const type = item.type as (typeof CONTENT_TYPES)[number];
  const allowed = FIELDS[type];
  for (const key of Object.keys(item)) {
    if (key === 'type' || key === 'annotations' || key === '_meta' || allowed.includes(key)) continue;
    throw fail(
      `${where}/${key}`,
      `is not a field of ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} item (it has ${['type', ...allowed, 'annotations', '_meta'].join(', ')})`,
    );
  }
  if (item.annotations !== undefined) checkAnnotations(item.annotations, `${where}/annotations`, fail);
  if (item._meta !== undefined && !isObject(item._meta)) throw fail(`${where}/_meta`, 'is not an object');
  switch (type) {
    case 'text':
      if (typeof item.text !== 'string') throw fail(`${where}/text`, 'is not a string');
      return;
    case 'image':
    case 'audio':
      base64(item.data, `${where}/data`, fail);
      mimeType(item.mimeType, `${where}/mimeType`, fail, `${type}/`);
      return;
    case 'resource': {
      const resource = item.resource;
      const at = `${where}/resource`;
      if (!isObject(resource)) throw fail(at, 'is not an object with uri and text or blob');
      for (const key of Object.keys(resource)) {
        if (!['uri', 'mimeType', 'text', 'blob', '_meta'].includes(key)) {
          throw fail(
            `${at}/${key}`,
            'is not a field of an embedded resource (uri, mimeType, text or blob, _meta)',
          );
        }
      }
      uri(resource.uri, `${at}/uri`, fail);
      if (resource.mimeType !== undefined) mimeType(resource.mimeType, `${at}/mimeType`, fail);
      if ((resource.text === undefined) === (resource.blob === undefined)) {
        throw fail(at, 'has neither or both of text and blob (one of them: text, or base64 blob)');
      }
      if (resource.text !== undefined && typeof resource.text !== 'string') {
        throw fail(`${at}/text`, 'is not a string');
      }
      if (resource.blob !== undefined) base64(resource.blob, `${at}/blob`, fail);
      if (resource._meta !== undefined && !isObject(resource._meta))
        throw fail(`${at}/_meta`, 'is not an object');
      return;
    }
    case 'resource_link':
      uri(item.uri, `${where}/uri`, fail);
      if (typeof item.name !== 'string' || item.name === '')
        throw fail(`${where}/name`, 'is not a non-empty string');
      for (const key of ['title', 'description'] as const) {
        if (item[key] !== undefined && typeof item[key] !== 'string')
          throw fail(`${where}/${key}`, 'is not a string');
      }
      if (item.mimeType !== undefined) mimeType(item.mimeType, `${where}/mimeType`, fail);
      if (item.size !== undefined && !(Number.isSafeInteger(item.size) && (item.size as number) >= 0)) {
        throw fail(`${where}/size`, 'is not a whole number of bytes');
      }
      return;
  }
}

function base64(value: JsonValue | undefined, where: string, fail: Fail): void {
  if (typeof value !== 'string' || value === '') throw fail(where, 'is not a non-empty base64 string');
  if (!BASE64.test(value)) {
    throw fail(where, 'is not base64 (A-Z, a-z, 0-9, + and /, padded with = to a multiple of 4)');
  }
}

function mimeType(value: JsonValue | undefined, where: string, fail: Fail, prefix?: string): void {
  if (typeof value !== 'string' || value.length > MAX_MIME_TYPE_LENGTH || !MIME_TYPE.test(value)) {
    throw fail(where, `is not a MIME type such as ${prefix === 'audio/' ? 'audio/wav' : 'image/png'}`);
  }
  if (prefix !== undefined && !value.toLowerCase().startsWith(prefix)) {
    throw fail(where, `is ${JSON.stringify(value)}, not an ${prefix}* type`);
  }
}

function uri(value: JsonValue | undefined, where: string, fail: Fail): void {
  if (typeof value !== 'string' || !URI.test(value)) {
    throw fail(where, 'is not a URI with a scheme (https://…, file:///…, or your own such as notes://…)');
  }
  if (value.length > MAX_URI_LENGTH) {
    throw fail(where, `is ${value.length} characters long, more than the ${MAX_URI_LENGTH} allowed`);
  }
}

function checkAnnotations(value: JsonValue, where: string, fail: Fail): void {
  if (!isObject(value)) throw fail(where, 'is not an object');
  for (const [key, field] of Object.entries(value)) {
    if (key === 'audience') {
      if (!Array.isArray(field) || field.some((role) => role !== 'user' && role !== 'assistant')) {
        throw fail(`${where}/audience`, 'is not a list of "user" and "assistant"');
      }
    } else if (key === 'priority') {
      if (typeof field !== 'number' || field < 0 || field > 1)
        throw fail(`${where}/priority`, 'is not a number from 0 to 1');
    } else if (key === 'lastModified') {
      if (typeof field !== 'string' || Number.isNaN(Date.parse(field))) {
        throw fail(`${where}/lastModified`, 'is not an ISO 8601 date');
      }
    } else {
      throw fail(`${where}/${key}`, 'is not an annotation (audience, priority, lastModified)');
    }
  }
}
