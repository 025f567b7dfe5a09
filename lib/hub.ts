import { beginDispatch, endDispatch } from './clock.js';
import { Observable, type SchedulerLike } from 'rxjs';
import { encodeMessage, encodeResourceUpdated } from './encode.js';
import type { MessageFrame, TopicKind } from './frame.js';
import type { JsonRpcNotification } from './jsonrpc.js';
import { accountQueue, reportError } from './telemetry.js';
import { boolean, implementing, object, oneOf, options as validOptions, scheduler as validScheduler, string, type StringRule } from './validate.js';
import { currentTurn } from './turn.js';

/** A task's status as delivered by `notifications/tasks/status` (MCP tasks); extra members are kept. */
export interface TaskStatus {
  readonly taskId: string;
  readonly status: string;
  readonly [member: string]: unknown;
}

/** A change published on the hub: what `notify*` calls produce and what a bus relays between nodes. */
export type HubEvent = (
  | { readonly topic: 'tools' }
  | { readonly topic: 'prompts' }
  | { readonly topic: 'resources' }
  | { readonly topic: 'resource'; readonly uri: string }
  | { readonly topic: 'task'; readonly task: TaskStatus }
) & {
  /** The read scope a receiver must hold (see {@link PublishOptions.scope}); absent: every subscriber. */
  readonly scope?: string;
};

/** Options of one publish (`notify*`). */
export interface PublishOptions {
  /**
   * Only streams whose principal holds this read scope (`AuthInfo.scopes`) receive the
   * notification; others never see it, not even as a keep-alive's absence. Give it whenever the
   * change itself would reveal activity on a resource some subscribers of the topic may not read
   * (a file changing under a private folder, heard on its parent's collection URI). Relayed to
   * the other nodes of a fleet. Default: every subscriber of the topic.
   */
  readonly scope?: string;
}

/** What a stream can listen to: one topic, matched exactly. */
export type TopicSelector =
  | { readonly topic: 'tools' }
  | { readonly topic: 'prompts' }
  | { readonly topic: 'resources' }
  | { readonly topic: 'resource'; readonly uri: string }
  | { readonly topic: 'task'; readonly taskId: string };

/**
 * Relays hub events between nodes (a cluster-wide hub). The in-process hub needs none.
 *
 * Contract: `publish` relays an event that this node's hub has already delivered locally, so a
 * bus must never hand that event back to this node's `deliver` (no double delivery); `connect`
 * starts delivering events published on other nodes and returns a function that stops. A bus that
 * can tell when this node may have missed events (a gap it cannot fill) calls `resync`, and the
 * hub tells its streams to re-read ({@link Hub.resync}).
 */
export interface HubBus {
  publish(event: HubEvent): void;
  connect(deliver: (event: HubEvent) => void, resync?: () => void): () => void;
}

/**
 * The hubs a {@link HubBus} is connected to, for bus implementations: `connect` is the bus's own,
 * and `deliver` / `resync` hand an event or a gap to every connected hub, a failing one reported on
 * `channels.error` without stopping the others.
 * @internal
 */
export class HubBusTargets {
  readonly #deliverers = new Set<(event: HubEvent) => void>();
  readonly #resyncers = new Set<() => void>();

  /** What `HubBus.connect` does: starts handing events to `deliver` and gaps to `resync`; returns the function that stops it. */
  connect(deliver: (event: HubEvent) => void, resync?: () => void): () => void {
    // Wrapped: the same function connected twice is two connections, each stopped by its own.
    const entry = (event: HubEvent) => deliver(event);
    const gap = resync === undefined ? undefined : () => resync();
    this.#deliverers.add(entry);
    if (gap !== undefined) this.#resyncers.add(gap);
    return () => {
      this.#deliverers.delete(entry);
      if (gap !== undefined) this.#resyncers.delete(gap);
    };
  }

  deliver(event: HubEvent): void {
    for (const deliver of this.#deliverers) {
      try {
        deliver(event);
      } catch (error) {
        reportError('hub', error);
      }
    }
  }

  resync(): void {
    for (const resync of this.#resyncers) {
      try {
        resync();
      } catch (error) {
        reportError('hub', error);
      }
    }
  }
}

