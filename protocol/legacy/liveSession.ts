import type { QueueStage } from '../../operators/dropWhenQueueExceeds.js';
import type { HeldFrames, HeldFramesSink } from '../../operators/heldFrames.js';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { stampInOrder } from '../../operators/withEventIds.js';
import { NO_SCOPES } from '../../lib/auth.js';
import { Clock } from '../../lib/clock.js';
import type { RequestContext } from '../../lib/context.js';
import { type Frame, mayReceive, type MessageFrame } from '../../lib/frame.js';
import { type Hub, type HubTarget, NotificationMethod } from '../../lib/hub.js';
import { encodeMessage, encodeResourceUpdated } from '../../lib/encode.js';
import { Pending } from '../../lib/pending.js';
import { type EventLog, isThenable } from '../../lib/replayBuffer.js';
import type { SessionRecord } from '../../lib/session.js';
import { reportError, type StopReason } from '../../lib/telemetry.js';
import { SubscriptionSet } from '../subscriptionSet.js';

/** The list-changed topics a session hears on its GET stream (those the server advertises). @internal */
export type ListTopic = 'tools' | 'prompts' | 'resources';

/** The read scopes of `context`, the shared empty set when there are none. @internal */
export function scopesOf(context: RequestContext): ReadonlySet<string> {
  return context.auth.scopes.size === 0 ? NO_SCOPES : context.auth.scopes;
}

/** Where a GET stream's pipeline is fed from: the stage chain registered on its session. @internal */
export interface FeedEntry {
  next(frame: Frame): void;
  complete(): void;
}

/** A GET stream of a session, as the session sees it (the endpoint's is a `StreamHandle`). @internal */
export interface SessionStream {
  /** The pipeline's first stage, once the pipeline is subscribed: where the session's frames go. */
  entry: FeedEntry | undefined;
  /**
   * The GET request's context, whose principal the subscribes relayed from another node of a
   * fleet run as; kept in a fleet only.
   */
  readonly context: RequestContext | undefined;
  /** Why the endpoint ended it, when it did (set by {@link endStream}; a close trigger says its own). */
  endReason?: StopReason | undefined;
  /** When it started, in milliseconds since the epoch (for the endpoint's snapshot). */
  readonly openedAt?: number | undefined;
  /** Its queue for a busy client (for the endpoint's snapshot). */
  readonly queue?: QueueStage | undefined;
}

/**
 * A legacy session as this node holds it: the record plus what cannot be persisted (its live GET
 * stream, its live subscriptions, its timers). Kept small: a server holds thousands, most idle.
 *
 * Frames reach it from two sides, each checked against the reader's scopes where it registered
 * (never again here): the hub's list changes (`listChanged`, from {@link ListChanges}) and its
 * resource subscriptions (`resourceUpdated`). {@link LiveSession.deliver} is the one place a frame
 * is stamped with the session's next event id (kept for replay) and written to the live GET
 * stream, if any.
 * @internal
 */
export class LiveSession extends SubscriptionSet implements HeldFramesSink<Frame> {
  readonly id: string;
  readonly principal: string;
  readonly protocolVersion: string;
  // lastActivity as milliseconds after ORIGIN: a small integer that V8 keeps in the field, where an
  // epoch time is a separate 16-byte number per session.
  #activity: number;
  readonly log: EventLog;
  stream: SessionStream | undefined = undefined;

  /** The grace period after its GET stream ended, on the endpoint's clock. */
  grace: { unsubscribe(): void } | undefined = undefined;
  /** Deleted, evicted or taken over by another node. */
  #ended = false;
  /** Hears the hub's list changes (while its GET stream is open or in its grace period). */
  #listening = false;
  /**
   * The read scopes of the principal as of its latest GET stream (empty until one opens): a
   * list change published with a scope outside them is never stamped nor written.
   */
  scopes: ReadonlySet<string> = NO_SCOPES;
  // Frames waiting for an earlier frame's asynchronous append (a shared log), made at the first one.
  #held: HeldFrames<Frame> | undefined = undefined;
  // Changes whose frame the log failed to take, appended again later; made at the first failure.
  #unlogged: Unlogged | undefined = undefined;
  readonly #scheduler: SchedulerLike;

  constructor(record: SessionRecord, log: EventLog, scheduler: SchedulerLike = asyncScheduler) {
    // Its subscriptions: the persisted list, kept in step with the store, and their live sources.
    super(record.subscriptions);
    this.id = record.id;
    this.principal = record.principal;
    this.protocolVersion = record.protocolVersion;
    this.#activity = record.lastActivity - ORIGIN;
    this.log = log;
    this.#scheduler = scheduler;
  }

  /** When the session was last active, in milliseconds since the epoch (on the endpoint's clock). */
  get lastActivity(): number {
    return this.#activity + ORIGIN;
  }

