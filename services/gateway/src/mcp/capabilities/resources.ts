/**
 * The resources capability: `resources/list`, `resources/templates/list` and `resources/read`
 * (`mcp/resources.ts`), in both eras; and the legacy era's `resources/subscribe` and
 * `resources/unsubscribe` (`mcp/resource-subscriptions.ts`).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { listResources, listResourceTemplates, readResource } from '../resources.ts';
import type { HandlerRegistry } from '../handler-table.ts';
import type { InputOf } from '../tools/client-input.ts';
import type { McpSessionContext } from '../session-context.ts';

export type ResourcesContext = Pick<
  McpSessionContext,
  'exposure' | 'resolve' | 'client' | 'pageSize' | 'requestOf' | 'subscriptions'
>;

/**
 * Sets the resources handlers both eras serve: list, templates and read (an upstream's resource
 * may ask the client for input: `input`).
 */
export function registerResources(server: HandlerRegistry, session: ResourcesContext, input?: InputOf): void {
  server.setRequestHandler(ListResourcesRequestSchema, async (request) =>
    listResources(await session.exposure(), request.params?.cursor, session.pageSize),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (request) =>
    listResourceTemplates(await session.exposure(), request.params?.cursor),
  );
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { sessionId, requestId } = session.requestOf(extra);
    return readResource(
      await session.exposure(),
      request.params.uri,
      session.client,
      requestId,
      extra.signal,
      sessionId,
      input?.(extra),
    );
  });
}

/**
 * Sets `resources/subscribe` and `resources/unsubscribe`: the legacy era's, on a session (the
 * modern era subscribes through `subscriptions/listen`).
 */
export function registerResourceSubscriptions(
  server: Pick<Server, 'setRequestHandler' | 'sendResourceUpdated'>,
  session: ResourcesContext,
): void {
  // Only a session this replica holds subscribes (the client's hint is no session here), and
  // updates go on its standing stream (the GET it keeps open), as sendResourceUpdated does.
  server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    await session.subscriptions.subscribe({
      sessionId: extra.sessionId,
      uri: request.params.uri,
      exposure: await session.exposure(),
      resolve: session.resolve,
      notify: (uri) => server.sendResourceUpdated({ uri }),
    });
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request, extra) => {
    session.subscriptions.unsubscribe(extra.sessionId, request.params.uri);
    return {};
  });
}