/** Options of {@link Hub}. */
export interface HubOptions {
  /** Relays events to and from other nodes; default none (in-process only). */
  readonly bus?: HubBus;
  /**
   * Collapse notification storms: a notification published on a topic right after an identical
   * one (same method, same URI or status, same scope) in the same event-loop turn is not delivered
   * again, since no stream has written, nor its client read, the first one yet. A registry that
   * calls `notifyToolsChanged()` 1 000 times in a loop sends each stream one frame; the frames not
   * sent are counted in `queueTotals().coalesced`. A different notification in between, or a
   * stream that subscribed in between, ends the run (ordering is kept and nobody misses one).
   * Default `true`.
   */
  readonly coalesce?: boolean;
  /**
   * What tells one instant from the next for {@link HubOptions.coalesce}, beside the event-loop
   * turn: give the `TestScheduler` or `VirtualTimeScheduler` your streams run on, and publishes at
   * different virtual times (all in one real turn) are never collapsed. Default: none (real time,
   * where a new instant is a new turn).
   */
  readonly scheduler?: SchedulerLike;
}

/** The method each topic's notification carries. */
export const NotificationMethod = Object.freeze({
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
  resource: 'notifications/resources/updated',
  task: 'notifications/tasks/status',
} as const);

function listChangedFrame(topic: 'tools' | 'prompts' | 'resources', scope?: string): MessageFrame {
  const message: JsonRpcNotification = Object.freeze({ jsonrpc: '2.0', method: NotificationMethod[topic] });
  const encoded = Object.freeze(encodeMessage(message));
  return Object.freeze(
    scope === undefined
      ? { type: 'message', message, priority: 'notification', topic, coalesceKey: message.method, encoded }
      : { type: 'message', message, priority: 'notification', topic, coalesceKey: message.method, encoded, scope },
  );
}

const PUBLISH_OPTIONS: readonly (keyof PublishOptions)[] = ['scope'];
// Constant rules: the checks on the publish path allocate nothing.
const URI: StringRule = { what: 'a string (the resource URI)' };
const TASK_ID: StringRule = { what: 'a string (the task id)' };
const SCOPE: StringRule = { what: 'a non-empty string (a read scope)', nonEmpty: true };

/** The `scope` of a publish's `options` (of the method `method`), checked: a non-empty string, or undefined. */
function scopeOf(method: string, options: PublishOptions | undefined): string | undefined {
  if (options === undefined) return undefined;
  const label = `hub.${method} options`;
  const scope = validOptions(label, options, PUBLISH_OPTIONS, { like: "{ scope: 'read:private' }", keyLabel: `${label}.` }).scope;
  return scope === undefined ? undefined : string(`${label}.scope`, scope, SCOPE);
}

const TOPIC_KINDS: readonly TopicKind[] = ['tools', 'prompts', 'resources', 'resource', 'task'];

/** The key of a topic selector (the URI of `resource`, the id of `task`), checked; `undefined` for a list. */
function topicKey(label: string, selector: TopicSelector): string | undefined {
  object(label, selector, "a TopicSelector such as { topic: 'resource', uri }");
  const kind = oneOf(`${label}.topic`, selector.topic, TOPIC_KINDS);
  if (kind === 'resource') return string(`${label}.uri`, (selector as { uri?: unknown }).uri, URI);
  if (kind === 'task') return string(`${label}.taskId`, (selector as { taskId?: unknown }).taskId, TASK_ID);
  return undefined;
}

// List-changed notifications carry nothing: one frozen frame each serves every publish.
const TOOLS_FRAME = listChangedFrame('tools');
const PROMPTS_FRAME = listChangedFrame('prompts');
const RESOURCES_FRAME = listChangedFrame('resources');
const TOOLS_EVENT: HubEvent = Object.freeze({ topic: 'tools' });
const PROMPTS_EVENT: HubEvent = Object.freeze({ topic: 'prompts' });
const RESOURCES_EVENT: HubEvent = Object.freeze({ topic: 'resources' });

/**
 * What the hub hands a topic's notifications to: a Subscriber, or any object with `next` (a
 * stream's one registration on all of its topics). `next` must not throw into the hub (a throw is
 * reported on `channels.error` and delivery goes on).
 * @internal
 */
export interface HubTarget {
  next(frame: MessageFrame): void;
  /**
   * How many receivers this one registration hands each frame to (a fan-out of its own, such as
   * the legacy sessions' list-changed registration), for the count of frames a collapsed storm
   * did not send (`queueTotals().coalesced`); default 1.
   */
  readonly weight?: number;
}