  set lastActivity(ms: number) {
    this.#activity = ms - ORIGIN;
  }

  /** True once the session has ended (deleted, evicted, taken over by another node). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Whether the session hears the hub's list changes (while its GET stream is open or in its grace period). */
  get listening(): boolean {
    return this.#listening;
  }

  /** A list-changed notification its scopes allow (see {@link ListChanges}). */
  listChanged(frame: MessageFrame): void {
    if (this.#listening) this.deliver(frame);
  }

  /** A change of a subscribed resource (its subscription checked the subscriber's scopes). */
  override resourceUpdated(frame: MessageFrame): void {
    this.deliver(frame);
  }

  /**
   * Stamps `frame` with the session's next event id (the log keeps it for replay) and writes it to
   * the live GET stream, if any; in order, also when the log's appends are asynchronous. A frame
   * the log failed to take (a shared log while Redis is unreachable or changes hands) is reported on
   * `channels.error` and not written; the frames after it go on, and the change is announced later:
   * see {@link append}.
   */
  deliver(frame: MessageFrame): void {
    // A storm of identical notifications (1000 tools/list_changed from a registry's loop) reaches
    // a session once (the hub collapses it, HubOptions.coalesce), so a collapsed one takes no id.
    this.#held = stampInOrder(this, frame, this.#held, this);
  }

  /**
   * Appends `frame` to the log (for {@link deliver}). A frame the log fails to take is appended
   * again later (after 250 ms, the wait doubling up to 4 s while it keeps failing), with the next
   * id, unless a later frame of the same coalescing key (the same URI's `resources/updated`, the
   * same list's `list_changed`) was logged meanwhile: a change made while the log was unreachable is
   * heard late, never silently lost, and the ids stay consecutive. Nothing is kept once the session
   * has ended (another node keeps it then, or nobody) or its endpoint has closed.
   */
  append(frame: MessageFrame): MessageFrame | PromiseLike<MessageFrame> {
    const stamped = this.log.append(frame);
    // One rejection handler per asynchronous append; what was logged is seen in `onHeld`, in order
    // (a handler for both outcomes on every frame cost 7–13 % of a worker's CPU per legacy frame).
    if (isThenable(stamped)) {
      if (stamped instanceof Pending) stamped.wait(undefined, () => this.#failed(frame));
      else stamped.then(undefined, () => this.#failed(frame));
    }
    return stamped;
  }

  /** A frame of key `coalesceKey` was logged: a failed one of the same key no longer needs appending again. */
  #logged(coalesceKey: string | undefined): void {
    const unlogged = this.#unlogged!;
    if (coalesceKey !== undefined) unlogged.frames.delete(coalesceKey);
    // Everything was logged: the next failure starts from the shortest wait again.
    if (unlogged.frames.size === 0 && unlogged.timer === undefined) this.#unlogged = undefined;
  }

  #failed(frame: MessageFrame): void {
    if (this.#ended) return;
    const unlogged = (this.#unlogged ??= { frames: new Map(), delay: UNLOGGED_RETRY_MS, timer: undefined });
    unlogged.frames.set(frame.coalesceKey ?? frame, frame);
    if (unlogged.timer !== undefined) return;
    unlogged.timer = Clock.of(this.#scheduler).after(unlogged.delay, () => this.#appendAgain());
    unlogged.delay = Math.min(2 * unlogged.delay, UNLOGGED_RETRY_MAX_MS);
  }

  #appendAgain(): void {
    const unlogged = this.#unlogged;
    if (unlogged === undefined) return;
    unlogged.timer = undefined;
    const frames = [...unlogged.frames.values()];
    unlogged.frames.clear();
    if (frames.length === 0 || this.#ended) this.#unlogged = undefined;
    else for (const frame of frames) this.deliver(frame);
  }

  /** A stamped frame whose turn came (see {@link deliver}). */
  onHeld(frame: Frame): void {
    // Frames come here in the order they were appended, each once the log has taken it (a failed
    // one goes to onHeldError, after `#failed` has kept it).
    if (this.#unlogged !== undefined && frame.type === 'message') this.#logged(frame.coalesceKey);
    this.stream?.entry?.next(frame);
  }

  onHeldEnd(): void {}

  onHeldError(error: unknown): void {
    reportError('source', error);
  }

  /** Marks the session ended (deleted, evicted, or its subscriptions are kept by another node now). */
  finish(): void {
    this.#ended = true;
    this.dropUnlogged();
  }

  /** Forgets the changes its log failed to take (see {@link append}): the session ended, or its node closed. */
  dropUnlogged(): void {
    this.#unlogged?.timer?.unsubscribe();
    this.#unlogged = undefined;
  }

  /**
   * The re-read signal for this session (what the fleet's resync sends every stream, docs/fleet.md):
   * `resources/updated` for each subscribed URI, then `list_changed` for each list it hears,
   * stamped and logged like any change. Sent where the session may have missed changes: a node took
   * it up after its keeper died, or its stream found ids its log no longer holds.
   */
  reread(lists: ListChanges): void {
    for (const uri of this.uris) this.deliver(resourceUpdatedFrame(uri));
    if (this.#listening) for (const topic of lists.topics) this.deliver(LIST_CHANGED[topic]);
  }

  /** The session hears the hub's list changes from now on (idempotent). */
  listen(lists: ListChanges): void {
    if (this.#listening || lists.topics.length === 0) return;
    this.#listening = true;
    lists.add();
  }

  /**
   * Releases the session's live subscriptions (they stay on the record, restored on the next GET)
   * and stops its list changes.
   */
  sleep(lists: ListChanges): void {
    this.grace?.unsubscribe();
    this.grace = undefined;
    if (this.#listening) {
      this.#listening = false;
      lists.remove();
    }
    this.release('the GET stream closed');
  }
}

/** Changes a session's log failed to take, by coalescing key, and when they are appended again. */
interface Unlogged {
  readonly frames: Map<string | MessageFrame, MessageFrame>;
  /** The wait before the next attempt after this one. */
  delay: number;
  timer: { unsubscribe(): void } | undefined;
}

const UNLOGGED_RETRY_MS = 250;
const UNLOGGED_RETRY_MAX_MS = 4000;

/** The epoch time the process started with: session activity times are kept relative to it. */
const ORIGIN = Date.now();

/** A list's `list_changed`, as the hub publishes it unscoped. */
function listChangedFrame(topic: ListTopic): MessageFrame {
  const message = Object.freeze({ jsonrpc: '2.0' as const, method: NotificationMethod[topic] });
  return Object.freeze({ type: 'message', message, priority: 'notification', topic, coalesceKey: message.method, encoded: Object.freeze(encodeMessage(message)) });
}

const LIST_CHANGED: Readonly<Record<ListTopic, MessageFrame>> = Object.freeze({
  tools: listChangedFrame('tools'),
  prompts: listChangedFrame('prompts'),
  resources: listChangedFrame('resources'),
});

/** A URI's `resources/updated`, as a subscription hands it on. */
function resourceUpdatedFrame(uri: string): MessageFrame {
  const message = Object.freeze({ jsonrpc: '2.0' as const, method: NotificationMethod.resource, params: Object.freeze({ uri }) });
  return Object.freeze({ type: 'message', message, priority: 'notification', topic: 'resource', coalesceKey: `${NotificationMethod.resource} ${uri}`, encoded: encodeResourceUpdated(uri) });
}

/**
 * The hub's list-changed notifications for the sessions of one endpoint: one registration on each
 * advertised list topic while some session listens (not one per session: an idle session costs no
 * entry in the hub), handed to every session that listens, in the order the sessions were created.
 * @internal
 */
export class ListChanges implements HubTarget {
  #listening = 0;

  constructor(
    private readonly hub: Hub,
    /** The list-changed topics the server advertises. */
    readonly topics: readonly ListTopic[],
    private readonly sessions: ReadonlyMap<string, LiveSession>,
  ) {}

  /** The sessions a list change reaches through this one registration (the hub's coalesced count). */
  get weight(): number {
    return this.#listening;
  }

  /** One more session listens. */
  add(): void {
    this.#listening++;
    // Registered again for each newcomer (a no-op for the hub's set): the hub then does not
    // collapse an identical notification the newcomer has not heard yet (HubOptions.coalesce).
    for (const topic of this.topics) this.hub.attach(topic, undefined, this);
  }

  /** One session fewer listens; the last one takes the registrations away. */
  remove(): void {
    if (--this.#listening > 0) return;
    for (const topic of this.topics) this.hub.detach(topic, undefined, this);
  }

  next(frame: MessageFrame): void {
    for (const session of this.sessions.values()) {
      // Each session is a reader of its own: its scopes are checked here, where it registered.
      if (!session.listening || !mayReceive(frame, session.scopes)) continue;
      // A failing session must not stop delivery to the others (what the hub does per registration).
      try {
        session.listChanged(frame);
      } catch (error) {
        reportError('hub', error);
      }
    }
  }
}



/**
 * Ends the session's stream (only `handle` when given): its pipeline writes what it holds and
 * completes. Idempotent.
 * @param reason why, for its `stop` telemetry (`replaced`, `session_ended`, `revoked`…); absent
 *   when its own close trigger ended it (which says why).
 * @internal
 */
export function endStream(session: LiveSession, handle: SessionStream | undefined = session.stream, reason?: StopReason): void {
  if (handle === undefined || session.stream !== handle) return;
  if (reason !== undefined) handle.endReason ??= reason;
  session.stream = undefined;
  const entry = handle.entry;
  handle.entry = undefined;
  entry?.complete();
}
