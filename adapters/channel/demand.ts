import { Broadcast } from '../../lib/broadcast.js';

/**
 * The demand of one message channel, shared fairly by the streams on it.
 *
 * A channel has one backpressure signal (its `send` said `false`, then its `drain$`), and every
 * stream on it (its listens, its legacy feed) keeps its own bounded queue
 * (`dropWhenQueueExceeds`): when the channel is busy, every stream is told so and holds its
 * notifications (coalescing, dropping past its bounds); when it drains, the streams are told one at
 * a time, each writing what it holds until the channel is busy again. The stream told first turns
 * with each drain, so a stream with a long backlog cannot keep the others waiting drain after
 * drain. A channel holds few streams (its principal's listen cap, one legacy feed), so the
 * round is a short loop.
 * @internal
 */
export class ChannelDemand {
  #ready = true;
  readonly #streams: Broadcast<boolean>[] = [];
  /** Which stream is told first at the next drain. */
  #turn = 0;

  /** Whether the channel can take more now. */
  get ready(): boolean {
    return this.#ready;
  }

  /**
   * The demand of one more stream: a `Broadcast` its queue stage attaches to. Starts ready; a
   * stream that opens while the channel is busy is told so by {@link started} once subscribed.
   */
  add(): Broadcast<boolean> {
    const demand = new Broadcast<boolean>();
    this.#streams.push(demand);
    return demand;
  }

  /** The stream of `demand` is subscribed: told the channel is busy if it is. */
  started(demand: Broadcast<boolean>): void {
    if (!this.#ready) demand.next(false);
  }

  /** The stream of `demand` has ended. */
  remove(demand: Broadcast<boolean>): void {
    const at = this.#streams.indexOf(demand);
    if (at >= 0) this.#streams.splice(at, 1);
    demand.complete();
  }

  /** The channel's `send` said `false`: every stream holds what comes from now on. */
  busy(): void {
    if (!this.#ready) return;
    this.#ready = false;
    for (const demand of this.#streams.slice()) demand.next(false);
  }

  /** The channel drained: the streams write what they hold, in turn, until it is busy again. */
  drained(): void {
    if (this.#ready) return;
    this.#ready = true;
    const streams = this.#streams.slice();
    const count = streams.length;
    if (count === 0) return;
    const first = this.#turn % count;
    let told = 0;
    while (told < count && this.#ready) streams[(first + told++) % count]!.next(true);
    // All told: the next drain starts one further. Busy again: the streams not told stay busy, and
    // the channel's next drain tells them first.
    this.#turn = this.#ready ? first + 1 : first + told;
  }
}
