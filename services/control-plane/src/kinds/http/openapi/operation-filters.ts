/**
 * Which operations an import takes: filters by tag (any of the operation's tags), by path glob
 * (`*` one segment, `**` any number; braces are literal, so `/pets/{id}` matches itself) and by
 * method. An absent or empty filter takes everything.
 */
import { HTTP_METHODS } from '@bindery/contracts';
import picomatch from 'picomatch';
import { DomainError } from '../../../domain/errors.ts';

export interface OperationFilters {
  tags?: string[];
  paths?: string[];
  methods?: string[];
}

export type OperationFilter = (operation: { method: string; path: string; tags: string[] }) => boolean;

/** The filter; throws VALIDATION_FAILED (field `methods`) for a method no HTTP tool has. */
export function operationFilter(filters: OperationFilters): OperationFilter {
  const tags = filters.tags?.length ? new Set(filters.tags) : undefined;
  const methods = filters.methods?.length ? new Set(filters.methods.map((m) => m.toUpperCase())) : undefined;
  for (const method of methods ?? []) {
    if (!(HTTP_METHODS as readonly string[]).includes(method)) {
      throw new DomainError(
        'VALIDATION_FAILED',
        `methods: "${method}" is not one of ${HTTP_METHODS.join(', ')}`,
        {
          field: 'methods',
        },
      );
    }
  }
  const paths = filters.paths?.length ? picomatch(filters.paths, { nobrace: true, dot: true }) : undefined;
  return ({ method, path, tags: operationTags }) =>
    (methods === undefined || methods.has(method)) &&
    (tags === undefined || operationTags.some((tag) => tags.has(tag))) &&
    (paths === undefined || paths(path));
}
