import { Observable, type Subscriber } from 'rxjs';
import { restorePlan } from '../../operators/restoreSubscriptions.js';
import type { QueueStage } from '../../operators/dropWhenQueueExceeds.js';
import { sessionStages, type SessionValues, type SessionWatcher } from '../../operators/sessionPipeline.js';
import { PrimeStage } from '../../operators/primeStream.js';
import { GapStage, ReplayStage } from '../../operators/replayFrom.js';
import { type SourceRegistration, type Stage, StageObservable, stageOperator } from '../../operators/stage.js';
import type { StreamStatus } from '../../operators/streamTelemetry.js';
import { Clock } from '../../lib/clock.js';
import type { RequestContext } from '../../lib/context.js';
import type { Frame } from '../../lib/frame.js';
import { isShared, type SharedSlots, type Slot } from '../../lib/slots.js';
import type { FilterName } from '../../lib/filter.js';
import { reportError, type StopReason } from '../../lib/telemetry.js';
import { endStream, type FeedEntry, type ListChanges, type ListTopic, type LiveSession, scopesOf, type SessionStream } from './liveSession.js';
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
  /** The GET streams that hold a slot and have not opened yet, by session (at most one each). */
  readonly opening: Map<LiveSession, PendingGet>;
  /** A GET stream attached to `session` here: the subscribes that wait for one hear it. */
  attached(session: LiveSession): void;
  /** True when this GET takes over a stream another node may have died with (it then sends the re-read signal once restored). */
  movedHere(session: LiveSession): boolean;
}

/**
 * A GET stream that holds its slot and has not opened yet (its response is on its way to the
 * adapter). A newer GET of the same session replaces it before taking a slot of its own: its slot
 * is given back at once and it ends as soon as it opens. @internal
 */
export class PendingGet {
  #replaced = false;

  constructor(readonly slot: Slot) {}

  get replaced(): boolean {
    return this.#replaced;
  }

  replace(): void {
    this.#replaced = true;
    this.slot.release();
  }
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
): GetStreamParts | undefined | Promise<GetStreamParts | undefined> {
  if (owner.isClosed() || session.ended) return undefined;
  // One GET stream per session at every instant (DESIGN L9): this one replaces the session's stream,
  // opened or still opening, before it takes a slot. A principal's GET streams are so bounded by its
  // sessions (maxSessionsPerPrincipal), never by the listen cap: a GET never ends another session's.
  owner.opening.get(session)?.replace();
  owner.opening.delete(session);
  endStream(session, session.stream, 'replaced');
  const slots = owner.init.slots;
  const parts = (pending: PendingGet) => getStreamParts(owner, session, pending, lastEventId, context, shutdown$);
  if (isShared(slots)) return sharedPlace(owner, session, slots).then((pending) => (pending === undefined ? undefined : parts(pending)));
  const slot = slots.tryAcquire();
  return slot === undefined ? undefined : parts(new PendingGet(slot));
}

/** What {@link openGetStream} gives the endpoint: the stream's `open`/`abandon` pair. @internal */
export interface GetStreamParts {
  readonly open: (demand$: Observable<boolean>) => Observable<Frame>;
  readonly abandon: () => void;
}

/** Held by a GET that waits for a place of a shared pool: nothing to give back yet. */
const NO_SLOT: Slot = Object.freeze({ release: () => undefined });

/**
 * The GET's place in a pool other processes share (`SharedSlots`, a cluster's), asked for
 * asynchronously. Meanwhile the GET counts as opening, so a newer GET of the session replaces it
 * as it would an opening one (it then opens and ends at once, its place given back).
 * @returns `undefined` when the pool is full or the endpoint closed meanwhile.
 */
async function sharedPlace(owner: StreamOwner, session: LiveSession, slots: SharedSlots): Promise<PendingGet | undefined> {
  const waiting = new PendingGet(NO_SLOT);
  owner.opening.set(session, waiting);
  const slot = await slots.acquire();
  if (owner.opening.get(session) === waiting) owner.opening.delete(session);
  if (slot === undefined) return undefined;
  if (owner.isClosed()) {
    slot.release();
    return undefined;
  }
  const pending = new PendingGet(slot);
  if (waiting.replaced) pending.replace();
  return pending;
}

/** The stream's `open`/`abandon` pair around `pending` (the slot it holds), registered as the session's opening GET. */
function getStreamParts(
  owner: StreamOwner,
  session: LiveSession,
  pending: PendingGet,
  lastEventId: string | undefined,
  context: RequestContext,
  shutdown$: Observable<void>,
): GetStreamParts {
  const { slot } = pending;
  if (!pending.replaced) owner.opening.set(session, pending);
  const opened = () => {
    if (owner.opening.get(session) === pending) owner.opening.delete(session);
  };
  const open = (demand$: Observable<boolean>) =>
    new Observable<Frame>((subscriber) => {
      opened();
      subscribeGetStream(owner, session, pending, lastEventId, context, shutdown$, demand$, subscriber);
    });
  const abandon = () => {
    opened();
    slot.release();
  };
  return { open, abandon };
}

