import { Observable, type SchedulerLike } from 'rxjs';
import type { Frame } from './frame.js';

/** The stream closed but its client did not take the closing frames within the grace period. */
export class StalledStreamError extends Error {
  override readonly name = 'StalledStreamError';
  readonly code = 'ERR_MCP_RX_STALLED';
  constructor(readonly info: { readonly graceMs: number }) {
    super(`the client took no closing frame within ${info.graceMs} ms of the close; drop the connection`);
  }
}

/**
 * Errors the stream with {@link StalledStreamError} when it has not completed `graceMs`
 * milliseconds after `closing$` first emits: a closed stream whose client never reads would
 * otherwise hold its slot forever, waiting to write its last frames. The adapter drops the
 * connection on that error.
 * @internal
 */
export function failWhenStalled(closing$: Observable<unknown>, graceMs: number, scheduler: SchedulerLike) {
  return (source: Observable<Frame>) =>
    new Observable<Frame>((subscriber) => {
      // One scheduled action from the first close on, rather than a take/switchMap/timer chain.
      let armed = false;
      subscriber.add(
        closing$.subscribe(() => {
          if (armed) return;
          armed = true;
          subscriber.add(scheduler.schedule(() => subscriber.error(new StalledStreamError({ graceMs })), graceMs));
        }),
      );
      source.subscribe(subscriber);
    });
}
