import { catchError, defer, EMPTY, from, ignoreElements, mergeMap, type MonoTypeOperatorFunction, type ObservableInput, type Subscription } from 'rxjs';
import { BareSubscriber, type SubscriptionReceiver } from '../lib/subscribers.js';
import { callback, positiveInteger } from '../lib/validate.js';
import { DisposingStage, stageOperator } from './stage.js';

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
 * @throws InvalidOptionError when `concurrency` is not a positive integer, or `subscribe` or `onError` not a function.
 * @see replayFrom
 */
export function restoreSubscriptions<T>(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency = 8,
  onError?: (uri: string, error: unknown) => void,
): MonoTypeOperatorFunction<T> {
  const plan = restorePlan(
    uris,
    callback<(uri: string) => ObservableInput<unknown>>('restoreSubscriptions subscribe', subscribe),
    positiveInteger('restoreSubscriptions concurrency', concurrency),
    onError === undefined ? undefined : callback<(uri: string, error: unknown) => void>('restoreSubscriptions onError', onError),
  );
  return stageOperator(() => [new RestoreStage<T>(plan)]);
}

/** What the restores of {@link restoreSubscriptions} are made of, validated. @internal */
export interface RestorePlan {
  readonly uris: Iterable<string>;
  readonly subscribe: (uri: string) => ObservableInput<unknown>;
  readonly concurrency: number;
  readonly onError: ((uri: string, error: unknown) => void) | undefined;
}

/** The plan of {@link restoreSubscriptions}, from valid arguments. @internal */
export function restorePlan(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency: number,
  onError: ((uri: string, error: unknown) => void) | undefined,
): RestorePlan {
  return { uris, subscribe, concurrency, onError };
}

/**
 * The logic of {@link restoreSubscriptions}: the restores start once the source is subscribed
 * and stop with the stream. Nothing of them is held once they are all done (a stream lives for
 * an hour; its restores take a moment).
 * @internal
 */
export class RestoreStage<T> extends DisposingStage<T> implements SubscriptionReceiver<never, undefined> {
  private restoring: Subscription | undefined;

  constructor(private readonly plan: RestorePlan) {
    super();
  }

  override opened(): void {
    const { uris, subscribe, concurrency, onError } = this.plan;
    const restoring = from(uris)
      .pipe(
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
      )
      .subscribe(new BareSubscriber<never>(this, undefined));
    // Done at once (nothing to restore, or all synchronous): nothing to hold.
    if (!restoring.closed) this.restoring = restoring;
  }

  onValue(): void {}

  /** `onError` threw: the stream errors with that error. */
  onError(error: unknown): void {
    this.restoring = undefined;
    this.fail(error);
  }

  /** Every restore is done. */
  onComplete(): void {
    this.restoring = undefined;
  }

  push(value: T): void {
    this.out.push(value);
  }

  override dispose(): void {
    const restoring = this.restoring;
    this.restoring = undefined;
    restoring?.unsubscribe();
  }
}