// Apart from openGetStream() so that an open stream's closures hold only what the stream needs.
function subscribeGetStream(
  owner: StreamOwner,
  session: LiveSession,
  pending: PendingGet,
  lastEventId: string | undefined,
  context: RequestContext,
  shutdown$: Observable<void>,
  demand$: Observable<boolean>,
  subscriber: Subscriber<Frame>,
): void {
  const { init } = owner;
  const { scheduler } = init;
  const { slot } = pending;
  const expiry = context.auth.expiresAt;
  // Replaced by a newer GET while opening; a credential already expired gets nothing, not even the replay.
  if (pending.replaced || session.ended || owner.isClosed() || (expiry !== undefined && expiry <= scheduler.now())) {
    slot.release();
    subscriber.complete();
    return;
  }
  endStream(session, session.stream, 'replaced');
  // Restore what is on the record but not live (after a grace period ran out, or on another node).
  const unrestored = session.uris.filter((uri) => session.live.get(uri) === undefined);
  // The request's context is kept only where a subscribe can still come for the stream's principal
  // (a fleet relays them); a fresh session's stream (nothing to restore) holds none of the request.
  const handle = new StreamHandle(owner, session, slot, init.placement.shared ? context : undefined);
  session.stream = handle;
  session.scopes = scopesOf(context);
  owner.attached(session);
  init.placement.claim(session.id, session.scopes);
  session.grace?.unsubscribe();
  session.grace = undefined;
  session.listen(owner.lists);
  // The session's feed, its first stage registered on the session (the handle) directly.
  const feed$ = new StageObservable<Frame>((entry) => handle.attach(entry), noStages);
  // DESIGN L7–L9, the endpoint's one composition (sessionPipeline): replay after Last-Event-ID, the
  // priming event (2025-11-25 on), keep-alives, the lifetime cap (its client reconnects with Last-Event-ID, and its
  // subscriptions are authorized again on restore), token expiry and shutdown, the bounded queue,
  // and the restore of the persisted subscriptions. A close trigger cuts the feed (the handle):
  // the session lets go of the stream at once, while the stream writes what it holds (nothing, if
  // its client is not reading: it then ends at once and replays on reconnect).
  const values: SessionValues = { lastEventId, log: session.log, prime: primes(session.protocolVersion), expiresAt: expiry, demand$, watcher: handle };
  // After a stream that may have died with its node: the re-read signal, once the subscriptions are live.
  const reread = owner.movedHere(session) ? afterAll(unrestored.length, () => session.stream === handle && session.reread(owner.lists)) : undefined;
  const restoreOne = (uri: string) => restore(init, session, uri, handle, context);
  const restoring =
    unrestored.length === 0
      ? undefined
      : restorePlan(unrestored, reread === undefined ? restoreOne : (uri) => restoreOne(uri).finally(reread), RESTORE_CONCURRENCY, onRestoreError);
  // Where the session's log is shared with other nodes, the stream also keeps its ids gapless (GapStage).
  const stages = init.placement.shared ? () => withGaps(sessionStages(init.streams, values, restoring), owner, session) : () => sessionStages(init.streams, values, restoring);
  const stream$ = feed$.pipe(stageOperator<Frame, Frame>(stages));
  stream$.subscribe(subscriber);
  // A stream closed as it opened never registers its feed: nothing else would give back what it holds.
  if (!handle.attached) handle.unsubscribe();
  else if (reread !== undefined && unrestored.length === 0) reread();
}

/** A function that runs `then` at its `count`-th call (at its first when `count` is 0), once. */
function afterAll(count: number, then: () => unknown): () => void {
  let left = Math.max(count, 1);
  return () => {
    if (--left === 0) then();
  };
}

function noStages(): [] {
  return [];
}

/**
 * `stages` with a {@link GapStage} right after the priming event (or the replay, or first): the
 * place where the stream knows the id its client resumes from. Ids the log no longer holds make
 * the session send its re-read signal.
 */
function withGaps(stages: Stage<any, any>[], owner: StreamOwner, session: LiveSession): Stage<any, any>[] {
  let at = stages.findIndex((stage) => stage instanceof PrimeStage);
  if (at < 0) at = stages.findIndex((stage) => stage instanceof ReplayStage);
  stages.splice(at + 1, 0, new GapStage(session.log, () => session.reread(owner.lists)));
  return stages;
}

