import { Observable, type Subscriber } from 'rxjs';
import { sessionPipeline, type SessionPipelineInit } from '../../../operators/sessionPipeline.js';
import { type SourceRegistration, StageObservable } from '../../../operators/stage.js';
import { Clock } from '../../../lib/clock.js';
import type { RequestContext } from '../../../lib/context.js';
import type { Frame, MessageFrame } from '../../../lib/frame.js';
import type { Admission } from '../../../lib/principals.js';
import type { Slot } from '../../../lib/slots.js';
import { channels, reportError } from '../../../lib/telemetry.js';
import { endStream, type FeedEntry, type ListChanges, type LiveSession, scopesOf, type SessionStream } from './liveSession.js';
import type { LegacySessionsInit } from './sessionOptions.js';
import { restore, RestoreError } from './subscribe.js';

/** How many persisted subscriptions a GET stream restores at a time (DESIGN L8). */
const RESTORE_CONCURRENCY = 8;

/**
 * The first revision whose GET streams open with the priming event. MCP 2025-11-25 (transports)
 * added it: "the server SHOULD immediately send an SSE event consisting of an event ID and an
 * empty data field". Clients of earlier revisions may not expect an event without data (the AI
 * SDK on 2025-06-18 logs a parse error for it), so, as the official 1.x server does, a session
 * negotiated at an earlier revision gets none: its frames still carry ids and its reconnects with
 * `Last-Event-ID` are replayed as before, and it has no `retry:` field.
 */
const FIRST_PRIMED_REVISION = '2025-11-25';

/** True when a session at `protocolVersion` gets the priming event (revisions are dates: they compare as strings). */
function primes(protocolVersion: string): boolean {
  return protocolVersion >= FIRST_PRIMED_REVISION;
}

/**
 * What a GET stream needs of the {@link LegacySessions} it belongs to.
 * @internal
 */
export interface StreamOwner {
  readonly init: LegacySessionsInit;
  /** The hub's list changes, for the sessions that listen. */
  readonly lists: ListChanges;
  /** True once the sessions are closed (server shutdown): no stream opens, none waits for a reconnect. */
  isClosed(): boolean;
}

/**
 * Opens the session's GET stream (DESIGN L7–L9): replaces a live one, replays after
 * `lastEventId`, restores the persisted subscriptions at most 8 at a time.
 * @returns the stream's `open`/`abandon` pair, or `undefined` when the server is full or closed.
 */
export function openGetStream(
  owner: StreamOwner,
  session: LiveSession,
  lastEventId: string | undefined,
  context: RequestContext,
  shutdown$: Observable<void>,
): { open: (demand$: Observable<boolean>) => Observable<Frame>; abandon: () => void } | undefined {
  const slot = owner.isClosed() || session.ended ? undefined : owner.init.slots.tryAcquire();
  if (slot === undefined) return undefined;
  const open = (demand$: Observable<boolean>) =>
    new Observable<Frame>((subscriber) => subscribeGetStream(owner, session, slot, lastEventId, context, shutdown$, demand$, subscriber));
  return { open, abandon: () => slot.release() };
}

// Apart from openGetStream() so that an open stream's closures hold only what the stream needs.
function subscribeGetStream(
  owner: StreamOwner,
  session: LiveSession,
  slot: Slot,
  lastEventId: string | undefined,
  context: RequestContext,
  shutdown$: Observable<void>,
  demand$: Observable<boolean>,
  subscriber: Subscriber<Frame>,
): void {
  const { init } = owner;
  const { scheduler } = init;
  const expiry = context.auth.expiresAt;
  // A credential already expired gets nothing, not even the replay.
  if (session.ended || owner.isClosed() || (expiry !== undefined && expiry <= scheduler.now())) {
    slot.release();
    subscriber.complete();
    return;
  }
  // The GET this one replaces leaves the principal's count before this one is admitted.
  endStream(session);
  // DESIGN M8 for GET streams too: over the cap, the principal's oldest stream of either
  // kind is superseded (a GET one ends cleanly, and its client reconnects).
  const admission = init.principals.admit(context.auth.principal);
  // Restore what is on the record but not live (after a grace period ran out, or on another node).
  const unrestored = session.uris.filter((uri) => session.live.get(uri) === undefined);
  // The request's context is kept only where a subscribe can still come for the stream's principal
  // (a fleet relays them); a fresh session's stream (nothing to restore) holds none of the request.
  const handle = new StreamHandle(owner, session, admission, slot, init.bus === undefined ? undefined : context);
  session.stream = handle;
  session.scopes = scopesOf(context);
  session.announce();
  claim(init, session);
  session.grace?.unsubscribe();
  session.grace = undefined;
  session.listen(owner.lists);
  // The session's feed, its first stage registered on the session (the handle) directly.
  const feed$ = new StageObservable<Frame>((entry) => handle.attach(entry), noStages);
  let stream$: Observable<Frame>;
  try {
    stream$ = feed$.pipe(
      // DESIGN L7–L9 as one composite operator: replay after Last-Event-ID, the priming event (2025-11-25 on),
      // keep-alives, the lifetime cap (its client reconnects with Last-Event-ID, and its
      // subscriptions are authorized again on restore), token expiry, supersede and shutdown,
      // the bounded queue, and the restore of the persisted subscriptions. A close trigger cuts
      // the feed (the handle): the session lets go of the stream at once, while the stream
      // writes what it holds.
      sessionPipeline({
        lastEventId,
        log: session.log,
        reconnectDelay: init.options.reconnectDelay,
        prime: primes(session.protocolVersion),
        keepAliveInterval: init.keepAliveInterval,
        maxStreamLifetime: init.maxStreamLifetime,
        expiresAt: expiry,
        supersede$: admission.superseded$,
        shutdown$,
        queue: { notifications: init.maxQueue, bytes: init.maxQueueBytes },
        demand$,
        onDrop,
        restore: unrestored.length === 0 ? undefined : restoreSpec(init, handle, unrestored, context),
        scheduler,
      }),
    );
  } catch (error) {
    handle.unsubscribe();
    throw error;
  }
  stream$.subscribe(subscriber);
  // A stream closed as it opened never registers its feed: nothing else would give back what it holds.
  if (!handle.attached) handle.unsubscribe();
}

