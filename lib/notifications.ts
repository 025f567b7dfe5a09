import { Observable, type Subscriber } from 'rxjs';
import type { ListenFilter } from './filter.js';
import { mayReceive, type MessageFrame, type TopicKind } from './frame.js';
import type { Hub, HubTarget } from './hub.js';
import { arrayOf, boolean, hub as validHub, options as validOptions, string } from './validate.js';

/**
 * The merged notifications of every topic a filter names, straight from the hub.
 *
 * Subscribing registers the subscriber on each topic synchronously (DESIGN M6: a listen's ack
 * goes out after this), with one registration object per stream and no merge layer on the
 * per-frame path; unsubscribing removes them all. Hub topics never complete nor error. An empty
 * filter gives a stream that hears nothing.
 *
 * @example
 * notifications(hub, { toolsListChanged: true }).pipe(listenPipeline({ requestId: 7, filter, demand$ }));
 * @param hub where the notifications come from.
 * @param filter which topics (see `parseListenFilter`).
 * @param scopes the receiver's read scopes: notifications published with a `scope` outside them
 *   are left out (see `mayReceive`). Default: none (only unscoped notifications).
 * @throws InvalidOptionError naming `notifications hub` when `hub` is not a Hub, `notifications
 *   filter` (or the field) when `filter` is not a {@link ListenFilter} (an unknown field, a flag not a
 *   boolean, URIs or task ids not an array of strings). `scopes` is not checked: it is the
 *   principal's, which an endpoint's `authenticate` hook returns per request.
 */
export function notifications(hub: Hub, filter: ListenFilter, scopes?: ReadonlySet<string>): Observable<MessageFrame> {
  validHub('notifications hub', hub);
  listenFilter('notifications filter', filter);
  return new TopicsObservable(hub, filter, scopes);
}

const FILTER_FIELDS: readonly (keyof ListenFilter)[] = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged', 'resourceSubscriptions', 'taskIds'];

/** A {@link ListenFilter} as `parseListenFilter` makes one: a misspelled field would listen to nothing. */
function listenFilter(label: string, filter: unknown): void {
  const given = validOptions<keyof ListenFilter>(label, filter, FILTER_FIELDS, { like: '{ toolsListChanged: true }', keyLabel: `${label}.` });
  for (const flag of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    if (given[flag] !== undefined) boolean(`${label}.${flag}`, given[flag]);
  }
  for (const list of ['resourceSubscriptions', 'taskIds'] as const) {
    if (given[list] !== undefined) arrayOf(`${label}.${list}`, given[list], 'an array of strings', (entryLabel, entry) => string(entryLabel, entry));
  }
}

/**
 * What {@link notifications} returns: an Observable whose subscriber is registered on the topics
 * directly, and whose `attach` registers any `next` target the same way (the stage operators
 * piped onto it register their first stage: no subscriber in between).
 * @internal
 */
export class TopicsObservable extends Observable<MessageFrame> {
  constructor(
    private readonly hub: Hub,
    private readonly filter: ListenFilter,
    private readonly scopes: ReadonlySet<string> | undefined,
  ) {
    super();
  }

  /** Registers `sink` on every topic; unsubscribe the result to leave them. */
  attach(sink: HubTarget): TopicRegistration {
    return attachTopics(this.hub, this.filter, this.scopes, sink);
  }

  // Observable's own (internal, untyped) subscribe hook: no subscribe function, hence no closure.
  protected _subscribe(subscriber: Subscriber<MessageFrame>): TopicRegistration {
    return this.attach(subscriber);
  }
}

/**
 * Registers `sink` on every topic of `filter` (what subscribing {@link notifications} does), with
 * one registration object for all of them; unsubscribe it to leave every topic. A listen stream
 * assembled by the endpoint hands its first stage here directly. `filter` is valid by then
 * ({@link notifications} checked it).
 * @internal
 */
export function attachTopics(hub: Hub, filter: ListenFilter, scopes: ReadonlySet<string> | undefined, sink: HubTarget): TopicRegistration {
  const registration = new TopicRegistration(hub, filter, scopes, sink);
  forEachTopic(filter, (topic, key) => hub.attach(topic, key, registration));
  return registration;
}

/**
 * A stream's one registration on all of its topics: passes the notifications its principal may
 * receive; unsubscribed, it leaves every topic.
 * @internal
 */
export class TopicRegistration implements HubTarget {
  private attached = true;
  /**
   * The receiver's read scopes; `undefined` for none. A request's empty set is not kept: an
   * anonymous caller's `new Set()` is about 220 bytes, for every idle stream (issue 33).
   */
  private readonly scopes: ReadonlySet<string> | undefined;

  constructor(
    private readonly hub: Hub,
    private readonly filter: ListenFilter,
    scopes: ReadonlySet<string> | undefined,
    private readonly sink: HubTarget,
  ) {
    this.scopes = scopes === undefined || scopes.size === 0 ? undefined : scopes;
  }

  next(frame: MessageFrame): void {
    if (frame.scope === undefined || mayReceive(frame, this.scopes)) this.sink.next(frame);
  }

  unsubscribe(): void {
    if (!this.attached) return;
    this.attached = false;
    const { hub } = this;
    forEachTopic(this.filter, (topic, key) => hub.detach(topic, key, this));
  }
}

/** Calls `fn` with each hub topic a filter names (the kind, and the URI or task id). @internal */
export function forEachTopic(filter: ListenFilter, fn: (topic: TopicKind, key: string | undefined) => void): void {
  if (filter.toolsListChanged) fn('tools', undefined);
  if (filter.promptsListChanged) fn('prompts', undefined);
  if (filter.resourcesListChanged) fn('resources', undefined);
  if (filter.resourceSubscriptions !== undefined) for (const uri of filter.resourceSubscriptions) fn('resource', uri);
  if (filter.taskIds !== undefined) for (const taskId of filter.taskIds) fn('task', taskId);
}
