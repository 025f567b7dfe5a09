import type { MonoTypeOperatorFunction } from 'rxjs';
import { CloseStage, closePlan, type CloseTrigger } from './closeTriggers.js';
import { stageOperator } from './stage.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import type { CloseNoticeMode } from '../lib/options.js';
import { callback, oneOf, requestId } from '../lib/validate.js';

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
  readonly mode?: CloseNoticeMode;
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
 *   `'cancelled-then-result'`. `'end'`: no closing frames, the stream just completes on the first
 *   reason (what a legacy GET stream does: its client reconnects).
 * @param onClose called once with the reason, just before the closing frames; optional (the
 *   endpoint lets a legacy session go of its stream at that moment). If it throws, the error
 *   reaches whoever triggered the close.
 * @throws InvalidOptionError when a trigger is not a function, `notice.requestId` is not a string
 *   or finite number, `notice.mode` is not one of the two modes, or `onClose` is not a function.
 * @see lifetimeCap
 * @see expiresAt
 * @see idleTimeout
 * @see superseded
 * @see shutdown
 * @see tagSubscriptionId
 */
export function closeWhen(
  triggers: CloseTrigger | readonly CloseTrigger[],
  notice: CloseNotice | 'end',
  onClose?: (reason: CloseReason) => void,
): MonoTypeOperatorFunction<Frame> {
  const list: readonly CloseTrigger[] = typeof triggers === 'function' ? [triggers] : triggers;
  if (!isTriggerList(list)) {
    throw new InvalidOptionError('closeWhen triggers', 'a CloseTrigger function or an array of them', triggers);
  }
  const told = onClose === undefined ? undefined : callback<(reason: CloseReason) => void>('closeWhen onClose', onClose);
  const plan =
    notice === 'end'
      ? closePlan(list, 'end', { onClose: told })
      : closePlan(list, oneOf('closeWhen notice.mode', notice?.mode ?? 'cancelled-then-result', CLOSE_NOTICE_MODES), {
          requestId: requestId('closeWhen notice.requestId', notice?.requestId),
          onClose: told,
        });
  return stageOperator(() => [new CloseStage(plan)]);
}

const CLOSE_NOTICE_MODES: readonly CloseNoticeMode[] = ['cancelled-then-result', 'result-only'];
