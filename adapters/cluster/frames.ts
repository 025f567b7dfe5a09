// Message frames as they travel between a worker and the primary's event logs: their JSON as it was
// written the first time, their topic and coalescing key; nothing else a logged frame needs.
import { encodeMessage } from '../../lib/encode.js';
import type { EncodedMessage, MessageFrame, TopicKind } from '../../lib/frame.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import type { LoggedFrame, WireFrame } from './protocol.js';

/** `frame` on the wire. @internal */
export function toWire(frame: MessageFrame): WireFrame {
  return [(frame.encoded ?? encodeMessage(frame.message)).plain, frame.topic ?? null, frame.coalesceKey ?? null];
}

/** A logged frame on the wire (its id first). @internal */
export function toLogged(frame: MessageFrame): LoggedFrame {
  const [plain, topic, coalesceKey] = toWire(frame);
  return [frame.eventId ?? '', plain, topic, coalesceKey];
}

/**
 * A frame relayed to the primary's event logs: its message is parsed only if a log reads it (the
 * in-memory log copies it into the stamped frame it returns; a Redis log never does), once for
 * every session that logs it.
 * @internal
 */
export class RelayedFrame implements MessageFrame {
  readonly type = 'message';
  readonly priority = 'notification';
  readonly topic: TopicKind | undefined;
  readonly coalesceKey: string | undefined;
  readonly encoded: EncodedMessage;
  #message: JsonRpcMessage | undefined = undefined;

  constructor([plain, topic, coalesceKey]: WireFrame) {
    this.topic = topic ?? undefined;
    this.coalesceKey = coalesceKey ?? undefined;
    this.encoded = { plain, head: '', tail: '' };
  }

  get message(): JsonRpcMessage {
    return (this.#message ??= JSON.parse(this.encoded.plain) as JsonRpcMessage);
  }
}
