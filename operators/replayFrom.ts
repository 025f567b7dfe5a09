import { concatWith, ignoreElements, Observable, tap, type MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, MessageFrame } from '../lib/frame.js';
import { isThenable, type EventLog } from '../lib/replayBuffer.js';

/**
 * Writes the frames a reconnecting client missed, with their original ids, then the live
 * frames, with no gap and no duplicate between the two.
 *
 * A legacy GET stream reopened with `Last-Event-ID: n` "replays buffered frames with id > n,
 * with their original ids, before live frames" (DESIGN L7). The source is the session's live
 * feed of frames already stamped by {@link withEventIds}. The feed is subscribed first, so
 * nothing published from then on can be missed; the log is read after that (at the first live
 * frame, or once subscribing returns), so everything published before is in the replay (as
 * far as the log still holds it). The seam is then cut by id: a live message frame whose id is
 * not above the last id already written is one the client has, and is skipped. Live frames
 * that arrive while the replay is being written (a consumer that publishes synchronously) wait
 * for it. Comment frames and message frames without an id pass as they come.
 *
 * A `Last-Event-ID` at or past the newest id replays nothing and filters nothing: live frames
 * flow, even when the client's id comes from an earlier run of the server. With an asynchronous
 * log (a shared one, on Redis) live frames wait until the replay has been read and written; a
 * failed read errors the stream.
 *
 * @example
 * const log = new ReplayBuffer(100);
 * const feed$ = sessionNotifications$.pipe(withEventIds(log), share());
 * // on every GET:
 * feed$.pipe(replayFrom(req.headers['last-event-id'], log), keepAlive(15_000))
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * @param lastEventId the `Last-Event-ID` request header: `undefined` or `null` (absent) replays
 *   nothing; a decimal `n` replays the logged frames with an id above `n`; anything else
 *   replays the whole log.
 * @param log the session's event log, the same one `withEventIds` appends to.
 * @see withEventIds
 * @see ReplayBuffer
 */
export function replayFrom(lastEventId: string | null | undefined, log: EventLog): MonoTypeOperatorFunction<Frame> {
  return (source) =>
    new Observable<Frame>((subscriber) => {
      let state: 'waiting' | 'replaying' | 'live' = 'waiting';
      let held: Frame[] = [];
      let onReplayed: (() => void) | undefined;
      let newestId = -Infinity;

      const write = (frame: Frame) => {
        if (frame.type === 'message' && frame.eventId !== undefined) {
          const id = Number(frame.eventId);
          if (id <= newestId) return;
          if (!Number.isNaN(id)) newestId = id;
        }
        subscriber.next(frame);
      };

      const replay = () => {
        state = 'replaying';
        const kept = log.after(lastEventId);
        if (isThenable(kept)) kept.then(finish, (error: unknown) => subscriber.error(error));
        else finish(kept);
      };

      const finish = (kept: readonly MessageFrame[]) => {
        for (const frame of kept) {
          if (subscriber.closed) return;
          write(frame);
        }
        for (let i = 0; i < held.length && !subscriber.closed; i++) write(held[i]!);
        held = [];
        state = 'live';
        onReplayed?.();
      };

      const live = (frame: Frame) => {
        if (state === 'live') {
          write(frame);
          return;
        }
        held.push(frame);
        if (state === 'waiting') replay();
      };

      // A source that completes before the replay is written (or while it is) ends after it.
      const replayed$ = new Observable<never>((done) => {
        onReplayed = () => done.complete();
        if (state === 'live') done.complete();
        else if (state === 'waiting') replay();
      });

      // Handing `subscriber` itself to the chain lets unsubscribing stop a synchronous source.
      source.pipe(tap(live), ignoreElements(), concatWith(replayed$)).subscribe(subscriber);
      if (state === 'waiting' && !subscriber.closed) replay();
    });
}