/** The subscribers of one topic; delivery iterates over a snapshot rebuilt only after a change. */
class Topic {
  readonly subscribers = new Set<HubTarget>();
  private snapshot: HubTarget[] | null = null;
  // The registrations that stand for several receivers (rare): counted by their weight.
  private weighted: HubTarget[] | undefined = undefined;
  // The frame this topic delivered last and the turn it did, when it may be collapsed (storms).
  private last: MessageFrame | undefined = undefined;
  private lastTurn = -1;
  private lastTime = 0;

  constructor(
    private readonly coalesce: boolean,
    private readonly scheduler: SchedulerLike | undefined,
  ) {}

  add(subscriber: HubTarget): void {
    if (subscriber.weight !== undefined && !this.subscribers.has(subscriber)) (this.weighted ??= []).push(subscriber);
    this.subscribers.add(subscriber);
    this.snapshot = null;
    // The newcomer has not heard the last one: the next identical one is news to it.
    this.last = undefined;
  }

  delete(subscriber: HubTarget): void {
    if (this.subscribers.delete(subscriber) && this.weighted !== undefined) {
      const at = this.weighted.indexOf(subscriber);
      if (at >= 0) this.weighted.splice(at, 1);
    }
    this.snapshot = null;
  }

  /** How many receivers a delivery of one frame reaches now. */
  private receivers(count: number): number {
    const weighted = this.weighted;
    if (weighted === undefined) return count;
    for (const target of weighted) count += target.weight! - 1;
    return count;
  }

  emit(frame: MessageFrame): void {
    const list = (this.snapshot ??= Array.from(this.subscribers));
    if (list.length === 0) return;
    if (this.coalesce && this.repeats(frame)) {
      accountQueue(0, 0, this.receivers(list.length));
      return;
    }
    // One publish is one instant: the streams' clocks read the time once for all of them.
    beginDispatch();
    try {
      for (let i = 0; i < list.length; i++) {
        // A failing stream must not stop delivery to the others, nor throw into the publisher.
        try {
          list[i]!.next(frame);
        } catch (error) {
          reportError('hub', error);
        }
      }
    } finally {
      endDispatch();
    }
  }

  /** True when `frame` is the one this topic delivered last, in this turn; else remembers it. */
  private repeats(frame: MessageFrame): boolean {
    const last = this.last;
    const turn = currentTurn();
    const time = this.scheduler === undefined ? 0 : this.scheduler.now();
    if (last !== undefined && turn === this.lastTurn && time === this.lastTime && frame.coalesceKey === last.coalesceKey && frame.scope === last.scope) return true;
    this.last = frame.coalesceKey === undefined ? undefined : frame;
    this.lastTurn = turn;
    this.lastTime = time;
    return false;
  }
}

/**
 * The exact-match publish/subscribe registry between change sources and listen streams.
 *
 * Change sources call `notify*`. A stream hears the topics of its filter through
 * {@link notifications}, which registers it on each of them directly (one registration object per
 * stream, no Observable per topic); {@link Hub.topic} gives one topic as an Observable. Publishing
 * is synchronous: when `notify*` returns, every local stream has been handed the notification. A
 * resource or task notification is encoded once per publish, and only when some local stream
 * listens to its topic; a list change's frame is made once (once per scope, for the first 64
 * scopes) and shared by every publish. A resource or task topic no stream listens to holds no
 * memory, and a publish to it allocates nothing (but the event relayed to a bus). With a
 * {@link HubBus}, local streams are served first and the event is then relayed.
 *
 * @example
 * const hub = new Hub();
 * hub.topic({ topic: 'resource', uri: 'file:///a' }).subscribe((frame) => console.log(frame.message));
 * hub.notifyResourceUpdated('file:///a');   // logged
 * hub.notifyResourceUpdated('file:///a/b'); // exact match only: not logged
 * @see notifications
 * @see listen
 */
export class Hub {
  private readonly tools: Topic;
  private readonly prompts: Topic;
  private readonly resources: Topic;
  private readonly resourceTopics = new Map<string, Topic>();
  private readonly taskTopics = new Map<string, Topic>();
  private readonly bus: HubBus | undefined;
  private readonly disconnect: (() => void) | undefined;

  private readonly coalesce: boolean;
  private readonly scheduler: SchedulerLike | undefined;

