import { map, type MonoTypeOperatorFunction } from 'rxjs';
import type { Frame } from '../lib/frame.js';
import type { EventLog } from '../lib/replayBuffer.js';

/**
 * Gives every message frame the session's next SSE event id and records it for replay.
 *
 * On a legacy GET stream "every frame carries a per-session, strictly increasing decimal `id:`"
 * (DESIGN L7). Put this on the session's feed, before it fans out to whichever GET stream is
 * open, so that ids keep increasing across reconnects and a reconnecting client can be replayed
 * what it missed with {@link replayFrom}. Comment frames (keep-alives) pass untouched: they
 * carry no id and are never replayed.
 *
 * @example
 * const log = new ReplayBuffer(100);
 * const feed$ = sessionNotifications$.pipe(withEventIds(log), share());
 * // frames now read { …, eventId: '1' }, { …, eventId: '2' }, …
 * @param log where ids come from and frames are recorded, e.g. a {@link ReplayBuffer}.
 * @see replayFrom
 * @see ReplayBuffer
 */
export function withEventIds(log: EventLog): MonoTypeOperatorFunction<Frame> {
  return map((frame) => (frame.type === 'message' ? log.append(frame) : frame));
}
