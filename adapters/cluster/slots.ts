import { McpRxError } from '../../lib/errors.js';
import { type SharedSlots, type Slot, StreamSlots } from '../../lib/slots.js';
import type { WorkerLink } from './link.js';

/** Thrown by {@link ClusterSlots.tryAcquire}: a cluster's places are taken with `await slots.acquire()`. */
export class SharedSlotsError extends McpRxError {
  override readonly name = 'SharedSlotsError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_SHARED_SLOTS';

  constructor() {
    super('a cluster worker\'s stream slots are the machine\'s, counted by the primary: take one with await slots.acquire() (tryAcquire cannot wait for the primary\'s answer)');
  }
}

/**
 * The machine-wide stream slots (DESIGN M9, `maxStreams`) as one cluster worker sees them: every
 * place is counted by the primary, so the fifth stream of a machine with `maxStreams: 4` is refused
 * wherever it lands, and a stream is refused only when every worker's places are held.
 *
 * `StreamSlots.tryAcquire` is synchronous and cannot ask the primary; this pool is a
 * `SharedSlots`, whose `acquire()` the endpoint awaits before it admits a listen or opens a GET
 * stream (one IPC round trip per stream opened). `tryAcquire` throws a {@link SharedSlotsError}
 * saying so. `inUse` counts this worker's places, `capacity` the machine's.
 * @internal
 */
export class ClusterSlots extends StreamSlots implements SharedSlots {
  readonly #link: WorkerLink;
  #held = 0;
  #next = 0;

  constructor(link: WorkerLink, capacity: number) {
    super(capacity);
    this.#link = link;
  }

  /** Places this worker holds now (the machine's total is the primary's). */
  override get inUse(): number {
    return this.#held;
  }

  /** Never: the primary must be asked. @throws SharedSlotsError always. */
  override tryAcquire(): Slot | undefined {
    throw new SharedSlotsError();
  }

  /** Asks the primary for a place of the machine's pool; `undefined` when every place is held. */
  async acquire(): Promise<Slot | undefined> {
    const id = ++this.#next;
    if (!(await this.#link.call('slot', [id]))) return undefined;
    this.#held++;
    return new ClusterSlot(this, id);
  }

  /** @internal */
  give(id: number): void {
    this.#held--;
    this.#link.send({ k: 'release', slot: id });
  }
}

// One small object per held place (idle streams are many).
class ClusterSlot implements Slot {
  #pool: ClusterSlots | undefined;

  constructor(
    pool: ClusterSlots,
    private readonly id: number,
  ) {
    this.#pool = pool;
  }

  release(): void {
    const pool = this.#pool;
    if (pool === undefined) return;
    this.#pool = undefined;
    pool.give(this.id);
  }
}
