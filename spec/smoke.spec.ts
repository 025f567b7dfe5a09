import { test } from 'uvu';
import { map } from 'rxjs';
import { testScheduler } from './helpers/marbles.js';

test('marble harness runs in virtual time', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    expectObservable(cold('-a-b|').pipe(map((x) => x.toUpperCase()))).toBe('-A-B|', { A: 'A', B: 'B' });
  });
});

test.run();
