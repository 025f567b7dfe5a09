import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, MessageFrame } from '../lib/frame.js';
import type { EventLog } from '../lib/replayBuffer.js';
import { implementing } from '../lib/validate.js';
import { HeldFrames, type HeldFramesSink } from './heldFrames.js';
import { DisposingStage, stageOperator } from './stage.js';

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
  const checked = implementing<EventLog>('replayFrom log', log, ['append', 'after'], 'an EventLog (append, after): a ReplayBuffer or a shared log');
  return stageOperator(() => [new ReplayStage(lastEventId, checked)]);
}

/**
 * The logic of {@link replayFrom}: the log is read at the first live frame or once the source's
 * subscribe has returned, whichever comes first; the kept frames go out first, the live frames
 * held behind them (see {@link HeldFrames}), and a frame whose id was already sent is skipped
 * (no duplicate at the seam). A failed read errors the stream.
 * @internal
 */
export class ReplayStage extends DisposingStage<Frame> implements HeldFramesSink<Frame | readonly MessageFrame[]> {
  private readonly held = new HeldFrames<Frame | readonly MessageFrame[]>(this);
  private read = false;
  private newestId = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly lastEventId: string | null | undefined,
    private readonly log: EventLog,
  ) {
    super();
  }

  override opened(): void {
    this.replay();
  }

  push(frame: Frame): void {
    // Live: once the kept frames are out, a frame goes straight through.
    if (this.read && this.held.empty) return this.write(frame);
    this.replay();
    this.held.push(frame);
  }

  override end(): void {
    // A source that completes before the replay is written (or while it is) ends after it.
    this.replay();
    this.held.end();
  }

  override dispose(): void {
    this.held.stop();
  }

  /** The kept frames, read once, go first. */
  private replay(): void {
    if (this.read) return;
    this.read = true;
    this.held.push(this.log.after(this.lastEventId));
  }

  onHeld(item: Frame | readonly MessageFrame[]): void {
    if (!Array.isArray(item)) return this.write(item as Frame);
    for (let i = 0; i < item.length; i++) this.write(item[i]!);
  }

  onHeldEnd(): void {
    this.out.end();
  }

  onHeldError(error: unknown): void {
    this.fail(error);
  }

  private write(frame: Frame): void {
    if (frame.type === 'message' && frame.eventId !== undefined) {
      const id = Number(frame.eventId);
      if (id <= this.newestId) return;
      if (!Number.isNaN(id)) this.newestId = id;
    }
    this.out.push(frame);
  }
}
