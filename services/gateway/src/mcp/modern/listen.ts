/**
 * `subscriptions/listen` (MCP 2026-07-28, `basic/patterns/subscriptions.mdx`): the modern era's
 * one long-lived stream, where a client hears the list changes and resource updates it asked for.
 * The answer is an event stream that opens with `notifications/subscriptions/acknowledged` (the
 * part of the request this server honours), then carries only the notifications asked for, each
 * stamped with the listen request's id as `_meta["io.modelcontextprotocol/subscriptionId"]`, and
 * a comment line every KEEP_ALIVE_MS so proxies keep it open. No progress or log message goes
 * here. When the gateway shuts down, each stream gets the listen request's result and ends.
 *
 * A stream is held like a session (the same caps, per key and in all), and its resource
 * subscriptions are the sessions' (`resource-subscriptions.ts`), keyed by the stream's own id. The
 * tasks it names (`taskIds`, the tasks extension) are followed by `task-watch.ts`.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import { EVENT_STREAM_HEADERS, sseEvent } from '../../http/event-stream.ts';
import { MAX_SUBSCRIPTIONS_PER_SESSION, type ResourceSubscriptions } from '../resource-subscriptions.ts';
import { SERVER_INFO } from '../server.ts';
import { META } from './envelope.ts';
import { MAX_TASK_HANDLE_CHARS } from '@bindery/contracts';
import { MAX_LISTEN_TASKS, TaskWatch, type TaskPoll } from './task-watch.ts';

/** A comment line this often keeps an idle stream open through proxies. */
export const KEEP_ALIVE_MS = 15_000;

/** What a listen request may ask for (its `params.notifications`). */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
  /** Tasks whose changes the stream hears (`notifications/tasks`, the tasks extension). */
  taskIds?: string[];
}

export interface Listener {
  /** The stream's own id (its resource subscriptions are kept under it). */
  id: string;
  keyHash: string;
  /** The AEI it listens to; undefined for a legacy instance. */
  aeiId: string | undefined;
  subscriptionId: RequestId;
  honoured: ListenFilter;
  res: ServerResponse;
  /** List changes waiting for a client that does not read its stream (each sent once on drain). */
  pending: Set<string>;
  /** Task changes waiting for such a client: the latest of each task (sent on drain). */
  waitingTasks: Map<string, { method: string; params?: Record<string, unknown> }>;
  /**
   * Until the acknowledgement is written (it must come first): what happened meanwhile, once each
   * (a list change, a resource's update), sent right after it.
   */
  early?: Map<string, { method: string; params?: Record<string, unknown> }> | undefined;
  /** Which of the prompt and resource lists changed since this stream last looked. */
  listsChanged(): Promise<{ prompts: boolean; resources: boolean }>;
}

