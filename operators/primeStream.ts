import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame, PrimingFrame } from '../lib/frame.js';
import { isThenable, type EventLog } from '../lib/replayBuffer.js';
import { implementing, nonNegativeInteger } from '../lib/validate.js';
import { HeldFrames, type HeldFramesSink } from './heldFrames.js';
import { DisposingStage, type StageChain, stageOperator } from './stage.js';

const DECIMAL = /^[0-9]+$/;

/**
 * Opens a legacy GET stream with its priming event (an event id, `retry:` and an empty `data:`
 * line), then passes the stream's frames.
 *
 * MCP 2025-11-25 (transports): "the server SHOULD immediately send an SSE event consisting of an
 * event ID and an empty data field in order to prime the client to reconnect", and servers SHOULD
 * send `retry` so clients know when to come back. Without it, a client that has heard nothing
 * yet has no `Last-Event-ID` when its stream ends (at `maxStreamLifetime`, or a dropped
 * connection), and the changes of the reconnect window are never replayed to it. The id it is
 * primed with is the one it can safely resume from (DESIGN L7):
 * - no `Last-Event-ID`: the session's newest event id (`log.newestId()`, `'0'` before the first
 *   frame): everything after it is either live on this stream or kept for replay;
 * - a decimal `Last-Event-ID` `n`: `n` itself (the replay that follows starts after it), or the
 *   newest id when `n` is past it (an id from an earlier run of the server would otherwise make
 *   every later reconnect replay nothing);
 * - anything else (the whole log is replayed): `'0'`.
 *
 * With an asynchronous log (a shared one, on Redis) the stream's frames wait until the id is read;
 * a failed read errors the stream. A log without `newestId` primes with `retry:` alone when it
 * would need it.
 *
 * @example
 * feed$.pipe(replayFrom(lastEventId, log), primeStream(lastEventId, log, 1000), keepAlive(15_000))
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * // first bytes: 'id: 0\nretry: 1000\ndata:\n\n'
 * @param lastEventId the `Last-Event-ID` request header, as given to `replayFrom`.
 * @param log the session's event log.
 * @param retry the reconnection time sent as `retry:`, in milliseconds (a non-negative integer;
 *   the endpoint's option `reconnectDelay`, which defaults to 1000).
 * @throws InvalidOptionError when `retry` is not a non-negative integer.
 * @see replayFrom
 * @see withEventIds
 */
export function primeStream(lastEventId: string | null | undefined, log: EventLog, retry: number): MonoTypeOperatorFunction<Frame> {
  const checked = implementing<EventLog>('primeStream log', log, ['append', 'after'], 'an EventLog (append, after): a ReplayBuffer or a shared log');
  const plan = primePlan(nonNegativeInteger('primeStream retry', retry, 'milliseconds'));
  return stageOperator(() => [new PrimeStage(plan, lastEventId, checked)]);
}

/** What the priming stages of one operator, or of one endpoint's GET streams, share. @internal */
export interface PrimePlan {
  /** The `retry:` field, in milliseconds (the option `reconnectDelay`); valid by then. */
  readonly reconnectDelay: number;
}

/** The plan of {@link primeStream}. @internal */
export function primePlan(reconnectDelay: number): PrimePlan {
  return { reconnectDelay };
}

/**
 * The logic of {@link primeStream}: the priming event goes out before the source is subscribed;
 * with an asynchronous log, it and the frames after it are held (see {@link HeldFrames}) until the
 * id is read. Once its event is out on a synchronous log the stage leaves its chain: a stream that
 * stays open for hours does not pass every frame through it.
 * @internal
 */
export class PrimeStage extends DisposingStage<Frame> implements HeldFramesSink<Frame | string | undefined> {
  // Holds the id being read (a string, or undefined when the log cannot tell) before the frames.
  private held: HeldFrames<Frame | string | undefined> | undefined = undefined;
  private chain: StageChain | undefined = undefined;

  constructor(
    private readonly plan: PrimePlan,
    private readonly lastEventId: string | null | undefined,
    private readonly log: EventLog,
  ) {
    super();
  }

  override link(chain: StageChain): void {
    this.chain = chain;
  }

  override open(): void {
    const { reconnectDelay } = this.plan;
    const id = primingId(this.lastEventId, this.log);
    const chain = this.chain;
    this.chain = undefined;
    if (!isThenable(id)) {
      this.out.push(priming(id, reconnectDelay));
      chain?.leave(this);
      return;
    }
    (this.held = new HeldFrames<Frame | string | undefined>(this)).push(id);
  }

  push(frame: Frame): void {
    if (this.held !== undefined) this.held.push(frame);
    else this.out.push(frame);
  }

  override end(): void {
    if (this.held !== undefined) this.held.end();
    else this.out.end();
  }

  override dispose(): void {
    this.held?.stop();
  }

  /** The id, once read (first), then the frames held behind it. */
  onHeld(value: Frame | string | undefined): void {
    this.out.push(typeof value === 'object' ? value : priming(value, this.plan.reconnectDelay));
  }

  onHeldEnd(): void {
    this.out.end();
  }

  onHeldError(error: unknown): void {
    // The id could not be read: the stream errors.
    this.fail(error);
  }
}

/** The id a client is primed with (see {@link primeStream}); `undefined` when the log cannot tell. */
function primingId(lastEventId: string | null | undefined, log: EventLog): string | undefined | Promise<string | undefined> {
  if (lastEventId !== undefined && lastEventId !== null && !DECIMAL.test(lastEventId)) return '0';
  const newest = log.newestId?.();
  const given = lastEventId ?? undefined;
  if (isThenable(newest)) return Promise.resolve(newest).then((known) => lowest(given, known));
  return lowest(given, newest);
}

function lowest(given: string | undefined, newest: string | undefined): string | undefined {
  if (given === undefined) return newest;
  if (newest === undefined || !DECIMAL.test(newest)) return given;
  return BigInt(given) <= BigInt(newest) ? given : newest;
}

function priming(eventId: string | undefined, retry: number): PrimingFrame {
  return eventId === undefined ? { type: 'prime', retry } : { type: 'prime', eventId, retry };
}
