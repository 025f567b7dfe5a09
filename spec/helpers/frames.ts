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
