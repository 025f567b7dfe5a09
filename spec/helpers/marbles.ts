import { deepStrictEqual } from 'node:assert';
import { TestScheduler } from 'rxjs/testing';

/**
 * A fresh TestScheduler per test, comparing with node:assert's deepStrictEqual
 * (uvu's `equal` would treat `Error('a')` and `Error('b')` as equal).
 */
export function testScheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => deepStrictEqual(actual, expected));
}
