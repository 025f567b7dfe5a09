// What "in the same turn" means for the library: which turn it is now (a storm of identical
// notifications is collapsed within one), and the batch that collects during a turn and is handed
// over once at its end (a writer's burst becomes one write).

/**
 * The current event-loop turn, as a number that changes once the synchronous code that is running
 * (and the microtasks it queued before the first call) is done: what "in the same turn" means for
 * collapsing a storm of identical notifications. One microtask per turn in which it is asked,
 * whoever asks; nothing is scheduled in a turn that does not ask.
 * @internal
 */
let turn = 0;
let scheduled = false;

function nextTurn(): void {
  turn++;
  scheduled = false;
}

/** The number of the current turn (see above). @internal */
export function currentTurn(): number {
  if (!scheduled) {
    scheduled = true;
    queueMicrotask(nextTurn);
  }
  return turn;
}

/**
 * Items collected during one turn and handed over together when it ends: how a burst becomes one
 * write (one HTTP chunk per stream, one IPC message per port) instead of one write per item.
 *
 * The first `add` of a turn asks `schedule` for one callback; every item added until it runs goes
 * to `deliver` in one array, in the order added (duplicates kept), the array then being
 * `deliver`'s own. `flush()` hands the items over earlier (a batch grown large, a port closing);
 * what is added after it goes out with the callback already asked for: a turn asks for one
 * callback at most, and a turn that adds nothing asks for none.
 *
 * Precondition: `deliver` does not throw. It runs in `schedule`'s callback, where a throw is an
 * uncaught exception: catch inside it, and report or fail what failed.
 *
 * @example
 * const lines = new TurnBatch<string>((batch) => socket.write(batch.join('')));
 * lines.add('a\n');
 * lines.add('b\n'); // one socket.write('a\nb\n'), once the code running now (and the microtasks it queued) is done
 * @param deliver takes a batch (never empty).
 * @param schedule runs its callback at the end of the turn: `queueMicrotask` by default (after
 *   the synchronous code and the microtasks queued before it); node:http's writer passes
 *   `process.nextTick` (before the promise callbacks of the turn).
 * @internal
 */
export class TurnBatch<T> {
  #items: T[] | undefined = undefined;
  #scheduled = false;
  #delivered = 0;
  readonly #run = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  constructor(
    private readonly deliver: (items: T[]) => void,
    private readonly schedule: (callback: () => void) => void = queueMicrotask,
  ) {}

  add(item: T): void {
    const items = this.#items;
    if (items === undefined) this.#items = [item];
    else items.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      const schedule = this.schedule;
      schedule(this.#run);
    }
  }

  /**
   * How many batches went to `deliver` so far: an item added now goes out in the batch that makes
   * it one more, and may be changed (an array in it grown) until the count changes.
   */
  get delivered(): number {
    return this.#delivered;
  }

  /** Hands what is collected now to `deliver` (nothing when nothing is). */
  flush(): void {
    const items = this.#items;
    if (items === undefined) return;
    this.#items = undefined;
    this.#delivered++;
    this.deliver(items);
  }
}
