import { Observable, Subscriber } from 'rxjs';
import type { MonoTypeOperatorFunction } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';
import type { Frame } from '../lib/frame.js';
import { isJsonRpcId } from '../lib/jsonrpc.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';

/**
 * Marks every message frame with the listen request id, which the encoder writes as
 * `_meta["io.modelcontextprotocol/subscriptionId"]`.
 *
 * The frame's message is not copied or re-encoded: the frame gets a `subscriptionId` field and
 * the encoder (`messageJson`, `encodeFrame`) splices the id into `params._meta` (notifications)
 * or `result._meta` (results) of the message encoded once at publish time, keeping the other
 * `_meta` keys. The id is written verbatim, so `7` stays a number and `"7"` a string. Comment
 * frames (keep-alives) carry no message and pass untouched.
 *
 * MCP 2026-07-28 `subscriptions/listen`, DESIGN M5: "Every message — ack, notifications, closing
 * frames — carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request id,
 * verbatim (number stays number, string stays string)."
 *
 * @example
 * of(notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }))
 *   .pipe(tagSubscriptionId(7), map(encodeFrame))
 *   .subscribe((text) => res.write(text));
 * // event: message
 * // data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
 * @param id the `subscriptions/listen` request id: a string or a finite number.
 * @throws InvalidOptionError when `id` is not a string or a finite number.
 * @see ackThenNotify
 * @see closeWhen
 */
export function tagSubscriptionId(id: JsonRpcId): MonoTypeOperatorFunction<Frame> {
  if (!isJsonRpcId(id)) {
    throw new InvalidOptionError('tagSubscriptionId id', 'a string or a finite number (the listen request id)', id);
  }
  return (source) =>
    new Observable<Frame>((subscriber) => {
      source.subscribe(new TagSubscriber(subscriber, id));
    });
}

// One monomorphic Subscriber layer instead of `map`: this runs once per frame per stream. As a
// child of the downstream subscriber it is closed by its unsubscription (a synchronous source stops).
class TagSubscriber extends Subscriber<Frame> {
  constructor(
    destination: Subscriber<Frame>,
    private readonly id: JsonRpcId,
  ) {
    super(destination);
  }

  protected override _next(frame: Frame): void {
    this.destination.next(frame.type === 'message' ? { ...frame, subscriptionId: this.id } : frame);
  }
}
