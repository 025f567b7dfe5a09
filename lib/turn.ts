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
 * Remembers the coalesce keys of the notifications one receiver has taken in the current turn: a
 * second identical one in the same turn is the same information (the receiver cannot have acted
 * on the first in between), so it can be collapsed into the first. Holds one key without a set.
 * @internal
 */
export class TurnKeys {
  private turn = -1;
  private first: string | undefined;
  private more: Set<string> | undefined;

  /** True when `key` was already taken this turn; else records it and returns false. */
  seen(key: string): boolean {
    const now = currentTurn();
    if (now !== this.turn) {
      this.turn = now;
      this.first = key;
      this.more?.clear();
      return false;
    }
    if (key === this.first || this.more?.has(key) === true) return true;
    if (this.first === undefined) this.first = key;
    else (this.more ??= new Set()).add(key);
    return false;
  }
}