/** A listen request's filter, or what is wrong with it. */
export function listenFilterOf(params: Record<string, unknown>): ListenFilter | string {
  const asked = params.notifications;
  if (asked === undefined) return {};
  if (typeof asked !== 'object' || asked === null || Array.isArray(asked)) {
    return 'params.notifications must be an object';
  }
  const filter: ListenFilter = {};
  for (const flag of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    const value = (asked as Record<string, unknown>)[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') return `params.notifications.${flag} must be a boolean`;
    filter[flag] = value;
  }
  const uris = (asked as Record<string, unknown>).resourceSubscriptions;
  if (uris !== undefined) {
    if (!Array.isArray(uris) || !uris.every((uri) => typeof uri === 'string')) {
      return 'params.notifications.resourceSubscriptions must be an array of URIs';
    }
    if (uris.length > MAX_SUBSCRIPTIONS_PER_SESSION) {
      return `a listen stream subscribes to at most ${MAX_SUBSCRIPTIONS_PER_SESSION} resources`;
    }
    filter.resourceSubscriptions = [...new Set(uris)];
  }
  const taskIds = (asked as Record<string, unknown>).taskIds;
  if (taskIds !== undefined) {
    if (
      !Array.isArray(taskIds) ||
      !taskIds.every((id) => typeof id === 'string' && id !== '' && id.length <= MAX_TASK_HANDLE_CHARS)
    ) {
      return 'params.notifications.taskIds must be an array of task ids';
    }
    if (taskIds.length > MAX_LISTEN_TASKS) return `a listen stream follows at most ${MAX_LISTEN_TASKS} tasks`;
    filter.taskIds = [...new Set(taskIds as string[])];
  }
  return filter;
}

const event = (message: object) => sseEvent(JSON.stringify(message));

/** The open listen streams of this gateway. */
export class ListenStreams {
  readonly #all = new Map<string, Listener>();
  readonly #log: FastifyBaseLogger;

  constructor(log: FastifyBaseLogger) {
    this.#log = log;
  }

  holds(id: string): boolean {
    return this.#all.has(id);
  }

  stream(id: string): ServerResponse | undefined {
    return this.#all.get(id)?.res;
  }

  /** Streams of this key open now. */
  countOf(keyHash: string): number {
    let count = 0;
    for (const listener of this.#all.values()) if (listener.keyHash === keyHash) count += 1;
    return count;
  }

  get size(): number {
    return this.#all.size;
  }

  /**
   * Opens the stream on `res`: subscribes the resources asked for (those that name no resource of
   * the exposure, or an upstream's that cannot be followed, are left out of the acknowledgement),
   * acknowledges, and keeps it open until the client closes it or the gateway ends it.
   */
  async open(
    res: ServerResponse,
    request: {
      keyHash: string;
      subscriptionId: RequestId;
      filter: ListenFilter;
      exposure: Exposure;
      resolve: () => Promise<Exposure>;
      listsChanged: Listener['listsChanged'];
      /** How a task named in `taskIds` is looked up (its tasks/get). */
      tasks?: TaskPoll | undefined;
    },
    subscriptions: ResourceSubscriptions,
  ): Promise<void> {
    const id = `listen:${randomUUID()}`;
    const { filter, exposure } = request;
    const honoured: ListenFilter = {
      ...(filter.toolsListChanged && { toolsListChanged: true }),
      ...(filter.promptsListChanged && { promptsListChanged: true }),
      ...(filter.resourcesListChanged && { resourcesListChanged: true }),
    };
    const listener: Listener = {
      id,
      keyHash: request.keyHash,
      aeiId: exposure.kind === 'aei' ? exposure.config.aei.id : undefined,
      subscriptionId: request.subscriptionId,
      honoured,
      res,
      pending: new Set(),
      waitingTasks: new Map(),
      listsChanged: request.listsChanged,
      early: new Map(),
    };
    // Held before subscribing: the subscriptions ask whether their holder is open.
    this.#all.set(id, listener);
    const subscribed: string[] = [];
    for (const uri of filter.resourceSubscriptions ?? []) {
      try {
        await subscriptions.subscribe({
          sessionId: id,
          uri,
          exposure,
          resolve: request.resolve,
          notify: async (updated) =>
            this.#send(listener, { method: 'notifications/resources/updated', params: { uri: updated } }),
        });
        subscribed.push(uri);
      } catch (error) {
        this.#log.debug({ err: error, uri: uri.slice(0, 200) }, 'listen: resource not subscribed');
      }
    }
    if (subscribed.length > 0) honoured.resourceSubscriptions = subscribed;
    const poll = request.tasks;
    const watch =
      poll &&
      new TaskWatch(
        poll,
        (task) => this.#send(listener, { method: 'notifications/tasks', params: task }),
        (error) => this.#log.debug({ err: error }, 'listen: task not looked up'),
      );
    // Only the tasks found for this caller are followed (and acknowledged).
    const followed = watch ? await watch.admit(filter.taskIds ?? []) : new Map();
    if (followed.size > 0) honoured.taskIds = [...followed.keys()];
    // The client left while an upstream subscription was being taken.
    if (res.destroyed || res.writableEnded) {
      this.#all.delete(id);
      subscriptions.drop(id);
      return;
    }
    res.writeHead(200, EVENT_STREAM_HEADERS);
    res.write(
      event({
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { [META.subscriptionId]: request.subscriptionId }, notifications: honoured },
      }),
    );
    const early = listener.early;
    listener.early = undefined;
    for (const notification of early?.values() ?? []) {
      // An update held for a URI whose subscription was then refused is not this stream's.
      const uri = notification.params?.uri;
      if (typeof uri === 'string' && !subscribed.includes(uri)) continue;
      this.#send(listener, notification);
    }
    watch?.follow(followed);
    const keepAlive = setInterval(() => {
      if (!res.writableNeedDrain) res.write(':\n\n');
    }, KEEP_ALIVE_MS);
    keepAlive.unref();
    res.once('close', () => {
      clearInterval(keepAlive);
      watch?.stop();
      this.#all.delete(id);
      subscriptions.drop(id);
    });
  }

  /**
   * The config of these AEIs changed: each stream listening for tool list changes hears one, and
   * those whose prompts or resources changed hear that, as they asked. Answers how many streams
   * were told of their tools.
   */
  announce(aeiIds: readonly string[]): number {
    const wanted = new Set(aeiIds);
    let told = 0;
    for (const listener of this.#all.values()) {
      if (listener.aeiId === undefined || !wanted.has(listener.aeiId)) continue;
      const { honoured } = listener;
      if (honoured.toolsListChanged) {
        this.#send(listener, { method: 'notifications/tools/list_changed' });
        told += 1;
      }
      if (!honoured.promptsListChanged && !honoured.resourcesListChanged) continue;
      void listener
        .listsChanged()
        .then((changed) => {
          if (changed.prompts && honoured.promptsListChanged) {
            this.#send(listener, { method: 'notifications/prompts/list_changed' });
          }
          if (changed.resources && honoured.resourcesListChanged) {
            this.#send(listener, { method: 'notifications/resources/list_changed' });
          }
        })
        .catch((error: unknown) => this.#log.debug({ err: error }, 'listen: list change not delivered'));
    }
    return told;
  }

  /** Ends every stream with its listen request's result (the gateway is closing). */
  endAll(): void {
    for (const listener of [...this.#all.values()]) {
      const { res, subscriptionId } = listener;
      if (res.writableEnded || res.destroyed) continue;
      res.end(
        event({
          jsonrpc: '2.0',
          id: subscriptionId,
          result: {
            resultType: 'complete',
            _meta: { [META.subscriptionId]: subscriptionId, [META.serverInfo]: SERVER_INFO },
          },
        }),
      );
    }
  }

  /** Sends a notification on the listener's stream, stamped with its subscription id. */
  #send(listener: Listener, notification: { method: string; params?: Record<string, unknown> }): void {
    const { res } = listener;
    if (res.writableEnded || res.destroyed) return;
    if (listener.early) {
      listener.early.set(
        `${notification.method}\u0000${String(notification.params?.uri ?? '')}`,
        notification,
      );
      return;
    }
    // A client that does not read: a task's change waits, its latest state only, and goes when the
    // stream drains (each is the whole task: the ones before it say nothing more).
    const taskId = notification.method === 'notifications/tasks' ? notification.params?.taskId : undefined;
    if (res.writableNeedDrain && typeof taskId === 'string') {
      if (listener.waitingTasks.size === 0) {
        res.once('drain', () => {
          const waiting = [...listener.waitingTasks.values()];
          listener.waitingTasks.clear();
          for (const task of waiting) this.#send(listener, task);
        });
      }
      listener.waitingTasks.set(taskId, notification);
      return;
    }
    // A list change waits, once however often it happens, and goes when the stream drains
    // (resource updates wait the same way, in resource-subscriptions.ts).
    if (res.writableNeedDrain && notification.params === undefined) {
      if (listener.pending.size === 0) {
        res.once('drain', () => {
          const methods = [...listener.pending];
          listener.pending.clear();
          for (const method of methods) this.#send(listener, { method });
        });
      }
      listener.pending.add(notification.method);
      return;
    }
    res.write(
      event({
        jsonrpc: '2.0',
        method: notification.method,
        params: { ...notification.params, _meta: { [META.subscriptionId]: listener.subscriptionId } },
      }),
    );
  }
}
