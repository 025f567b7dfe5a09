import {
  defer,
  EMPTY,
  finalize,
  identity,
  type MonoTypeOperatorFunction,
  noop,
  type Observable,
  Subject,
  Subscriber,
  Subscription,
  timer,
} from 'rxjs';
import { dropWhenQueueExceeds } from '../../../operators/dropWhenQueueExceeds.js';
import { keepAlive } from '../../../operators/keepAlive.js';
import { primeStream } from '../../../operators/primeStream.js';
import { replayFrom } from '../../../operators/replayFrom.js';
import { restoreSubscriptions } from '../../../operators/restoreSubscriptions.js';
import { expiresAt as tokenExpiry } from '../../../lib/closeTriggers.js';
import type { RequestContext } from '../../../lib/context.js';
import type { Frame, MessageFrame } from '../../../lib/frame.js';
import { failWhenStalled } from '../../../lib/stallGuard.js';
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
      const handle: StreamHandle = { feed: new Subject<Frame>(), ended: new Subject<void>(), admission };
      session.stream = handle;
      session.streamContext = context;
      session.scopes = context.auth.scopes;
      session.changed.next();
      claim(init, session);
      session.grace?.unsubscribe();
      session.grace = undefined;
      watchListChanged(init, session);
      // Like a listen, a GET stream lives at most maxStreamLifetime: its client reconnects (with
      // Last-Event-ID) and its subscriptions are authorized again on restore.
      const ends: Subscription[] = [
        shutdown$.subscribe(() => endStream(session, handle)),
        admission.superseded$.subscribe(() => endStream(session, handle)),
        // maxStreamLifetime is validated to fit one timer: one scheduled action, not a trigger chain.
        scheduler.schedule(() => endStream(session, handle), maxStreamLifetime),
      ];
      const expiresAt = context.auth.expiresAt;
      if (expiresAt !== undefined) {
        ends.push(tokenExpiry(expiresAt, scheduler)(EMPTY).subscribe(() => endStream(session, handle)));
      }
      // Restore what is on the record but not live (after a grace period ran out, or on another node).
      const toRestore = { [Symbol.iterator]: () => session.uris.filter((uri) => !session.live.has(uri))[Symbol.iterator]() };
      // Without Last-Event-ID there is nothing to replay and no seam to cut: no replay stage.
      const replay: MonoTypeOperatorFunction<Frame> = lastEventId === undefined ? identity : replayFrom(lastEventId, session.log);
      return handle.feed.pipe(
        replay,
        // DESIGN L7: the stream opens with the id its client can resume from, heard or not.
        primeStream(lastEventId, session.log, init.options.reconnectDelay),
        keepAlive(keepAliveInterval, scheduler),
        dropWhenQueueExceeds({ notifications: maxQueue, bytes: maxQueueBytes }, demand$, onDrop),
        restoreSubscriptions(toRestore, (uri) => restore(init, session, uri, context, handle), RESTORE_CONCURRENCY, (uri, error) =>
          reportError('source', new RestoreError(uri, error)),
        ),
        failWhenStalled(handle.ended, keepAliveInterval, scheduler),
        finalize(() => {
          for (const end of ends) end.unsubscribe();
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
  session.grace = timer(init.options.sessionGracePeriod, init.scheduler).subscribe(() => {
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