function onRestoreError(uri: string, error: unknown): void {
  reportError('source', new RestoreError(uri, error));
}


/**
 * A GET stream of a session, the one object the endpoint keeps for it: its pipeline's source (the
 * session registers the pipeline's first stage through it), what its telemetry stage reads of the
 * session and tells its status to, and what the stream gives back once it has ended. A close
 * trigger cuts it (the session lets go of the stream at once, while the stream writes what it
 * holds); the pipeline's teardown, whatever the reason, unsubscribes it: the slot is given back and
 * the session waits for a reconnect.
 */
class StreamHandle implements SessionStream, SourceRegistration, SessionWatcher {
  entry: FeedEntry | undefined = undefined;
  endReason: StopReason | undefined = undefined;
  /** The pipeline registered its first stage. */
  #attached = false;
  /** Given back what it held. */
  #released = false;
  /** The stream's telemetry stage, told as the pipeline is assembled: when it opened, why it ended, what its queue holds. */
  #status: StreamStatus | undefined = undefined;
  #started = false;

  constructor(
    private readonly owner: StreamOwner,
    readonly session: LiveSession,
    private readonly slot: Slot,
    readonly context: RequestContext | undefined,
  ) {}

  /** True once the pipeline registered its first stage. */
  get attached(): boolean {
    return this.#attached;
  }

  watch(status: StreamStatus): void {
    this.#status = status;
  }

  started(): void {
    this.#started = true;
  }

  stopped(): void {}

  filters(): FilterName[] {
    return legacyFilters(this.owner, this.session);
  }

  resourceSubscriptions(): number {
    return this.session.uris.length;
  }

  /** When it started, in milliseconds since the epoch; `undefined` before. */
  get openedAt(): number | undefined {
    return this.#started ? this.#status?.openedAt() : undefined;
  }

  /** What its queue holds and has dropped or coalesced. */
  get queue(): QueueStage | undefined {
    return this.#status?.queue;
  }

  /** Registers the pipeline's first stage as the session's feed (completed at once if the stream already ended). */
  attach(entry: FeedEntry): StreamHandle {
    this.#attached = true;
    if (this.session.stream !== this) {
      entry.complete();
      return this;
    }
    this.entry = entry;
    return this;
  }

  cut(): void {
    endStream(this.session, this);
  }

  unsubscribe(): void {
    if (this.#released) return;
    this.#released = true;
    this.slot.release();
    detach(this.owner, this);
  }
}

const LIST_FILTERS: Readonly<Record<string, FilterName>> = Object.freeze({ tools: 'tools_list_changed', prompts: 'prompts_list_changed', resources: 'resources_list_changed' });

/** The list changes sessions hear, as telemetry names them. @internal */
export function legacyListFilters(topics: readonly ListTopic[]): FilterName[] {
  return topics.map((topic) => LIST_FILTERS[topic]!);
}

/** What a session's GET stream listens to, as telemetry names it: the advertised list changes, and its resource subscriptions. */
function legacyFilters(owner: StreamOwner, session: LiveSession): FilterName[] {
  const names = legacyListFilters(owner.lists.topics);
  if (session.uris.length > 0) names.push('resource_subscriptions');
  return names;
}

/** A stream's pipeline ended (any reason): the session waits for a reconnect for the grace period. */
function detach(owner: StreamOwner, handle: StreamHandle): void {
  const { init } = owner;
  const { session } = handle;
  endStream(session, handle);
  if (session.ended || owner.isClosed() || session.stream !== undefined) return;
  session.lastActivity = init.scheduler.now();
  Promise.resolve(init.store.update(session.id, init.placement.released(session.lastActivity))).catch((error: unknown) => reportError('source', error));
  keepForGrace(owner, session);
}

/**
 * Keeps the session's subscriptions and list changes live without a GET stream for
 * `sessionGracePeriod` (DESIGN L9, **beyond**), so that a reconnect with `Last-Event-ID` gets
 * what changed meanwhile: after its stream dropped here, or once this node took it up from a node
 * that stopped or died. Then they are released (the record keeps the URIs) and, where nodes share
 * the session, this node stops being its keeper.
 * @internal
 */
export function keepForGrace(owner: StreamOwner, session: LiveSession): void {
  const { init } = owner;
  session.listen(owner.lists);
  session.grace?.unsubscribe();
  session.grace = Clock.of(init.scheduler).after(init.options.sessionGracePeriod, () => {
    session.grace = undefined;
    if (session.stream !== undefined || session.ended) return;
    session.sleep(owner.lists);
    init.placement.letGo(session.id);
  });
}