  /**
   * @param options `bus`: relay to other nodes, default none; `coalesce`: collapse storms, default `true`; `scheduler`: virtual time for `coalesce` (see {@link HubOptions}).
   * @throws InvalidOptionError when `options` is not an object, has a key that is not an option, or
   *   `bus` is not a {@link HubBus} (`publish`, `connect`), `coalesce` not a boolean or `scheduler` not an RxJS `SchedulerLike`.
   */
  constructor(options: HubOptions = {}) {
    const given = validOptions<keyof HubOptions>('Hub options', options, ['bus', 'coalesce', 'scheduler']);
    this.coalesce = given.coalesce === undefined ? true : boolean('HubOptions.coalesce', given.coalesce);
    this.scheduler = given.scheduler === undefined ? undefined : validScheduler<SchedulerLike>('HubOptions.scheduler', given.scheduler);
    this.tools = new Topic(this.coalesce, this.scheduler);
    this.prompts = new Topic(this.coalesce, this.scheduler);
    this.resources = new Topic(this.coalesce, this.scheduler);
    this.bus = given.bus === undefined ? undefined : implementing<HubBus>('HubOptions.bus', given.bus, ['publish', 'connect'], 'a HubBus (publish, connect), e.g. a RedisBus');
    this.disconnect = this.bus?.connect((event) => this.deliver(event), () => this.resync());
  }

  /**
   * Publishes `notifications/tools/list_changed`.
   * @param options `scope`: only principals holding it hear this one; default everyone (see {@link PublishOptions}).
   * @throws InvalidOptionError naming `hub.notifyToolsChanged options` when `options` is not `{ scope }`
   *   with a non-empty string (a bare string is refused: pass `{ scope }`).
   */
  notifyToolsChanged(options?: PublishOptions): void {
    this.notifyList(this.tools, TOOLS_FRAME, TOOLS_EVENT, scopeOf('notifyToolsChanged', options));
  }

  /**
   * Publishes `notifications/prompts/list_changed`.
   * @param options `scope`: only principals holding it hear this one; default everyone (see {@link PublishOptions}).
   * @throws InvalidOptionError naming `hub.notifyPromptsChanged options` as {@link Hub.notifyToolsChanged} does.
   */
  notifyPromptsChanged(options?: PublishOptions): void {
    this.notifyList(this.prompts, PROMPTS_FRAME, PROMPTS_EVENT, scopeOf('notifyPromptsChanged', options));
  }

  /**
   * Publishes `notifications/resources/list_changed`.
   * @param options `scope`: only principals holding it hear this one; default everyone (see {@link PublishOptions}).
   * @throws InvalidOptionError naming `hub.notifyResourcesChanged options` as {@link Hub.notifyToolsChanged} does.
   */
  notifyResourcesChanged(options?: PublishOptions): void {
    this.notifyList(this.resources, RESOURCES_FRAME, RESOURCES_EVENT, scopeOf('notifyResourcesChanged', options));
  }

  /** A list change: the shared frame and event when unscoped, else delivered and relayed with its scope. */
  private notifyList(topic: Topic, frame: MessageFrame, event: HubEvent, scope: string | undefined): void {
    if (scope === undefined) {
      topic.emit(frame);
      this.bus?.publish(event);
    } else this.deliverAndRelay({ topic: event.topic as 'tools' | 'prompts' | 'resources', scope });
  }

  /**
   * Publishes `notifications/resources/updated {uri}` to the streams subscribed to exactly `uri`.
   * @param uri the resource URI, compared as an exact string.
   * @param options `scope`: only principals holding it hear this one; default everyone (see {@link PublishOptions}).
   * @throws InvalidOptionError naming `hub.notifyResourceUpdated uri` when `uri` is not a string, or
   *   `hub.notifyResourceUpdated options` as {@link Hub.notifyToolsChanged} does.
   */
  notifyResourceUpdated(uri: string, options?: PublishOptions): void {
    // The validators run only for a bad value: a publish stays small enough to be inlined.
    if (typeof uri !== 'string') string('hub.notifyResourceUpdated uri', uri, URI);
    const scope = scopeOf('notifyResourceUpdated', options);
    this.deliverResource(uri, scope);
    this.bus?.publish(scope === undefined ? { topic: 'resource', uri } : { topic: 'resource', uri, scope });
  }

