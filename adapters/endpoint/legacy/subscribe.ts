import { firstValueFrom, from, race, type Subscription, timer } from 'rxjs';
import type { RequestContext } from '../../../lib/context.js';
import { McpRxError } from '../../../lib/errors.js';
import { encodeResourceUpdated } from '../../../lib/encode.js';
import { MAX_URI_BYTES } from '../../../lib/filter.js';
import type { MessageFrame } from '../../../lib/frame.js';
import { NotificationMethod } from '../../../lib/hub.js';
import { ErrorCode, exceedsBytes, JsonRpcError } from '../../../lib/jsonrpc.js';
import { reportError } from '../../../lib/telemetry.js';
import { refusalError, type ResourceDecision } from '../authorize.js';
import type { LiveSession, PendingSubscribe, StreamHandle } from './liveSession.js';
import type { LegacySessionsInit } from './sessionOptions.js';

const STREAM_REQUIRED = 'open the GET SSE stream before subscribing to resources';

/** `resources/subscribe` (DESIGN L2–L5): `{}` or a JSON-RPC error, never an HTTP error. */
export async function subscribe(init: LegacySessionsInit, session: LiveSession, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<object> {
  const uri = requireUri('resources/subscribe', params);
  if (session.stream === undefined && init.bus !== undefined) {
    const record = await init.store.get(session.id);
    const holder = record?.streamNode;
    if (holder !== undefined && holder !== null && holder !== init.bus.nodeId) return subscribeRemote(init, session, uri, context);
  }
  const wait = init.options.subscribeStreamWait;
  if (session.stream === undefined && wait > 0 && !session.ended) {
    await firstValueFrom(race(session.changed, timer(wait, init.scheduler)), { defaultValue: undefined });
  }
  const stream = session.stream;
  if (stream === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, STREAM_REQUIRED);
  checkCap(init, session, uri);
  const outcome = await establish(init, session, uri, context, stream);
  if (outcome !== undefined) throw outcome.error;
  return {};
}

/** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
export async function unsubscribe(init: LegacySessionsInit, session: LiveSession, params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
  const uri = requireUri('resources/unsubscribe', params);
  const pending = session.pending.get(uri);
  if (pending !== undefined) {
    pending.reason = 'resources/unsubscribe arrived';
    session.pending.delete(uri);
  }
  session.live.get(uri)?.unsubscribe();
  session.live.delete(uri);
  if (session.uris.includes(uri)) {
    session.uris = session.uris.filter((kept) => kept !== uri);
    await init.store.update(session.id, { subscriptions: session.uris });
  }
  if (session.stream === undefined) await init.bus?.publish(session.id, { kind: 'unsubscribe', uri });
  return {};
}

/**
 * A subscribe served on this node for a session whose GET stream is on another: checked here
 * (the providers are the same on every node), persisted, and handed to the holder to establish.
 */
async function subscribeRemote(init: LegacySessionsInit, session: LiveSession, uri: string, context: RequestContext): Promise<object> {
  checkCap(init, session, uri);
  let decision: ResourceDecision;
  try {
    decision = await init.access.decide(uri, context);
  } catch (error) {
    reportError('source', error);
    throw new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`);
  }
  if (!decision.allowed) throw refusalError(uri, decision.refusal);
  if (!session.uris.includes(uri)) {
    session.uris = [...session.uris, uri];
    await init.store.update(session.id, { subscriptions: session.uris });
  }
  await init.bus!.publish(session.id, { kind: 'subscribe', uri });
  return {};
}

function checkCap(init: LegacySessionsInit, session: LiveSession, uri: string): void {
  const cap = init.options.maxSubscriptionsPerSession;
  if (!session.uris.includes(uri) && session.uris.length >= cap) {
    throw new JsonRpcError(ErrorCode.InvalidParams, `a session can hold at most ${cap} resource subscriptions; unsubscribe from one first`);
  }
}

export async function restore(init: LegacySessionsInit, session: LiveSession, uri: string, context: RequestContext, stream: StreamHandle): Promise<void> {
  const outcome = await establish(init, session, uri, context, stream);
  if (outcome === undefined) return;
  if (outcome.drop) {
    session.uris = session.uris.filter((kept) => kept !== uri);
    await init.store.update(session.id, { subscriptions: session.uris });
    return;
  }
  throw outcome.error;
}

/**
 * Subscribes `uri`'s change source into the session's feed. Returns nothing on success, else the
 * error and whether the URI should leave the record (no longer subscribable or readable).
 */
async function establish(
  init: LegacySessionsInit,
  session: LiveSession,
  uri: string,
  context: RequestContext,
  stream: StreamHandle,
): Promise<{ readonly error: JsonRpcError; readonly drop: boolean } | undefined> {
  const pending: PendingSubscribe = { reason: undefined };
  const overtaken = session.pending.get(uri);
  if (overtaken !== undefined) overtaken.reason = 'a newer resources/subscribe for the URI arrived';
  session.pending.set(uri, pending);
  const cancelled = () => {
    const reason = pending.reason ?? (session.stream !== stream ? 'the GET stream closed' : undefined);
    return reason === undefined
      ? undefined
      : { error: new JsonRpcError(ErrorCode.InvalidParams, `resources/subscribe for ${uri} was cancelled: ${reason}`), drop: false };
  };
  const failed = (error: unknown) => {
    reportError('source', error);
    return { error: new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`), drop: false };
  };
  try {
    // The decision a modern listen makes too: the provider, the endpoint's canRead, the subscribe hook.
    let decision: ResourceDecision;
    try {
      decision = await init.access.decide(uri, context);
    } catch (error) {
      return cancelled() ?? failed(error);
    }
    const overtakenMeanwhile = cancelled();
    if (overtakenMeanwhile !== undefined) return overtakenMeanwhile;
    if (!decision.allowed) return { error: refusalError(uri, decision.refusal), drop: true };
    const provider = decision.provider;

    const frame = resourceUpdatedFrame(uri);
    let subscribing = true;
    let emittedEarly = false;
    let failure: { error: unknown } | undefined;
    let subscription: Subscription | undefined;
    const forget = () => {
      if (subscription !== undefined && session.live.get(uri) === subscription) session.live.delete(uri);
    };
    try {
      subscription = from(provider.changes(uri, context)).subscribe({
        // A value emitted while subscribing is written once the subscribe has succeeded.
        next: (value: unknown) => {
          // A scoped hub publish (hubResources) is heard only by principals holding its scope.
          if (!mayReceiveValue(value, context.auth.scopes)) return;
          if (subscribing) emittedEarly = true;
          else session.push(frame);
        },
        error: (error: unknown) => {
          if (subscribing) failure = { error };
          else reportError('source', error);
          forget();
        },
        complete: forget,
      });
    } catch (error) {
      failure = { error };
    }
    subscribing = false;
    if (failure !== undefined) {
      subscription?.unsubscribe();
      return failed(failure.error);
    }
    if (emittedEarly) session.push(frame);
    if (subscription === undefined || subscription.closed) {
      // A source that completed at once has nothing to say later: subscribed, and that is all.
    } else {
      session.live.get(uri)?.unsubscribe();
      session.live.set(uri, subscription);
    }
    if (!session.uris.includes(uri)) {
      session.uris = [...session.uris, uri];
      await init.store.update(session.id, { subscriptions: session.uris });
    }
    return undefined;
  } finally {
    if (session.pending.get(uri) === pending) session.pending.delete(uri);
  }
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

function requireUri(method: string, params: Readonly<Record<string, unknown>> | undefined): string {
  const uri = params?.uri;
  if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, `${method} requires params.uri`);
  if (exceedsBytes(uri, MAX_URI_BYTES)) throw new JsonRpcError(ErrorCode.InvalidParams, `${method} params.uri must be at most ${MAX_URI_BYTES} bytes`);
  return uri;
}

function resourceUpdatedFrame(uri: string): MessageFrame {
  return Object.freeze({
    type: 'message',
    message: Object.freeze({ jsonrpc: '2.0', method: NotificationMethod.resource, params: Object.freeze({ uri }) }),
    priority: 'notification',
    topic: 'resource',
    coalesceKey: `${NotificationMethod.resource} ${uri}`,
    encoded: encodeResourceUpdated(uri),
  });
}

/** A provider's change value: a scoped hub frame only for principals holding its scope; anything else for all. */
function mayReceiveValue(value: unknown, scopes: ReadonlySet<string>): boolean {
  const scope = (value as { scope?: unknown } | null)?.scope;
  return (value as { type?: unknown } | null)?.type !== 'message' || typeof scope !== 'string' || scopes.has(scope);
}
