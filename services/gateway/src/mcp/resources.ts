/**
 * Each binding whose tool has a context is a resource of its AEI (`bindery://tools/{tool}/context`,
 * JSON), and the template `bindery://tools/{tool}/context{/pointer*}` reads a part of it.
 * `resources/list` and `resources/templates/list` come from the cached config alone, paged like
 * every list (`pagination.ts`); `resources/read` goes through the control plane's executor, which
 * reads the context as `get_all` does (audited, same size limit).
 *
 * A read is confined to its context: the path after `/context` is percent-decoded segment by
 * segment into a JSON Pointer under the context, and `.`/`..` segments are refused (here and again
 * by the control plane), so no URI reaches another part of the table.
 */
import {
  UPSTREAM_CATALOG_LIMITS,
  compileUriTemplate,
  matchesUriTemplate,
  type ConfigBinding,
  type UriTemplateMatcher,
} from '@bindery/contracts';
import {
  ErrorCode,
  ReadResourceResultSchema,
  type ListResourcesResult,
  type ListResourceTemplatesResult,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import { ControlPlaneError } from '../control-plane/errors.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { JSONRPC } from '../http/jsonrpc-errors.ts';
import { auditedCaller } from './tools/tool-index.ts';
import { digestPerExposure, listPageOf } from './pagination.ts';
import { askUpstream, presented, upstreamResourcesOf, upstreamTemplatesOf } from './upstream-catalog.ts';
import type { RequestInput } from './tools/client-input.ts';
import { WireError } from './wire-error.ts';

const SCHEME = 'bindery://tools/';
const MIME = 'application/json';
/** URIs longer than this name nothing (a pointer under a context is at most 4,096 characters). */
const MAX_URI_CHARS = 4096;
const MAX_POINTER_CHARS = 4096;

export const CONTEXT_TEMPLATE = `${SCHEME}{tool_name}/context{/pointer*}`;

/** The URI of a binding's whole context. */
export function contextUri(toolName: string): string {
  return `${SCHEME}${toolName}/context`;
}

type ContextBinding = ConfigBinding & { adi_ref: { kind: 'context' } };

// The control plane marks the bindings whose tool can already read its whole context.
const isContextBinding = (b: ConfigBinding): b is ContextBinding =>
  b.resource === true && b.adi_ref.kind === 'context';

const indexes = new WeakMap<Exposure, readonly ContextBinding[]>();

/** The bindings of an exposure that are resources (tools with a context), in the tools' order. */
export function contextBindings(exposure: Exposure): readonly ContextBinding[] {
  if (exposure.kind !== 'aei') return [];
  let found = indexes.get(exposure);
  if (!found) {
    found = exposure.config.bindings.filter(isContextBinding);
    indexes.set(exposure, found);
  }
  return found;
}

type Listed = ListResourcesResult['resources'][number];

const listings = new WeakMap<Exposure, readonly Listed[]>();

/**
 * What resources/list shows of an exposure, in order: its contexts (in the tools' order), then the
 * resources of its attached upstream servers (in attachment order), one entry per URI.
 */
function listedResources(exposure: Exposure): readonly Listed[] {
  let listed = listings.get(exposure);
  if (!listed) {
    const own: Listed[] = contextBindings(exposure).map((b) => ({
      uri: contextUri(b.tool_name),
      name: b.tool_name,
      ...(b.title !== undefined && { title: b.title }),
      description: b.tool_description,
      mimeType: MIME,
    }));
    const seen = new Set(own.map((r) => r.uri));
    const upstream: Listed[] = [];
    for (const r of upstreamResourcesOf(exposure)) {
      // The control plane leaves clashes out already; a URI is listed once whatever it sends.
      if (seen.has(r.uri) || r.uri.startsWith(SCHEME)) continue;
      seen.add(r.uri);
      upstream.push({
        uri: r.uri,
        name: r.name,
        ...(r.title !== undefined && { title: r.title }),
        ...(r.description !== undefined && { description: r.description }),
        ...(r.mime_type !== undefined && { mimeType: r.mime_type }),
        ...(r.size !== undefined && { size: r.size }),
        ...presented(r),
      });
    }
    listed = [...own, ...upstream];
    listings.set(exposure, listed);
  }
  return listed;
}

/** A digest of the resources and upstream resource templates an exposure lists. */
export const resourcesDigest = digestPerExposure((exposure) => [
  listedResources(exposure),
  upstreamTemplatesOf(exposure),
]);

/** The page of resources/list that `cursor` names. */
export function listResources(
  exposure: Exposure,
  cursor: string | undefined,
  pageSize: number,
): ListResourcesResult {
  const page = listPageOf(exposure, listedResources(exposure), cursor, pageSize, (r) => r.uri);
  return {
    resources: page.items,
    ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }),
  };
}

