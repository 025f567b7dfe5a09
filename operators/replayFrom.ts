import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, MessageFrame } from '../lib/frame.js';
import { type EventLog, isThenable } from '../lib/replayBuffer.js';
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

/** A frame's event id as a number (the priming event's too); `undefined` for a comment or a frame without a decimal id. */
function idOf(frame: Frame): number | undefined {
  const id = frame.type === 'comment' ? undefined : frame.eventId;
  if (id === undefined || id === '') return undefined;
  // Every frame of a shared log passes here: a number check, not a pattern (ids are decimal strings).
  const n = Number(id);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * The seam of {@link replayFrom} kept for the whole life of a legacy GET stream whose session's log
 * other nodes append to as well (a fleet's log on Redis, a machine's in its primary): ids on the
 * stream stay gapless across a move of the session between nodes.
 *
 * The ids of one log are consecutive (`ReplayBuffer`, `redisEventLogs` and a cluster's logs all
 * count by one). A node that still held the session's subscriptions when its client reconnected
 * elsewhere (its grace period, until it hears the new node's claim) logs a change under ids the new
 * stream never sees live. So, placed after the priming event (the id the client resumes from), the
 * stage follows the last id written, and a frame whose id skips some holds the stream while it
 * reads the skipped ones from the log (`after(last)`) and writes them first, in order; then the
 * frame. A frame whose id was written already is skipped. Ids the log no longer holds (trimmed to
 * its capacity, or a failed read) cannot be written: `onLost` is told once per gap (the endpoint
 * then sends the session the re-read signal, with new ids, after them), and the stream goes on.
 *
 * Without a priming event (a revision before 2025-11-25) the first frame's id is where it starts.
 * Comment frames pass as they come, unless a read is under way (then they wait behind it).
 * @internal
 */
export class GapStage extends DisposingStage<Frame> {
  /** The id last written: the priming event's or a frame's; -1 before either. */
  private last = -1;
  /** A read of skipped ids is under way: frames wait in `waiting`, in order. */
  private reading = false;
  private ending = false;
  private stopped = false;
  private waiting: Frame[] = [];

  constructor(
    private readonly log: EventLog,
    private readonly onLost: () => void,
  ) {
    super();
  }

  push(frame: Frame): void {
    if (this.reading) this.waiting.push(frame);
    else this.pass(frame);
  }

  override end(): void {
    if (this.reading) this.ending = true;
    else super.end();
  }

  override dispose(): void {
    this.stopped = true;
    this.waiting = [];
  }

  private pass(frame: Frame): void {
    const id = idOf(frame);
    if (id === undefined) return this.out.push(frame);
    if (frame.type === 'prime' || this.last < 0) {
      this.last = id;
      return this.out.push(frame);
    }
    if (id <= this.last) return;
    if (id === this.last + 1) {
      this.last = id;
      return this.out.push(frame);
    }
    // Skipped ids: read them first; this frame waits at the head of the line.
    this.reading = true;
    this.waiting.unshift(frame);
    this.read(this.last, id);
  }

  private read(after: number, before: number): void {
    let frames: readonly MessageFrame[] | PromiseLike<readonly MessageFrame[]>;
    try {
      frames = this.log.after(String(after));
    } catch {
      return this.filled([], before);
    }
    if (!isThenable(frames)) return this.filled(frames, before);
    frames.then(
      (read) => this.filled(read, before),
      () => this.filled([], before),
    );
  }

  /** The log's frames after the last id written: those before `before` go out in order; a hole among them is lost. */
  private filled(frames: readonly MessageFrame[], before: number): void {
    if (this.stopped) return;
    let lost = false;
    for (const frame of frames) {
      const id = idOf(frame);
      if (id === undefined || id <= this.last || id >= before) continue;
      if (id !== this.last + 1) lost = true;
      this.last = id;
      this.out.push(frame);
    }
    if (this.last < before - 1) {
      lost = true;
      this.last = before - 1;
    }
    // Told while the frame that found the gap still waits: what it sends at once comes after it.
    if (lost) this.onLost();
    this.reading = false;
    while (!this.reading && !this.stopped && this.waiting.length > 0) this.pass(this.waiting.shift()!);
    if (!this.reading && this.ending && !this.stopped) super.end();
  }
}
