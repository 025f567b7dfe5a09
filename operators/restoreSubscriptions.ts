import { catchError, defer, EMPTY, from, ignoreElements, mergeMap, Observable, type MonoTypeOperatorFunction, type ObservableInput } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';

/**
 * Restores a legacy session's persisted resource subscriptions once its stream is open, a few
 * at a time, without holding the stream up.
 *
 * DESIGN L8: "On (re)open the session's persisted subscriptions are restored after the stream
 * opens, at most 8 at a time". The source (the stream) is subscribed first; then `subscribe(uri)`
 * runs for each URI with at most `concurrency` in flight, each one counting until what it
 * returned completes or errors (the values it emits are ignored: its notifications reach the
 * stream through the hub, not through here). A failing URI is reported to `onError` and the
 * others go on; deciding what a failure means for the session record is the caller's business.
 * The result emits exactly what the source emits. Restores still pending are cancelled when
 * the stream ends or is unsubscribed.
 *
 * @example
 * feed$.pipe(
 *   restoreSubscriptions(session.subscriptions, (uri) => subscribeResource(session, uri), 8,
 *     (uri, error) => log.warn({ uri, error }, 'restore failed; retried on the next open')),
 * );
 * @param uris the persisted subscription URIs; iterated once per subscription of the result.
 * @param subscribe re-establishes one URI's subscription; may return a Promise, an Observable or
 *   any other `ObservableInput`, and may throw.
 * @param concurrency the most restores in flight at once, a positive integer; defaults to 8.
 * @param onError told about each URI whose restore threw, rejected or errored; optional. If it
 *   throws, the stream errors with that error.
 * @throws InvalidOptionError when `concurrency` is not a positive integer.
 * @see replayFrom
 */
export function restoreSubscriptions<T>(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency = 8,
  onError?: (uri: string, error: unknown) => void,
): MonoTypeOperatorFunction<T> {
  if (!Number.isInteger(concurrency) || concurrency <= 0) {
    throw new InvalidOptionError('restoreSubscriptions concurrency', 'a positive integer', concurrency);
  }
  const restore$ = from(uris).pipe(
    mergeMap(
      (uri) =>
        defer(() => subscribe(uri)).pipe(
          ignoreElements(),
          catchError((error: unknown) => {
            onError?.(uri, error);
            return EMPTY;
          }),
        ),
      concurrency,
    ),
  );
  return (source) =>
    new Observable<T>((subscriber) => {
      source.subscribe(subscriber);
      if (subscriber.closed) return;
      subscriber.add(restore$.subscribe({ error: (error: unknown) => subscriber.error(error) }));
    });
}
