import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, MessageFrame } from '../lib/frame.js';
import { isThenable, type EventLog } from '../lib/replayBuffer.js';

/**
 * Gives every message frame the session's next SSE event id and records it for replay.
 *
 * On a legacy GET stream "every frame carries a per-session, strictly increasing decimal `id:`"
 * (DESIGN L7). Put this on the session's feed, before it fans out to whichever GET stream is
 * open, so that ids keep increasing across reconnects and a reconnecting client can be replayed
 * what it missed with {@link replayFrom}. Comment frames (keep-alives) pass untouched: they
 * carry no id and are never replayed.
 *
 * With a synchronous log (a {@link ReplayBuffer}) every frame passes at once. With an
 * asynchronous one (a shared log on Redis) frames still come out in the order they came in:
 * a frame waits for the ids of the frames before it; completion waits for the last one; a
 * failed append errors the stream.
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
  return (source) =>
    new Observable<Frame>((subscriber) => {
      // Frames waiting for an earlier frame's asynchronous append; empty on the synchronous path.
      let waiting: (Frame | PromiseLike<MessageFrame>)[] = [];
      let draining = false;
      let completed = false;
      const drain = () => {
        if (draining) return;
        draining = true;
        const next = () => {
          while (waiting.length > 0 && !subscriber.closed) {
            const head = waiting[0]!;
            if (isThenable(head)) {
              head.then(
                (stamped) => {
                  waiting[0] = stamped;
                  next();
                },
                (error: unknown) => subscriber.error(error),
              );
              return;
            }
            waiting.shift();
            subscriber.next(head);
          }
          draining = false;
          if (completed && waiting.length === 0) subscriber.complete();
        };
        next();
      };
      // A Subscriber of our own, chained to `subscriber`: unsubscribing closes it, which stops a
      // synchronous source, and the fast path allocates nothing per frame.
      const inner = new Subscriber<Frame>({
        next: (frame) => {
          const stamped = frame.type === 'message' ? log.append(frame) : frame;
          if (waiting.length === 0 && !isThenable(stamped)) {
            subscriber.next(stamped);
            return;
          }
          waiting.push(stamped);
          drain();
        },
        error: (error: unknown) => {
          waiting = [];
          subscriber.error(error);
        },
        complete: () => {
          completed = true;
          if (waiting.length === 0) subscriber.complete();
          else drain();
        },
      });
      subscriber.add(inner);
      subscriber.add(() => {
        waiting = [];
      });
      source.subscribe(inner);
    });
}
