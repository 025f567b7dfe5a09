import { positiveInteger } from './validate.js';
import type { MessageFrame, TopicKind } from './frame.js';
import type { JsonRpcMessage } from './jsonrpc.js';

/**
 * Where a legacy session's frames get their SSE event ids and where a reconnect reads them back.
 *
 * {@link ReplayBuffer} is the in-memory implementation (synchronous); a shared log (say, on
 * Redis, so that a reconnect served by another node can replay) answers with Promises. Callers
 * keep frames in append order either way: a frame is written only after every frame appended
 * before it has its id.
 */
export interface EventLog {
  /**
   * Stamps `frame` with the next event id, records it, and returns the stamped frame: at once, or
   * as a promise (any thenable) when the log is elsewhere (Redis, a cluster's primary).
   */
  append(frame: MessageFrame): MessageFrame | PromiseLike<MessageFrame>;
  /** The recorded frames a client that last saw `lastEventId` missed, oldest first. */
  after(lastEventId: string | null | undefined): readonly MessageFrame[] | Promise<readonly MessageFrame[]>;
  /**
   * The id of the newest frame appended so far (`'0'` before the first): what a GET stream
   * without `Last-Event-ID` primes its client with, so that the client can resume from there.
   * Optional for custom logs; without it such a stream primes with `retry:` only.
   */
  newestId?(): string | Promise<string>;
}

/**
 * A frame read back from a log kept outside this process (Redis, a cluster's primary), as a legacy
 * GET stream replays it: its id, and its JSON as it was written the first time (`encoded.plain`),
 * so that it is written byte for byte again; its topic and coalescing key when it had them.
 * @throws SyntaxError when `plain` is not JSON.
 * @internal
 */
export function loggedFrame(eventId: string, plain: string, topic: TopicKind | null, coalesceKey: string | null): MessageFrame {
  const frame: MessageFrame = {
    type: 'message',
    message: JSON.parse(plain) as JsonRpcMessage,
    priority: 'notification',
    ...(topic === null ? {} : { topic }),
    ...(coalesceKey === null ? {} : { coalesceKey }),
    encoded: Object.freeze({ plain, head: '', tail: '' }),
    eventId,
  };
  return Object.freeze(frame);
}

/** True for a Promise or any other thenable (what an asynchronous {@link EventLog} returns). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

const DECIMAL = /^[0-9]+$/;

/**
 * A legacy session's event-id sequence and a ring of its last `capacity` stamped frames (DESIGN L7).
 *
 * Every message frame on a legacy GET stream carries a per-session, strictly increasing decimal
 * `id:` (1, 2, 3, …). The buffer remembers the most recent frames so that a client reconnecting
 * with `Last-Event-ID: n` gets the ones with an id above `n`, with their original ids, before
 * live frames resume. A non-numeric `Last-Event-ID` replays the whole buffer; one that is at or
 * past the newest id replays nothing; one older than the oldest kept frame replays all that is
 * kept (the older frames are gone). Memory is bounded by `capacity` frames: the ring holds the
 * frames as they were appended (a hub notification is one object shared by every session) and
 * stamps them again when they are replayed, so a full buffer costs a slot per frame, not a copy.
 *
 * @example
 * const log = new ReplayBuffer(100);
 * log.append(notificationFrame(updated)).eventId; // '1'
 * log.append(notificationFrame(updated)).eventId; // '2'
 * log.after('1').map((frame) => frame.eventId);   // ['2']
 * @see withEventIds
 * @see replayFrom
 */
export class ReplayBuffer implements EventLog {
  /** How many of the most recent frames are kept. */
  readonly capacity: number;
  // The frames as appended (not the stamped copies: those are the stream's, and short-lived); their
  // ids follow from their places. Made at the first frame (an idle session costs no array), grows
  // as frames come, then wraps around at `capacity`.
  private ring: MessageFrame[] | undefined = undefined;
  private last = 0;

  /**
   * @param capacity how many of the most recent frames are kept for replay, a positive integer
   *   count; defaults to 100 (the option `replayBufferSize`).
   * @throws InvalidOptionError when `capacity` is not a positive integer.
   */
  constructor(capacity = 100) {
    this.capacity = positiveInteger('replayBufferSize', capacity, 'frames');
  }

  /** The id of the newest frame; 0 before the first. */
  get lastId(): number {
    return this.last;
  }

  /** {@link lastId} as a decimal string (`'0'` before the first frame). */
  newestId(): string {
    return String(this.last);
  }

  /** How many frames are kept (at most `capacity`). */
  get size(): number {
    return Math.min(this.last, this.capacity);
  }

  /**
   * Stamps `frame` with the next event id, keeps it (forgetting the oldest when full) and returns it.
   *
   * @param frame the frame to stamp; not modified (the stamped frame is a copy). An `eventId` it
   *   already has is replaced.
   * @returns the stamped frame, to be written to the stream.
   */
  append(frame: MessageFrame): MessageFrame {
    const id = ++this.last;
    (this.ring ??= [])[(id - 1) % this.capacity] = frame;
    return stamp(frame, String(id));
  }

  /**
   * The kept frames a client that last saw `lastEventId` has missed, oldest first.
   *
   * @param lastEventId the `Last-Event-ID` request header: `undefined` or `null` (absent) → none;
   *   a decimal `n` → the kept frames with an id above `n`; anything else → every kept frame.
   */
  after(lastEventId: string | null | undefined): MessageFrame[] {
    const ring = this.ring;
    if (lastEventId === undefined || lastEventId === null || ring === undefined) return [];
    const oldest = this.last - this.size + 1;
    const first = DECIMAL.test(lastEventId) ? Math.max(Number(lastEventId) + 1, oldest) : oldest;
    const frames: MessageFrame[] = [];
    for (let id = first; id <= this.last; id++) frames.push(stamp(ring[(id - 1) % this.capacity]!, String(id)));
    return frames;
  }
}

/**
 * `frame` with `eventId` set. A hub notification (pre-encoded, untagged) has exactly the members
 * below: a literal of that one shape is several times faster per frame than a spread (and than
 * every frame written after it: the encoder then reads one shape of frame), and gives the same
 * object. Anything else is spread. What every event log stamps its frames with.
 * @internal
 */
export function stamp(frame: MessageFrame, eventId: string): MessageFrame {
  if (
    frame.encoded !== undefined &&
    frame.priority === 'notification' &&
    frame.subscriptionId === undefined &&
    frame.closeReason === undefined &&
    frame.eventId === undefined
  ) {
    return {
      type: 'message',
      message: frame.message,
      priority: 'notification',
      topic: frame.topic,
      coalesceKey: frame.coalesceKey,
      encoded: frame.encoded,
      eventId,
    };
  }
  return { ...frame, eventId };
}
