import { catchError, defer, EMPTY, from, ignoreElements, mergeMap, type MonoTypeOperatorFunction, type Observable, type ObservableInput, type Subscription } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';
import { Stage, stageOperator } from './stage.js';

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
  const restore$ = restoreObservable(uris, subscribe, concurrency, onError);
  return stageOperator(() => [new RestoreStage<T>(restore$)]);
}

/**
 * The logic of {@link restoreSubscriptions}: the restores start once the source is subscribed
 * and stop with the stream.
 * @internal
 */
export class RestoreStage<T> extends Stage<T> {
  private restoring: Subscription | undefined;

  constructor(private readonly restore$: Observable<never>) {
    super();
  }

  override opened(): void {
    this.restoring = this.restore$.subscribe({ error: (error: unknown) => this.fail(error) });
  }

  push(value: T): void {
    this.out.push(value);
  }

  override end(): void {
    this.dispose();
    this.out.end();
  }

  override fail(error: unknown): void {
    this.dispose();
    this.out.fail(error);
  }

  override dispose(): void {
    this.restoring?.unsubscribe();
    this.restoring = undefined;
  }
}

/** The restores of {@link restoreSubscriptions} as one Observable, validated. @internal */
export function restoreObservable(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency = 8,
  onError?: (uri: string, error: unknown) => void,
): Observable<never> {
  if (!Number.isInteger(concurrency) || concurrency <= 0) {
    throw new InvalidOptionError('restoreSubscriptions concurrency', 'a positive integer', concurrency);
  }
  return from(uris).pipe(
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
}
