import type { MonoTypeOperatorFunction } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';
import { encodeSubscriptionId } from '../lib/encode.js';
import type { EncodedSubscriptionId, Frame, MessageFrame } from '../lib/frame.js';
import { Stage, stageOperator } from './stage.js';
import { isJsonRpcId } from '../lib/jsonrpc.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';

/**
 * Marks every message frame with the listen request id, which the encoder writes as
 * `_meta["io.modelcontextprotocol/subscriptionId"]`.
 *
 * The frame's message is not copied or re-encoded: the frame gets a `subscriptionId` field (with
 * `encodedSubscriptionId`, the id's JSON made once for the stream) and the encoder (`messageJson`,
 * `encodeFrame`) splices the id into `params._meta` (notifications)
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
  return stageOperator(() => [new TagStage(id)]);
}

/**
 * The logic of {@link tagSubscriptionId}. The id is encoded once here, for every frame of the
 * stream (`encodeSubscriptionId`), as the hub encodes a message once for every stream; the stage
 * is itself the encoded id its frames carry (no other object per stream).
 * @internal
 */
export class TagStage extends Stage<Frame> implements EncodedSubscriptionId {
  readonly json: string;
  readonly bytes: number;

  constructor(readonly id: JsonRpcId) {
    super();
    const { json, bytes } = encodeSubscriptionId(id);
    this.json = json;
    this.bytes = bytes;
  }

  push(frame: Frame): void {
    this.out.push(frame.type === 'message' ? tagged(frame, this) : frame);
  }
}

/**
 * `frame` with `subscriptionId` (and the stream's encoding of it) set. A hub notification always
 * has exactly the members of the literal below, in this order: for it the copy is one literal of
 * one fixed shape (several times faster per frame than a spread); any other frame is spread.
 * @internal
 */
export function tagged(frame: MessageFrame, id: EncodedSubscriptionId): MessageFrame {
  if (frame.priority === 'notification' && frame.encoded !== undefined && frame.eventId === undefined && frame.closeReason === undefined && frame.scope === undefined) {
    return {
      type: 'message',
      message: frame.message,
      priority: frame.priority,
      topic: frame.topic,
      coalesceKey: frame.coalesceKey,
      encoded: frame.encoded,
      subscriptionId: id.id,
      encodedSubscriptionId: id,
    };
  }
  return { ...frame, subscriptionId: id.id, encodedSubscriptionId: id };
}