function noStages(): [] {
  return [];
}

/** The restore of `uris` on the stream of `handle`, as the principal of the GET request's `context`. */
function restoreSpec(init: LegacySessionsInit, handle: StreamHandle, uris: readonly string[], context: RequestContext): SessionPipelineInit['restore'] {
  return {
    uris,
    subscribe: (uri) => restore(init, handle.session, uri, handle, context),
    concurrency: RESTORE_CONCURRENCY,
    onError: onRestoreError,
  };
}

function onRestoreError(uri: string, error: unknown): void {
  reportError('source', new RestoreError(uri, error));
}

const ATTACHED = 1;
const RELEASED = 2;

/**
 * A GET stream of a session, the one object the endpoint keeps for it: its pipeline's source (the
 * session registers the pipeline's first stage through it) and what the stream gives back once it
 * has ended. A close trigger cuts it (the session lets go of the stream at once, its place in the
 * principal's cap too, while the stream writes what it holds); the pipeline's teardown, whatever
 * the reason, unsubscribes it: the slot is given back and the session waits for a reconnect.
 */
class StreamHandle implements SessionStream, SourceRegistration {
  entry: FeedEntry | undefined = undefined;
  #state = 0;

  constructor(
    private readonly owner: StreamOwner,
    readonly session: LiveSession,
    readonly admission: Admission,
    private readonly slot: Slot,
    readonly context: RequestContext | undefined,
  ) {}

  /** True once the pipeline registered its first stage. */
  get attached(): boolean {
    return (this.#state & ATTACHED) !== 0;
  }

  /** Registers the pipeline's first stage as the session's feed (completed at once if the stream already ended). */
  attach(entry: FeedEntry): StreamHandle {
    this.#state |= ATTACHED;
    if (this.session.stream === this) this.entry = entry;
    else entry.complete();
    return this;
  }

  cut(): void {
    endStream(this.session, this);
  }

  unsubscribe(): void {
    if ((this.#state & RELEASED) !== 0) return;
    this.#state |= RELEASED;
    this.admission.release();
    this.slot.release();
    detach(this.owner, this);
  }
}

/** This node now holds the session's GET stream: recorded, and every other node lets go of it. */
function claim(init: LegacySessionsInit, session: LiveSession): void {
  const bus = init.bus;
  if (bus === undefined) return;
  const claimed = async () => {
    await init.store.update(session.id, { streamNode: bus.nodeId });
    await bus.publish(session.id, { kind: 'claimed', node: bus.nodeId });
  };
  claimed().catch((error: unknown) => reportError('source', error));
}

/** A stream's pipeline ended (any reason): the session waits for a reconnect for the grace period. */
function detach(owner: StreamOwner, handle: StreamHandle): void {
  const { init } = owner;
  const { session } = handle;
  endStream(session, handle);
  if (session.ended || owner.isClosed() || session.stream !== undefined) return;
  session.lastActivity = init.scheduler.now();
  const changes = init.bus === undefined ? { lastActivity: session.lastActivity } : { lastActivity: session.lastActivity, streamNode: null };
  Promise.resolve(init.store.update(session.id, changes)).catch((error: unknown) => reportError('source', error));
  session.grace?.unsubscribe();
  session.grace = Clock.of(init.scheduler).after(init.options.sessionGracePeriod, () => {
    session.grace = undefined;
    if (session.stream === undefined) session.sleep(owner.lists);
  });
}

function onDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}
