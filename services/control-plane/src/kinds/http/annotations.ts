/**
 * MCP tool annotations of an HTTP tool, from its method: GET and HEAD only read, PUT and DELETE may
 * be repeated with the same effect, and every HTTP tool reaches a world outside Bindery. What the
 * author wrote in `annotations` wins, field by field.
 */
import type { HttpMethod, HttpToolConfig, ToolAnnotations } from '@bindery/contracts';

function fromMethod(method: HttpMethod): ToolAnnotations {
  const readOnly = method === 'GET' || method === 'HEAD';
  return {
    readOnlyHint: readOnly,
    // The spec reads idempotentHint only on tools that write.
    ...((method === 'PUT' || method === 'DELETE') && { idempotentHint: true }),
    openWorldHint: true,
  };
}

/** The annotations `tools/list` shows for the tool. */
export function httpToolAnnotations(config: Pick<HttpToolConfig, 'method' | 'annotations'>): ToolAnnotations {
  return { ...fromMethod(config.method), ...config.annotations };
}
