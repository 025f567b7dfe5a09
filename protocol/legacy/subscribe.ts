import { firstValueFrom, race, timer } from 'rxjs';
import type { RequestContext } from '../../lib/context.js';
import { McpRxError } from '../../lib/errors.js';
import { MAX_URI_BYTES } from '../../lib/filter.js';
import { ErrorCode, exceedsBytes, JsonRpcError } from '../../lib/jsonrpc.js';
import { reportError } from '../../lib/telemetry.js';
import { refusalError, type ResourceDecision } from '../authorize.js';
import { cancelSubscribe, establishSubscription, type SubscribeOutcome } from '../subscriptions.js';
import type { LiveSession, SessionStream } from './liveSession.js';
import type { LegacySessionsInit } from './sessionOptions.js';

const STREAM_REQUIRED = 'open the GET SSE stream before subscribing to resources';

/** `resources/subscribe` (DESIGN L2–L5): `{}` or a JSON-RPC error, never an HTTP error. */
export async function subscribe(init: LegacySessionsInit, session: LiveSession, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<object> {
  const uri = requireUri('resources/subscribe', params);
  if (session.stream === undefined && (await streamElsewhere(init, session))) return subscribeRemote(init, session, uri, context);
  const wait = init.options.subscribeStreamWait;
  if (session.stream === undefined && wait > 0 && !session.ended) {
    await firstValueFrom(race(session.changes(), timer(wait, init.scheduler)), { defaultValue: undefined });
    // The GET the client opened meanwhile may have reached another node (a fleet's, a machine's
    // worker): its claim ended this node's copy of the session, and the record names the holder.
    if (session.stream === undefined && (await streamElsewhere(init, session))) return subscribeRemote(init, session, uri, context);
  }
  const stream = session.stream;
  if (stream === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, STREAM_REQUIRED);
  checkCap(init, session, uri);
  const outcome = await establish(init, session, uri, stream, context);
  if (outcome !== undefined) throw outcome.error;
  return {};
}

/** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
export async function unsubscribe(init: LegacySessionsInit, session: LiveSession, params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
  const uri = requireUri('resources/unsubscribe', params);
  cancelSubscribe(session, uri, 'resources/unsubscribe arrived');
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
 * True when the session's record says its GET stream is held by another node (only with a session
 * bus); the session then carries the record's subscriptions, for {@link subscribeRemote} to add to.
 */
async function streamElsewhere(init: LegacySessionsInit, session: LiveSession): Promise<boolean> {
  if (init.bus === undefined) return false;
  const record = await init.store.get(session.id);
  const holder = record?.streamNode;
  if (record === undefined || holder === undefined || holder === null || holder === init.bus.nodeId) return false;
  session.uris = record.subscriptions;
  return true;
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
    session.uris = session.uris.concat(uri);
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

/**
 * Establishes `uri` for the GET stream `stream` (a restore on open, or a subscribe relayed from
 * another node); a URI no longer subscribable or readable leaves the record.
 * @throws the JSON-RPC error of a failed or cancelled restore (the URI stays on the record).
 */
export async function restore(init: LegacySessionsInit, session: LiveSession, uri: string, stream: SessionStream, context: RequestContext): Promise<void> {
  const outcome = await establish(init, session, uri, stream, context);
  if (outcome === undefined) return;
  if (outcome.drop) {
    session.uris = session.uris.filter((kept) => kept !== uri);
    await init.store.update(session.id, { subscriptions: session.uris });
    return;
  }
  throw outcome.error;
}

/**
 * Subscribes `uri`'s change source into the session's feed, as the principal of `context`, and
 * persists it. A subscribe made for a GET stream that has ended meanwhile is cancelled.
 */
function establish(init: LegacySessionsInit, session: LiveSession, uri: string, stream: SessionStream, context: RequestContext): Promise<SubscribeOutcome> {
  return establishSubscription(session, init.access, uri, context, {
    interrupted: () => (session.stream !== stream ? 'the GET stream closed' : undefined),
    persist: async () => {
      if (session.uris.includes(uri)) return;
      session.uris = session.uris.concat(uri);
      await init.store.update(session.id, { subscriptions: session.uris });
    },
  });
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

/**
 * `params.uri` of a `resources/subscribe` or `resources/unsubscribe` (DESIGN L3), also on a message channel.
 * @throws JsonRpcError `-32602` when it is missing, not a string, or over {@link MAX_URI_BYTES} bytes.
 * @internal
 */
export function requireUri(method: string, params: Readonly<Record<string, unknown>> | undefined): string {
  const uri = params?.uri;
  if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, `${method} requires params.uri`);
  if (exceedsBytes(uri, MAX_URI_BYTES)) throw new JsonRpcError(ErrorCode.InvalidParams, `${method} params.uri must be at most ${MAX_URI_BYTES} bytes`);
  return uri;
}
