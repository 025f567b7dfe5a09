import { Observable, Subject, Subscriber } from 'rxjs';
import type { MonoTypeOperatorFunction } from 'rxjs';
import type { CloseTrigger } from '../lib/closeTriggers.js';
import { InvalidOptionError } from '../lib/errors.js';
import { controlFrame } from '../lib/frame.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import { isJsonRpcId } from '../lib/jsonrpc.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';

export type { CloseTrigger };

/** How a stream closed by `closeWhen` says goodbye. */
export interface CloseNotice {
  /** The id of the `subscriptions/listen` request: the `requestId` of `notifications/cancelled` and the id of the result. */
  readonly requestId: JsonRpcId;
  /**
   * `'cancelled-then-result'` (the default) sends `notifications/cancelled` and then the listen
   * result; `'result-only'` sends just the result, for clients that treat the cancellation as an
   * abnormal end (DESIGN M7, option `closeNotice`).
   */
  readonly mode?: 'cancelled-then-result' | 'result-only';
}

function isTriggerList(value: unknown): boolean {
  return Array.isArray(value) && value.every((trigger) => typeof trigger === 'function');
}

/**
 * Passes frames through until a trigger gives a reason to close, then ends the stream gracefully:
 * `notifications/cancelled`, the listen result, completion.
 *
 * Each trigger (`lifetimeCap`, `expiresAt`, `idleTimeout`, `superseded`, `shutdown`, or your own)
 * watches the same single subscription to the upstream and may emit a `CloseReason`. The first
 * reason wins: `closeWhen` emits the closing frames (control frames carrying `closeReason`, so
 * they are never dropped), completes, and unsubscribes the upstream and every trigger. An upstream
 * that ends first ends the stream as it is, without closing frames (a client disconnect sends
 * nothing); its error passes through. Triggers are subscribed before the upstream, so they see
 * every frame; a frame on which a trigger decides to close is replaced by the closing frames.
 * The subscription id `_meta` is not added here: put `tagSubscriptionId` downstream.
 *
 * MCP 2026-07-28 `subscriptions/listen`, DESIGN M7: "Order fixed: `notifications/cancelled`
 * (`requestId` = listen id, `reason`), then the listen result
 * `{"resultType":"complete","_meta":{subscriptionId}}` as a JSON-RPC response to the listen id,
 * then end of stream."
 *
 * @example
 * hubFrames$.pipe(
 *   ackThenNotify(ack),
 *   keepAlive(15_000),
 *   closeWhen([lifetimeCap(3_600_000), expiresAt(tokenExpMs), idleTimeout(1_800_000), superseded(evict$)], { requestId: 7 }),
 *   tagSubscriptionId(7),
 * );
 * // … on the first reason, e.g. after one hour:
 * // {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"max_lifetime"}}
 * // {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}
 * // then completion (both messages tagged with the subscription id by tagSubscriptionId)
 * @param triggers one trigger or a list of them; an empty list never closes.
 * @param notice the listen request id and which closing frames to send; `mode` defaults to
 *   `'cancelled-then-result'`.
 * @throws InvalidOptionError when a trigger is not a function, `notice.requestId` is not a string
 *   or finite number, or `notice.mode` is not one of the two modes.
 * @see lifetimeCap
 * @see expiresAt
 * @see idleTimeout
 * @see superseded
 * @see shutdown
 * @see tagSubscriptionId
 */
export function closeWhen(triggers: CloseTrigger | readonly CloseTrigger[], notice: CloseNotice): MonoTypeOperatorFunction<Frame> {
  const list: readonly CloseTrigger[] = typeof triggers === 'function' ? [triggers] : triggers;
  if (!isTriggerList(list)) {
    throw new InvalidOptionError('closeWhen triggers', 'a CloseTrigger function or an array of them', triggers);
  }
  const requestId: unknown = notice?.requestId;
  if (!isJsonRpcId(requestId)) {
    throw new InvalidOptionError('closeWhen notice.requestId', 'a string or a finite number (the listen request id)', requestId);
  }
  const mode = notice.mode ?? 'cancelled-then-result';
  if (mode !== 'cancelled-then-result' && mode !== 'result-only') {
    throw new InvalidOptionError('closeWhen notice.mode', '"cancelled-then-result" or "result-only"', mode);
  }

  const closingFrames = (reason: CloseReason): Frame[] => {
    const result = controlFrame({ jsonrpc: '2.0', id: requestId, result: { resultType: 'complete' } }, reason);
    if (mode === 'result-only') return [result];
    const cancelled = controlFrame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } }, reason);
    return [cancelled, result];
  };

  return (source) =>
    new Observable<Frame>((subscriber) => {
      const upstream = new Subject<Frame>();
      const frames = upstream.asObservable();
      let closing = false;
      const close = (reason: CloseReason) => {
        if (closing) return;
        closing = true;
        for (const frame of closingFrames(reason)) subscriber.next(frame);
        subscriber.complete();
      };
      const fail = (error: unknown) => subscriber.error(error);
      // The triggers are subscribed first so that they see every frame, even those the upstream
      // emits while it is being subscribed. The first reason ends the stream, which unsubscribes
      // the upstream and every trigger.
      for (const trigger of list) {
        if (subscriber.closed) return;
        subscriber.add(trigger(frames).subscribe({ next: close, error: fail }));
      }
      if (subscriber.closed) return;
      source.subscribe(new CloseWhenSubscriber(subscriber, upstream));
    });
}

// Hand-written rather than `merge(triggers, source.pipe(tap(…), endWith(END))).pipe(takeWhile(…))`:
// it is on the per-frame path of every stream. As a child of the downstream subscriber it is closed
// when the stream closes (by a trigger or by the downstream), which stops a synchronous source; a
// frame on which a trigger closed the stream is therefore not forwarded.
class CloseWhenSubscriber extends Subscriber<Frame> {
  constructor(
    destination: Subscriber<Frame>,
    private readonly upstream: Subject<Frame>,
  ) {
    super(destination);
  }

  protected override _next(frame: Frame): void {
    this.upstream.next(frame);
    if (!this.closed) this.destination.next(frame);
  }
}
