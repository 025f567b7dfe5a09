import { type Observable, race, timer } from 'rxjs';
import type { RequestContext } from '../../lib/context.js';
import { McpRxError } from '../../lib/errors.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import { reportError } from '../../lib/telemetry.js';
import { refusalError, type ResourceDecision } from '../authorize.js';
import { requireUri } from '../subscriptionSet.js';
import type { LiveSession, SessionStream } from './liveSession.js';
import type { LegacySessionsInit } from './sessionOptions.js';

const STREAM_REQUIRED = 'open the GET SSE stream before subscribing to resources';

/**
 * Where a subscribe looks for its session's GET stream while it waits for one: the session as this
 * node holds it now, and what tells that something changed. @internal
 */
export interface StreamWaits {
  /** The session `id` as this node holds it now (a claim elsewhere ends this node's copy; a GET here may adopt a new one). */
  current(id: string): LiveSession | undefined;
  /** Emits when a GET stream attaches to session `id` here, or another node says something about it (a claim, a take-up). */
  changed(id: string): Observable<void>;
}

/**
 * `resources/subscribe` (DESIGN L2–L5) of an HTTP session: `{}` or a JSON-RPC error, never an HTTP
 * error. Its rules are the session's {@link SubscriptionSet}'s; what is a session's own is where
 * the subscription lives: on its live GET stream here, or, when the record says another node holds
 * the stream (its `Placement`), checked here and handed there.
 *
 * Without a stream yet it waits up to `subscribeStreamWait` for one, here or elsewhere (an SDK
 * client subscribes right after its GET, which may reach another worker or machine): each time
 * something changes for the session it looks again, here and then in the record. The wait is
 * armed before the record is read, so a claim heard while the read is under way (its answer
 * older than the claim) is not missed; the session's copy on this node ending meanwhile (the
 * claim ends it) does not end the wait either.
 */
export async function subscribe(
  init: LegacySessionsInit,
  waits: StreamWaits,
  session: LiveSession,
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
): Promise<object> {
  const uri = requireUri('resources/subscribe', params);
  const { scheduler } = init;
  const deadline = scheduler.now() + init.options.subscribeStreamWait;
  for (;;) {
    const here = waits.current(session.id) ?? session;
    const stream = here.stream;
    if (stream !== undefined) {
      await here.subscribeUri(uri, context, { access: init.access, cap: init.options.maxSubscriptionsPerSession, ...onStream(init, here, stream) });
      return {};
    }
    const left = deadline - scheduler.now();
    let wake: () => void = noop;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const waiting = left > 0 ? race(waits.changed(session.id), timer(left, scheduler)).subscribe({ next: () => wake(), complete: () => wake() }) : undefined;
    try {
      if (await streamElsewhere(init, here)) return await subscribeRemote(init, here, uri, context);
      if (waiting === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, STREAM_REQUIRED);
      await woken;
    } finally {
      waiting?.unsubscribe();
    }
  }
}

function noop(): void {}

/** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
export async function unsubscribe(init: LegacySessionsInit, session: LiveSession, params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
  const uri = requireUri('resources/unsubscribe', params);
  if (session.unsubscribeUri(uri)) await init.store.update(session.id, { subscriptions: session.uris });
  if (session.stream === undefined) await init.placement.relay(session.id, { kind: 'unsubscribe', uri });
  return {};
}

/**
 * True when the session's record says another node holds its GET stream; the session then
 * carries the record's subscriptions, for {@link subscribeRemote} to add to.
 */
async function streamElsewhere(init: LegacySessionsInit, session: LiveSession): Promise<boolean> {
  const record = await init.placement.elsewhere(session.id);
  if (record === undefined) return false;
  session.uris = record.subscriptions;
  return true;
}

/**
 * A subscribe served on this node for a session whose GET stream is on another: checked here
 * (the providers are the same on every node), persisted, and handed to the holder to establish.
 */
async function subscribeRemote(init: LegacySessionsInit, session: LiveSession, uri: string, context: RequestContext): Promise<object> {
  session.checkCap(uri, init.options.maxSubscriptionsPerSession);
  let decision: ResourceDecision;
  try {
    decision = await init.access.decide(uri, context);
  } catch (error) {
    reportError('source', error);
    throw new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`);
  }
  if (!decision.allowed) throw refusalError(uri, decision.refusal);
  if (session.add(uri)) await init.store.update(session.id, { subscriptions: session.uris });
  await init.placement.relay(session.id, { kind: 'subscribe', uri });
  return {};
}

/**
 * Establishes `uri` for the GET stream `stream` (a restore on open, or a subscribe relayed from
 * another node); a URI no longer subscribable or readable leaves the record.
 * @throws the JSON-RPC error of a failed or cancelled restore (the URI stays on the record).
 */
export async function restore(init: LegacySessionsInit, session: LiveSession, uri: string, stream: SessionStream, context: RequestContext): Promise<void> {
  const { interrupted, persist } = onStream(init, session, stream);
  const outcome = await session.establish(uri, context, init.access, interrupted, persist);
  if (outcome !== undefined && !outcome.drop) throw outcome.error;
}

/** A subscription made for the GET stream `stream`: cancelled if the stream ends meanwhile, persisted on the session's record. */
function onStream(init: LegacySessionsInit, session: LiveSession, stream: SessionStream) {
  return {
    interrupted: () => (session.stream !== stream ? 'the GET stream closed' : undefined),
    persist: (uris: readonly string[]) => init.store.update(session.id, { subscriptions: uris }),
  };
}

/**
 * A persisted subscription that could not be restored on a GET (it stays on the record and is
 * retried on the next GET): reported on `channels.error`, with the provider's error as `cause`.
 */
export class RestoreError extends McpRxError {
  override readonly name = 'RestoreError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_RESTORE';
  /** The URI whose subscription failed. */
  override readonly info: { readonly uri: string };

  constructor(
    readonly uri: string,
    override readonly cause: unknown,
  ) {
    super(`failed to restore the subscription to ${uri}; it is retried on the next GET`);
    this.info = { uri };
  }
}