  /**
   * Publishes `notifications/tasks/status` with `task` as params to the streams listening to `task.taskId`.
   * @param task the task's status; `taskId` must be a string.
   * @param options `scope`: only principals holding it hear this one; default everyone (see {@link PublishOptions}).
   * @throws InvalidOptionError naming `hub.notifyTask task` (or `task.taskId`) when `task` is not an
   *   object with a string `taskId`, or `hub.notifyTask options` as {@link Hub.notifyToolsChanged} does.
   */
  notifyTask(task: TaskStatus, options?: PublishOptions): void {
    if (task === null || typeof task !== 'object' || typeof task.taskId !== 'string') {
      string('hub.notifyTask task.taskId', object<TaskStatus>('hub.notifyTask task', task, "a TaskStatus such as { taskId: 't1', status: 'working' }").taskId);
    }
    const scope = scopeOf('notifyTask', options);
    this.deliverTask(task, scope);
    this.bus?.publish(scope === undefined ? { topic: 'task', task } : { topic: 'task', task, scope });
  }

  private deliverAndRelay(event: HubEvent): void {
    this.deliver(event);
    this.bus?.publish(event);
  }

  /**
   * Tells every local stream to re-read what it listens to, after this node may have missed
   * changes (what a bus calls when it finds a gap it cannot fill).
   *
   * Each topic that has local subscribers gets, once, the notification that means "re-read":
   * `list_changed` for the tools, prompts and resources lists, `resources/updated` for each
   * subscribed URI. It is delivered to local streams only (never relayed) and unscoped: it says
   * nothing but "this topic may have changed" to streams that were authorized for the topic when
   * they opened. A stream's queue coalesces it with an identical pending notification, so one
   * resync adds at most one frame per topic to each stream; a client may hear a change it did not
   * need, never miss one. Task topics are skipped: their notification carries the task's status,
   * which the hub does not keep.
   *
   * @example
   * const hub = new Hub({ bus });   // a bus that finds a gap calls hub.resync() itself
   * hub.resync();                   // or by hand, e.g. after a change source was down a while
   * @returns how many topics were notified.
   * @see HubBus
   */
  resync(): number {
    let topics = 0;
    for (const [topic, event] of [[this.tools, TOOLS_EVENT], [this.prompts, PROMPTS_EVENT], [this.resources, RESOURCES_EVENT]] as const) {
      if (topic.subscribers.size === 0) continue;
      this.deliver(event);
      topics++;
    }
    // A snapshot: a stream that ends while it is notified removes its topic from the map.
    for (const uri of Array.from(this.resourceTopics.keys())) {
      this.deliver({ topic: 'resource', uri });
      topics++;
    }
    return topics;
  }

  /**
   * Delivers an event to local streams only (what a bus calls for events from other nodes).
   * @param event the event to deliver.
   */
  deliver(event: HubEvent): void {
    const scope = typeof event.scope === 'string' && event.scope !== '' ? event.scope : undefined;
    switch (event.topic) {
      case 'tools':
        return this.tools.emit(scope === undefined ? TOOLS_FRAME : this.scopedListFrame('tools', scope));
      case 'prompts':
        return this.prompts.emit(scope === undefined ? PROMPTS_FRAME : this.scopedListFrame('prompts', scope));
      case 'resources':
        return this.resources.emit(scope === undefined ? RESOURCES_FRAME : this.scopedListFrame('resources', scope));
      case 'resource':
        return this.deliverResource(event.uri, scope);
      case 'task':
        return this.deliverTask(event.task, scope);
    }
  }

  // Scoped list-changed frames are as constant as the unscoped ones: one per topic and scope.
  private readonly scopedFrames = new Map<string, MessageFrame>();

  private scopedListFrame(topic: 'tools' | 'prompts' | 'resources', scope: string): MessageFrame {
    const key = `${topic} ${scope}`;
    let frame = this.scopedFrames.get(key);
    if (frame === undefined) {
      // Bounded: a server has a handful of scopes; past 64 distinct ones frames are not kept.
      frame = listChangedFrame(topic, scope);
      if (this.scopedFrames.size < 64) this.scopedFrames.set(key, frame);
    }
    return frame;
  }

