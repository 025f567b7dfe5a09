import type { MessageFrame } from '../../lib/frame.js';
import { Pending } from '../../lib/pending.js';
import { type EventLog, loggedFrame, stamp } from '../../lib/replayBuffer.js';
import { toWire } from './frames.js';
import type { WorkerLink } from './link.js';
import type { WireFrame } from './protocol.js';

/** A frame waiting for its id: settled with the stamped frame when the batch's reply comes. */
class PendingAppend extends Pending<MessageFrame> {
  constructor(readonly frame: MessageFrame) {
    super();
  }
}

/**
 * The appends of one synchronous run, sent as one request: each distinct frame once (a hub
 * notification is one object for every session that hears it), then (session, frame) pairs.
 */
class AppendBatch {
  readonly frames: WireFrame[] = [];
  readonly appends: (string | number)[] = [];
  readonly pending: PendingAppend[] = [];
  readonly #index = new Map<MessageFrame, number>();

  /** `batch`: the outgoing batch its request travels in; it takes appends until that is sent. */
  constructor(readonly batch: number) {}

  /** Set once its request failed: later appends fail at once. */
  failure: { readonly error: unknown } | undefined = undefined;

  add(sessionId: string, append: PendingAppend): void {
    if (this.failure !== undefined) return void append.reject(this.failure.error);
    let at = this.#index.get(append.frame);
    if (at === undefined) {
      at = this.frames.push(toWire(append.frame)) - 1;
      this.#index.set(append.frame, at);
    }
    this.appends.push(sessionId, at);
    this.pending.push(append);
  }
}

/**
 * The event logs of a cluster worker's legacy sessions (DESIGN L7 across the workers): ids and
 * replay buffers live in the primary, so that a GET that reconnects on another worker with
 * `Last-Event-ID` is replayed exactly what its client missed, and a worker's death loses none of it.
 *
 * An append is answered asynchronously (the endpoint keeps a session's frames in order while they
 * wait, as for a Redis log): the appends of one synchronous run (one hub publish to every session
 * of this worker) travel as one request, each distinct frame once, and come back as one list of
 * ids. A frame is written to its stream only once the primary has logged it, so a client never
 * holds an id the log has not. Each append is a {@link Pending}, not a Promise: the reply's one
 * continuation hands every session its stamped frame in a loop, in append order.
 * @internal
 */
export class ClusterEventLogs {
  #batch: AppendBatch | undefined = undefined;

  constructor(
    private readonly link: WorkerLink,
    private readonly newestId: boolean,
  ) {}

  /** The log of session `sessionId`. */
  of(sessionId: string): EventLog {
    const log: EventLog = {
      append: (frame) => this.#append(sessionId, frame),
      after: (lastEventId) => this.#after(sessionId, lastEventId),
    };
    if (this.newestId) log.newestId = () => this.link.call('log.newest', [sessionId]);
    return log;
  }

  #append(sessionId: string, frame: MessageFrame): Pending<MessageFrame> {
    const append = new PendingAppend(frame);
    let batch = this.#batch;
    // The request is queued at the first append, in order with everything else this worker
    // sends, and grows with the appends that follow until its batch goes out.
    if (batch === undefined || batch.batch !== this.link.batch) batch = this.#batch = this.#request();
    batch.add(sessionId, append);
    return append;
  }

  #request(): AppendBatch {
    const batch = new AppendBatch(this.link.batch);
    this.link.call('log.append', [batch.frames, batch.appends]).then(
      (ids) => {
        const { pending } = batch;
        for (let i = 0; i < pending.length; i++) pending[i]!.resolve(stamp(pending[i]!.frame, ids[i]!));
      },
      (error: unknown) => {
        batch.failure = { error };
        for (const append of batch.pending) append.reject(error);
      },
    );
    return batch;
  }

  async #after(sessionId: string, lastEventId: string | null | undefined): Promise<readonly MessageFrame[]> {
    if (lastEventId === undefined || lastEventId === null) return [];
    return (await this.link.call('log.after', [sessionId, lastEventId])).map(([eventId, plain, topic, key]) => loggedFrame(eventId, plain, topic, key));
  }
}
