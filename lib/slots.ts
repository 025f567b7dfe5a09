import { positiveInteger } from './validate.js';

/** One held place in a {@link StreamSlots} pool. `release()` is idempotent. */
export interface Slot {
  release(): void;
}

/**
 * A {@link StreamSlots} pool that other processes share (the workers of one machine, see
 * `mcp-rx-streams/cluster`): whoever counts its places for all of them must be asked, so a place
 * is taken asynchronously. The endpoint awaits `acquire()` for such a pool where it would call
 * `tryAcquire()`, before the stream is admitted: the cap holds across the processes, and a client
 * is refused (503) only when every place of every process is taken.
 */
export interface SharedSlots {
  /** Takes a place of the shared pool, or resolves `undefined` when all are held. */
  acquire(): Promise<Slot | undefined>;
}

/** True when `slots` is shared with other processes ({@link SharedSlots}): its places are taken with `acquire()`. @internal */
export function isShared(slots: StreamSlots): slots is StreamSlots & SharedSlots {
  return typeof (slots as Partial<SharedSlots>).acquire === 'function';
}

/**
 * The server-wide pool of long-lived streams (DESIGN M9, default 1000 places).
 *
 * Listen streams take a slot before they open and give it back when they end, whatever the
 * reason. The pool is public so that other long-lived responses of the same server (streamed
 * `tools/call` results) share the cap: a full server answers 503 instead of falling over.
 *
 * @example
 * const slots = new StreamSlots(1000);
 * const slot = slots.tryAcquire();
 * if (slot === undefined) return respond503();
 * stream.subscribe({ complete: () => slot.release() });
 * @param capacity how many slots exist; a positive integer; defaults to 1000.
 * @throws InvalidOptionError naming `maxStreams` (the endpoint option it stands for) when `capacity` is not a positive integer.
 */
export class StreamSlots {
  readonly capacity: number;
  // Shared with the held slots, which give their place back through it.
  readonly #count: Count = { inUse: 0 };

  constructor(capacity = 1000) {
    this.capacity = positiveInteger('maxStreams', capacity);
  }

  /** How many slots are held now. */
  get inUse(): number {
    return this.#count.inUse;
  }

  /** Takes a slot, or returns `undefined` when all are held. */
  tryAcquire(): Slot | undefined {
    if (this.#count.inUse >= this.capacity) return undefined;
    this.#count.inUse++;
    return new HeldSlot(this.#count);
  }
}

interface Count {
  inUse: number;
}

// One small object per held slot (idle streams are many): no closure and its context.
class HeldSlot implements Slot {
  #count: Count | undefined;

  constructor(count: Count) {
    this.#count = count;
  }

  release(): void {
    const count = this.#count;
    if (count === undefined) return;
    this.#count = undefined;
    count.inUse--;
  }
}