  /**
   * The notifications of one topic, as frames shared by every stream (pre-encoded, untagged).
   * Subscribing registers the stream synchronously; unsubscribing removes it, and the topic's
   * entry with its last stream.
   *
   * @param selector which topic; resource URIs and task ids are matched exactly.
   * @throws InvalidOptionError naming `hub.topic selector` (or its `topic`, `uri`, `taskId`) when it
   *   is not a {@link TopicSelector}: not an object, an unknown kind, a URI or task id not a string.
   */
  topic(selector: TopicSelector): Observable<MessageFrame> {
    const key = topicKey('hub.topic selector', selector);
    const kind = selector.topic;
    return new Observable<MessageFrame>((subscriber) => {
      this.attach(kind, key, subscriber);
      return () => this.detach(kind, key, subscriber);
    });
  }

  /**
   * Registers `subscriber` on one topic directly, without an Observable and its teardown (the
   * fused listen pipeline of thousands of streams); undo with {@link Hub.detach}.
   * @param topic the topic kind.
   * @param key the URI (`resource`) or task id (`task`); ignored for the other kinds.
   * @throws InvalidOptionError naming `hub.attach topic` or `hub.attach key` for an unknown kind or a key that is not a string.
   * @internal
   */
  attach(topic: TopicKind, key: string | undefined, subscriber: HubTarget): void {
    if ((topic === 'resource' || topic === 'task') && typeof key !== 'string') string('hub.attach key', key, topic === 'resource' ? URI : TASK_ID);
    const entry = this.registry(topic, key, true);
    if (entry === undefined) oneOf('hub.attach topic', topic, TOPIC_KINDS);
    entry!.add(subscriber);
  }

  /**
   * Removes a registration made with {@link Hub.attach}, and the topic's entry with its last stream.
   * @internal
   */
  detach(topic: TopicKind, key: string | undefined, subscriber: HubTarget): void {
    const entry = this.registry(topic, key, false);
    if (entry === undefined) return;
    entry.delete(subscriber);
    // No entry outlives its last stream: a topic nobody listens to costs nothing.
    if (entry.subscribers.size === 0 && (topic === 'resource' || topic === 'task')) {
      (topic === 'resource' ? this.resourceTopics : this.taskTopics).delete(key!);
    }
  }

  private registry(topic: TopicKind, key: string | undefined, create: boolean): Topic | undefined {
    switch (topic) {
      case 'tools':
        return this.tools;
      case 'prompts':
        return this.prompts;
      case 'resources':
        return this.resources;
      case 'resource':
      case 'task': {
        const topics = topic === 'resource' ? this.resourceTopics : this.taskTopics;
        let entry = topics.get(key!);
        if (entry === undefined && create) topics.set(key!, (entry = new Topic(this.coalesce, this.scheduler)));
        return entry;
      }
    }
  }

  /** How many topic entries and stream registrations the hub holds now (for leak checks and metrics). */
  get size(): { readonly topics: number; readonly subscriptions: number } {
    let subscriptions = this.tools.subscribers.size + this.prompts.subscribers.size + this.resources.subscribers.size;
    for (const topic of this.resourceTopics.values()) subscriptions += topic.subscribers.size;
    for (const topic of this.taskTopics.values()) subscriptions += topic.subscribers.size;
    return { topics: this.resourceTopics.size + this.taskTopics.size, subscriptions };
  }

  /** Disconnects the bus. Streams stay subscribed but hear only local publishes. */
  close(): void {
    this.disconnect?.();
  }

  private deliverResource(uri: string, scope: string | undefined): void {
    const topic = this.resourceTopics.get(uri);
    if (topic === undefined) return;
    const message: JsonRpcNotification = { jsonrpc: '2.0', method: NotificationMethod.resource, params: { uri } };
    // One shape for every hub notification (the `scope` member always present): monomorphic readers.
    topic.emit({
      type: 'message',
      message,
      priority: 'notification',
      topic: 'resource',
      coalesceKey: `${NotificationMethod.resource} ${uri}`,
      encoded: encodeResourceUpdated(uri),
      scope,
    });
  }

  private deliverTask(task: TaskStatus, scope: string | undefined): void {
    const topic = this.taskTopics.get(task.taskId);
    if (topic === undefined) return;
    const message: JsonRpcNotification = { jsonrpc: '2.0', method: NotificationMethod.task, params: { ...task } };
    const encoded = encodeMessage(message);
    topic.emit({
      type: 'message',
      message,
      priority: 'notification',
      topic: 'task',
      coalesceKey: `${NotificationMethod.task} ${encoded.plain}`,
      encoded,
      scope,
    });
  }
}
