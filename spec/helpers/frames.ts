import { notificationFrame, type Frame, type MessageFrame } from '../../lib/frame.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';

/** A payload-less `notifications/resources/updated` frame for `uri`, with its coalescing key. */
export const updated = (uri: string): MessageFrame =>
  notificationFrame(
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } },
    'resource',
    `notifications/resources/updated ${uri}`,
  );

/** The SSE ids of frames, `':'` standing for a comment. */
export const eventIds = (frames: readonly Frame[]): (string | undefined)[] =>
  frames.map((frame) => (frame.type === 'message' ? frame.eventId : ':'));

/**
 * An asynchronous EventLog over a ReplayBuffer (the shape of a shared log on Redis): each append
 * resolves after `delay(n)` ms for the n-th append, so later appends can resolve first.
 */
export function asyncLog(capacity: number, delay: (n: number) => number = () => 1) {
  const buffer = new ReplayBuffer(capacity);
  let n = 0;
  const later = <T>(value: T, ms: number) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
  return {
    buffer,
    append: (frame: MessageFrame) => later(buffer.append(frame), delay(n++)),
    after: (lastEventId: string | null | undefined) => later(buffer.after(lastEventId), 2),
  };
}

/** The exact text of an SSE `message` event carrying `json`. */
const sseMessage = (json: string) => `event: message\ndata: ${json}\n\n`;
const subscriptionMeta = (id: number) => `"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}`;

/** The exact text of the acknowledgment of listen `id` with the filter `{toolsListChanged: true}`. */
export const toolsAckText = (id: number) =>
  sseMessage(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},${subscriptionMeta(id)}}}`);

/** The exact text of listen `id`'s closing frames (DESIGN M7): `notifications/cancelled` with `reason`, then the listen result. */
export const closingText = (id: number, reason: string) =>
  sseMessage(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id},"reason":"${reason}",${subscriptionMeta(id)}}}`) +
  sseMessage(`{"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete",${subscriptionMeta(id)}}}`);
