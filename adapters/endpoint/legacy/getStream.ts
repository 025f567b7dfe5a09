import {
  defer,
  EMPTY,
  finalize,
  noop,
  type Observable,
  Subject,
  Subscriber,
  Subscription,
} from 'rxjs';
import { sessionPipeline } from '../../../operators/sessionPipeline.js';
import { Clock } from '../../../lib/clock.js';
import type { RequestContext } from '../../../lib/context.js';
import type { Frame, MessageFrame } from '../../../lib/frame.js';
import { channels, reportError } from '../../../lib/telemetry.js';
import { endStream, type LiveSession, sleep, type StreamHandle } from './liveSession.js';
import type { LegacySessionsInit } from './sessionOptions.js';
import { restore, RestoreError } from './subscribe.js';

/** How many persisted subscriptions a GET stream restores at a time (DESIGN L8). */
const RESTORE_CONCURRENCY = 8;

/**
 * What a GET stream needs of the {@link LegacySessions} it belongs to.
 * @internal
 */
export interface StreamOwner {
  readonly init: LegacySessionsInit;
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
  const { init } = owner;
  const slot = owner.isClosed() || session.ended ? undefined : init.slots.tryAcquire();
  if (slot === undefined) return undefined;
  const { scheduler, keepAliveInterval, maxQueue, maxQueueBytes, maxStreamLifetime } = init;
  const open = (demand$: Observable<boolean>) =>
    defer(() => {
      const expiry = context.auth.expiresAt;
      // A credential already expired gets nothing, not even the replay.
      if (session.ended || owner.isClosed() || (expiry !== undefined && expiry <= scheduler.now())) {
        slot.release();
        return EMPTY;
      }
      // The GET this one replaces leaves the principal's count before this one is admitted.
      endStream(session);
      // DESIGN M8 for GET streams too: over the cap, the principal's oldest stream of either
      // kind is superseded (a GET one ends cleanly, and its client reconnects).
      const admission = init.principals.admit(context.auth.principal);
      const handle: StreamHandle = { feed: new Subject<Frame>(), admission };
      session.stream = handle;
      session.streamContext = context;
      session.scopes = context.auth.scopes;
      session.changed.next();
      claim(init, session);
      session.grace?.unsubscribe();
      session.grace = undefined;
      watchListChanged(init, session);
      // Restore what is on the record but not live (after a grace period ran out, or on another node).
      const toRestore = { [Symbol.iterator]: () => session.uris.filter((uri) => !session.live.has(uri))[Symbol.iterator]() };
      return handle.feed.pipe(
        // DESIGN L7–L9 as one composite operator: replay after Last-Event-ID, the priming event,
        // keep-alives, the lifetime cap (its client reconnects with Last-Event-ID, and its
        // subscriptions are authorized again on restore), token expiry, supersede and shutdown,
        // the bounded queue, and the restore of the persisted subscriptions.
        sessionPipeline({
          lastEventId,
          log: session.log,
          reconnectDelay: init.options.reconnectDelay,
          keepAliveInterval,
          maxStreamLifetime,
          expiresAt: context.auth.expiresAt,
          supersede$: admission.superseded$,
          shutdown$,
          queue: { notifications: maxQueue, bytes: maxQueueBytes },
          demand$,
          onDrop,
          restore: {
            uris: toRestore,
            subscribe: (uri) => restore(init, session, uri, context, handle),
            concurrency: RESTORE_CONCURRENCY,
            onError: (uri, error) => reportError('source', new RestoreError(uri, error)),
          },
          // Closed by a trigger: the session lets go of the stream at once (its slot in the
          // principal's cap too), while the stream writes what it holds.
          onClose: () => endStream(session, handle),
          scheduler,
        }),
        finalize(() => {
          admission.release();
          slot.release();
          detach(owner, session, handle);
        }),
      );
    });
  return { open, abandon: () => slot.release() };
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
function detach(owner: StreamOwner, session: LiveSession, handle: StreamHandle): void {
  const { init } = owner;
  endStream(session, handle);
  if (session.ended || owner.isClosed() || session.stream !== undefined) return;
  session.streamContext = undefined;
  session.lastActivity = init.scheduler.now();
  const changes = init.bus === undefined ? { lastActivity: session.lastActivity } : { lastActivity: session.lastActivity, streamNode: null };
  Promise.resolve(init.store.update(session.id, changes)).catch((error: unknown) => reportError('source', error));
  session.grace?.unsubscribe();
  session.grace = Clock.of(init.scheduler).after(init.options.sessionGracePeriod, () => {
    session.grace = undefined;
    if (session.stream === undefined) sleep(session);
  });
}

function watchListChanged(init: LegacySessionsInit, session: LiveSession): void {
  if (session.listChanged !== undefined) return;
  const { hub, capabilities } = init;
  const kinds: ('tools' | 'prompts' | 'resources')[] = [];
  if (capabilities.tools) kinds.push('tools');
  if (capabilities.prompts) kinds.push('prompts');
  if (capabilities.resources) kinds.push('resources');
  if (kinds.length === 0) return;
  // One subscriber registered on each topic directly (per session, so kept small): topics never complete.
  const subscriber = new Subscriber<MessageFrame>({ next: (frame: MessageFrame) => session.push(frame), error: noop, complete: noop });
  for (const kind of kinds) hub.attach(kind, undefined, subscriber);
  session.listChanged = new Subscription(() => {
    for (const kind of kinds) hub.detach(kind, undefined, subscriber);
    subscriber.unsubscribe();
  });
}

function onDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}