// An exposure's upstream resource templates, parsed once per config.
const parsedTemplates = new WeakMap<Exposure, { serverId: string; template: UriTemplateMatcher }[]>();

function templatesOf(exposure: Exposure): { serverId: string; template: UriTemplateMatcher }[] {
  let parsed = parsedTemplates.get(exposure);
  if (!parsed) {
    parsed = [];
    for (const t of upstreamTemplatesOf(exposure)) {
      // The control plane keeps only templates that compile; one that does not names nothing.
      const compiled = compileUriTemplate(t.uri_template);
      if (!('problem' in compiled)) parsed.push({ serverId: t.upstream_server_id, template: compiled });
    }
    parsedTemplates.set(exposure, parsed);
  }
  return parsed;
}

/**
 * The upstream server that serves `uri` in this exposure: the one that lists it, else the first
 * whose resource template it matches (RFC 6570); undefined when none does.
 */
export function upstreamResource(
  exposure: Exposure,
  uri: string,
): { upstream_server_id: string } | undefined {
  if (uri.startsWith(SCHEME) || uri.length > UPSTREAM_CATALOG_LIMITS.maxUriChars) return undefined;
  const listed = upstreamResourcesOf(exposure).find((r) => r.uri === uri);
  if (listed) return listed;
  const matched = templatesOf(exposure).find(({ template }) => matchesUriTemplate(template, uri));
  return matched && { upstream_server_id: matched.serverId };
}

/**
 * resources/templates/list: the contexts' template, when the exposure has a resource to apply it
 * to, then the attached servers' templates (in attachment order).
 */
export function listResourceTemplates(
  exposure: Exposure,
  cursor: string | undefined,
): ListResourceTemplatesResult {
  // One page at most: no cursor is one the gateway handed out.
  if (cursor !== undefined) {
    throw new WireError(ErrorCode.InvalidParams, 'this list has one page; list again without a cursor');
  }
  const upstream = upstreamTemplatesOf(exposure).map((t) => ({
    uriTemplate: t.uri_template,
    name: t.name,
    ...(t.title !== undefined && { title: t.title }),
    ...(t.description !== undefined && { description: t.description }),
    ...(t.mime_type !== undefined && { mimeType: t.mime_type }),
    ...presented(t),
  }));
  if (contextBindings(exposure).length === 0) return { resourceTemplates: upstream };
  return {
    resourceTemplates: [
      {
        uriTemplate: CONTEXT_TEMPLATE,
        name: 'context_part',
        title: 'A part of a tool’s context',
        description:
          'One node under the context of a tool listed in resources/list: its path as segments after /context, ' +
          'e.g. bindery://tools/find_customers/context/customers/0',
        mimeType: MIME,
      },
      ...upstream,
    ],
  };
}

