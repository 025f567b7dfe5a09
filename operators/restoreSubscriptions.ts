import { catchError, defer, EMPTY, from, ignoreElements, mergeMap, type MonoTypeOperatorFunction, type ObservableInput, Subscriber } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';
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
 * @throws InvalidOptionError when `concurrency` is not a positive integer.
 * @see replayFrom
 */
export function restoreSubscriptions<T>(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency = 8,
  onError?: (uri: string, error: unknown) => void,
): MonoTypeOperatorFunction<T> {
  const plan = restorePlan(uris, subscribe, concurrency, onError);
  return stageOperator(() => [new RestoreStage<T>(plan)]);
}

/** What the restores of {@link restoreSubscriptions} are made of, validated. @internal */
export interface RestorePlan {
  readonly uris: Iterable<string>;
  readonly subscribe: (uri: string) => ObservableInput<unknown>;
  readonly concurrency: number;
  readonly onError: ((uri: string, error: unknown) => void) | undefined;
}

/** Validates the arguments of {@link restoreSubscriptions} into a {@link RestorePlan}. @internal */
export function restorePlan(
  uris: Iterable<string>,
  subscribe: (uri: string) => ObservableInput<unknown>,
  concurrency = 8,
  onError?: (uri: string, error: unknown) => void,
): RestorePlan {
  if (!Number.isInteger(concurrency) || concurrency <= 0) {
    throw new InvalidOptionError('restoreSubscriptions concurrency', 'a positive integer', concurrency);
  }
  return { uris, subscribe, concurrency, onError };
}

/**
 * The logic of {@link restoreSubscriptions}: the restores start once the source is subscribed
 * and stop with the stream. Nothing of them is held once they are all done (a stream lives for
 * an hour; its restores take a moment).
 * @internal
 */
export class RestoreStage<T> extends DisposingStage<T> {
  private restoring: RestoreSubscriber | undefined;

  constructor(private readonly plan: RestorePlan) {
    super();
  }

  override opened(): void {
    const { uris, subscribe, concurrency, onError } = this.plan;
    const restoring = (this.restoring = new RestoreSubscriber(this));
    from(uris)
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
      .subscribe(restoring);
    if (restoring.closed && this.restoring === restoring) this.restoring = undefined;
  }

  /** Every restore is done. */
  restored(subscriber: RestoreSubscriber): void {
    if (this.restoring === subscriber) this.restoring = undefined;
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

// A bare Subscriber rather than an observer object: subscribing it allocates no SafeSubscriber.
class RestoreSubscriber extends Subscriber<never> {
  constructor(private readonly stage: RestoreStage<unknown>) {
    super();
  }

  protected override _error(error: unknown): void {
    this.unsubscribe();
    // onError threw: the stream errors with that error.
    this.stage.fail(error);
  }

  protected override _complete(): void {
    this.unsubscribe();
    this.stage.restored(this);
  }
}
