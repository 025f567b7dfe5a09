import { notificationFrame, type Frame, type MessageFrame } from '../../lib/frame.js';

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