/** The binding and the JSON Pointer (under its context) a resource URI names; -32602 or -32002 otherwise. */
export function parseResourceUri(
  exposure: Exposure,
  uri: string,
): { binding: ContextBinding; pointer: string } {
  const shown = JSON.stringify(uri.slice(0, 200));
  if (uri.length > MAX_URI_CHARS || !uri.startsWith(SCHEME)) {
    throw new WireError(
      JSONRPC.RESOURCE_NOT_FOUND,
      `no resource ${shown}: resources/list names this exposure's`,
      {
        uri: uri.slice(0, 200),
      },
    );
  }
  const rest = uri.slice(SCHEME.length);
  const slash = rest.indexOf('/');
  const toolName = slash < 0 ? rest : rest.slice(0, slash);
  const binding = contextBindings(exposure).find((b) => b.tool_name === toolName);
  const after = slash < 0 ? '' : rest.slice(slash + 1);
  if (!binding || !(after === 'context' || after.startsWith('context/'))) {
    throw new WireError(
      JSONRPC.RESOURCE_NOT_FOUND,
      `no resource ${shown}: resources/list names this exposure's`,
      {
        uri: uri.slice(0, 200),
      },
    );
  }
  const segments = after === 'context' ? [] : after.slice('context/'.length).split('/');
  const tokens = segments.map((segment) => {
    let token: string;
    try {
      token = decodeURIComponent(segment);
    } catch {
      throw new WireError(ErrorCode.InvalidParams, `${shown}: a path segment is not valid percent-encoding`);
    }
    if (token === '.' || token === '..') {
      throw new WireError(
        ErrorCode.InvalidParams,
        `${shown}: "." and ".." segments are refused: a resource path stays inside its tool's context`,
      );
    }
    return token;
  });
  const pointer = tokens.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
  if (pointer.length > MAX_POINTER_CHARS) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `${shown}: the path is longer than ${MAX_POINTER_CHARS} characters`,
    );
  }
  return { binding, pointer };
}

/** The JSON-RPC error for a tool error the executor answered to a read. */
function readFailure(uri: string, toolName: string, text: string): WireError {
  let error: { code?: string; message?: string } = {};
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
  } catch {
    // Not the executor's error body: answered as an internal error below.
  }
  const message = error.message ?? 'the read failed';
  switch (error.code) {
    // FORBIDDEN: the binding or its exposure was switched off since this gateway's config said so.
    case 'NOT_FOUND':
    case 'FORBIDDEN':
      return new WireError(JSONRPC.RESOURCE_NOT_FOUND, `${uri.slice(0, 200)}: ${message}`, {
        code: error.code,
      });
    case 'VALIDATION_FAILED':
      return new WireError(ErrorCode.InvalidParams, message, { code: error.code });
    case 'RESULT_TOO_LARGE':
    case 'LIMIT_EXCEEDED':
      return new WireError(
        ErrorCode.InvalidParams,
        `${message}; read a part of it through the template (${contextUri(toolName)}/{path}) or list its items with a preview tool`,
        { code: error.code },
      );
    case 'RATE_LIMITED':
      return new WireError(JSONRPC.RATE_LIMITED, message, { code: error.code });
    default:
      return new WireError(ErrorCode.InternalError, message, { code: error.code ?? 'INTERNAL' });
  }
}

/** resources/read: the node the URI names, read by the control plane's executor. */
export async function readResource(
  exposure: Exposure,
  uri: string,
  client: ControlPlaneClient,
  requestId: string,
  signal?: AbortSignal,
  sessionId?: string,
  input?: RequestInput,
): Promise<ReadResourceResult> {
  if (exposure.kind !== 'aei') {
    throw new WireError(JSONRPC.RESOURCE_NOT_FOUND, 'this exposure has no resources');
  }
  const upstream = upstreamResource(exposure, uri);
  if (upstream) {
    return askUpstream(
      exposure,
      client,
      {
        upstream_server_id: upstream.upstream_server_id,
        request_id: requestId,
        ...(sessionId !== undefined && { session_id: sessionId }),
        read_resource: { uri },
      },
      { kind: 'resource', name: uri, schema: ReadResourceResultSchema },
      signal,
      input,
    );
  }
  const { binding, pointer } = parseResourceUri(exposure, uri);
  let result;
  try {
    result = await client.execute(
      binding.adi_ref.adi_id,
      {
        aei_id: exposure.config.aei.id,
        binding_id: binding.binding_id,
        config_version: exposure.config.aei.config_version,
        request_id: requestId,
        ...(auditedCaller(exposure) !== undefined && { caller: auditedCaller(exposure) }),
        resource: { pointer },
      },
      signal,
    );
  } catch (error) {
    if (!(error instanceof ControlPlaneError)) throw error;
    throw new WireError(JSONRPC.UNAVAILABLE, `the control plane did not answer the read: ${error.message}`, {
      code: 'UPSTREAM_FAILED',
    });
  }
  const first = result.content[0];
  const text = first !== undefined && 'text' in first && typeof first.text === 'string' ? first.text : '';
  if (result.isError) throw readFailure(uri, binding.tool_name, text);
  return { contents: [{ uri, mimeType: MIME, text }] };
}
