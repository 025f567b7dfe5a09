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
