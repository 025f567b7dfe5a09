import { Observable } from 'rxjs';

/**
 * A source that emits synchronously in a loop for as long as its subscriber is open (up to
 * `bound` values): the probe for "stops a synchronous source when unsubscribed".
 *
 * @param value the i-th value, counting from 0.
 */
export function endlessSyncSource<T>(value: (i: number) => T, bound = 100_000): { source: Observable<T>; emitted: () => number } {
  let emitted = 0;
  const source = new Observable<T>((subscriber) => {
    for (let i = 0; i < bound && !subscriber.closed; i++) {
      emitted++;
      subscriber.next(value(i));
    }
  });
  return { source, emitted: () => emitted };
}
