import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame } from '../lib/frame.js';
import { isThenable, type EventLog } from '../lib/replayBuffer.js';
import { implementing } from '../lib/validate.js';
import { HeldFrames, type HeldFramesSink } from './heldFrames.js';
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
  const checked = implementing<EventLog>('withEventIds log', log, ['append', 'after'], 'an EventLog (append, after): a ReplayBuffer or a shared log');
  return stageOperator(() => [new EventIdStage(checked)]);
}

/**
 * The logic of {@link withEventIds} for one frame: stamps it with the log's next event id and hands
 * it to `sink` in order. With a synchronous log it goes at once; with an asynchronous one, or while
 * earlier frames wait for theirs, it waits in `held` (made here the first time, and returned for
 * the caller to keep). A stage runs it for its frames; a legacy session for its feed, which
 * outlives its streams. @internal
 */
export function stampInOrder(
  log: Pick<EventLog, 'append'>,
  frame: Frame,
  held: HeldFrames<Frame> | undefined,
  sink: HeldFramesSink<Frame>,
): HeldFrames<Frame> | undefined {
  const stamped = frame.type === 'message' ? log.append(frame) : frame;
  if ((held === undefined || held.empty) && !isThenable(stamped)) {
    sink.onHeld(stamped);
    return held;
  }
  (held ??= new HeldFrames(sink)).push(stamped);
  return held;
}

/**
 * The stage of {@link withEventIds} (see {@link stampInOrder}). A failed append errors the stream.
 * @internal
 */
export class EventIdStage extends Stage<Frame> implements HeldFramesSink<Frame> {
  // Made at the first asynchronous append; a synchronous log never needs it.
  private held: HeldFrames<Frame> | undefined = undefined;
  private stopped = false;

  constructor(private readonly log: EventLog) {
    super();
  }

  push(frame: Frame): void {
    if (this.stopped) return;
    this.held = stampInOrder(this.log, frame, this.held, this);
  }

  override end(): void {
    if (this.stopped) return;
    if (this.held === undefined) this.out.end();
    else this.held.end();
  }

  override fail(error: unknown): void {
    if (this.stopped) return;
    this.dispose();
    this.out.fail(error);
  }

  override dispose(): void {
    this.stopped = true;
    this.held?.stop();
  }

  onHeld(frame: Frame): void {
    this.out.push(frame);
  }

  onHeldEnd(): void {
    this.out.end();
  }

  onHeldError(error: unknown): void {
    this.fail(error);
  }
}
