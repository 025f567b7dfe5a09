import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, MessageFrame } from '../lib/frame.js';
import { isThenable, type EventLog } from '../lib/replayBuffer.js';
import { Stage, stageOperator } from './stage.js';

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
  return stageOperator(() => [new EventIdStage(log)]);
}

/**
 * The logic of {@link withEventIds}: with a synchronous log every frame passes at once; with an
 * asynchronous one, frames wait in order for the ids of the frames before them.
 * @internal
 */
export class EventIdStage extends Stage<Frame> {
  // Frames waiting for an earlier frame's asynchronous append; empty on the synchronous path.
  private waiting: (Frame | PromiseLike<MessageFrame>)[] | undefined;
  private draining = false;
  private completed = false;
  private stopped = false;

  /**
   * @param log where ids come from and frames are recorded.
   * @param onAppendError when given, a frame whose asynchronous append failed is reported to it
   *   and skipped, and the frames after it go on (a legacy session's feed, which outlives its
   *   streams); without it the failure errors the stream.
   */
  constructor(
    private readonly log: EventLog,
    private readonly onAppendError?: (error: unknown) => void,
  ) {
    super();
  }

  push(frame: Frame): void {
    if (this.stopped) return;
    const stamped = frame.type === 'message' ? this.log.append(frame) : frame;
    if ((this.waiting === undefined || this.waiting.length === 0) && !isThenable(stamped)) {
      this.out.push(stamped);
      return;
    }
    (this.waiting ??= []).push(stamped);
    this.drain();
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    const waiting = this.waiting!;
    while (waiting.length > 0 && !this.stopped) {
      const head = waiting[0]!;
      if (isThenable(head)) {
        head.then(
          (stamped) => {
            if (this.stopped) return;
            waiting[0] = stamped;
            this.draining = false;
            this.drain();
          },
          (error: unknown) => {
            if (this.stopped) return;
            if (this.onAppendError === undefined) return this.fail(error);
            this.onAppendError(error);
            waiting.shift();
            this.draining = false;
            this.drain();
          },
        );
        return;
      }
      waiting.shift();
      this.out.push(head);
    }
    this.draining = false;
    if (this.completed && waiting.length === 0 && !this.stopped) this.out.end();
  }

  override end(): void {
    if (this.stopped) return;
    this.completed = true;
    if (this.waiting === undefined || this.waiting.length === 0) this.out.end();
    else this.drain();
  }

  override fail(error: unknown): void {
    if (this.stopped) return;
    this.dispose();
    this.out.fail(error);
  }

  override dispose(): void {
    this.stopped = true;
    this.waiting = undefined;
  }
}
