// The reconnect policy of upstream streams: exponential backoff with jitter under a ceiling, on an
// injected scheduler (virtual time in specs), as one RxJS `retry` configuration.
import { asyncScheduler, type MonoTypeOperatorFunction, retry, type SchedulerLike, timer } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { callback, options as validOptions, scheduler as validScheduler } from '../../lib/validate.js';
import { DEFAULT_RECONNECT_POLICY, RECONNECT_SETTINGS, type ResolvedReconnectPolicy } from './options.js';

/**
 * How an upstream stream that failed or ended is opened again: the n-th attempt in a row waits
 * `min(maxDelay, initialDelay × multiplier^(n−1))`, less a random share of it (`jitter`), so that
 * many gateways (or many streams of one) cut off together do not come back in step. An attempt that
 * gets as far as the upstream's first message (a listen's acknowledgment, a legacy GET opening)
 * starts the count again.
 */
export interface ReconnectPolicy {
  /** The first attempt's delay, in milliseconds; defaults to 500. */
  readonly initialDelay?: number;
  /** The ceiling: no attempt waits longer, in milliseconds; defaults to 30 000. */
  readonly maxDelay?: number;
  /** How much each failed attempt in a row multiplies the delay by: a number from 1 to 10; defaults to 2. */
  readonly multiplier?: number;
  /** The share of each delay that is random, from 0 (none) to 1 (anything from 0 to the delay); defaults to 0.5. */
  readonly jitter?: number;
}

export { DEFAULT_RECONNECT_POLICY, type ResolvedReconnectPolicy } from './options.js';

const POLICY_KEYS = Object.keys(RECONNECT_SETTINGS) as (keyof ReconnectPolicy)[];

/**
 * `policy` with its defaults, checked member by member (RECONNECT_SETTINGS), and `maxDelay` no
 * shorter than `initialDelay` (whose default grows to `initialDelay` when only that is given).
 *
 * @example
 * resolveReconnectPolicy('reconnect', { maxDelay: 5_000 }); // { initialDelay: 500, maxDelay: 5000, multiplier: 2, jitter: 0.5 }
 * @param label what names the policy in a message (`reconnect`).
 * @param policy see {@link ReconnectPolicy}; `undefined` is the default policy.
 * @throws InvalidOptionError naming `label` when it is not an object, else the member that is
 *   unknown or out of range (`reconnect.maxDelay` below `initialDelay`, say).
 */
export function resolveReconnectPolicy(label: string, policy: ReconnectPolicy | undefined): ResolvedReconnectPolicy {
  const given = validOptions<keyof ReconnectPolicy>(label, policy, POLICY_KEYS, { keyLabel: `${label}.` });
  const member = <K extends keyof ReconnectPolicy>(name: K): number => (given[name] === undefined ? DEFAULT_RECONNECT_POLICY[name] : RECONNECT_SETTINGS[name].check(`${label}.${name}`, given[name]));
  const initialDelay = member('initialDelay');
  const maxDelay = given.maxDelay === undefined ? Math.max(initialDelay, DEFAULT_RECONNECT_POLICY.maxDelay) : member('maxDelay');
  if (maxDelay < initialDelay) throw new InvalidOptionError(`${label}.maxDelay`, `at least ${label}.initialDelay (${initialDelay} ms)`, maxDelay);
  return Object.freeze({ initialDelay, maxDelay, multiplier: member('multiplier'), jitter: member('jitter') });
}

/**
 * The delay before attempt `attempt` (1 for the first after a failure), in milliseconds, with
 * `random()` (from 0 inclusive to 1 exclusive, `Math.random` unless given) taking its jitter.
 *
 * @example
 * reconnectDelay({ initialDelay: 100, maxDelay: 1_000, multiplier: 2, jitter: 0 }, 3, Math.random); // 400
 */
export function reconnectDelay(policy: ResolvedReconnectPolicy, attempt: number, random: () => number = Math.random): number {
  const step = Math.min(policy.maxDelay, policy.initialDelay * policy.multiplier ** Math.max(0, attempt - 1));
  return Math.round(step * (1 - policy.jitter * random()));
}

/** What {@link reconnect} is told besides the policy. */
export interface ReconnectOptions {
  /** Where the delays are timed; defaults to `asyncScheduler` (give a `TestScheduler` in specs). */
  readonly scheduler?: SchedulerLike;
  /** The jitter's random numbers; defaults to `Math.random`. */
  readonly random?: () => number;
  /** Called when an attempt is scheduled: the error that ended the last one, its number and its delay (ms). */
  readonly onRetry?: (error: unknown, attempt: number, delay: number) => void;
}

/**
 * Re-subscribes the source after it errors, by `policy`: forever, each attempt after the delay
 * {@link reconnectDelay} gives, the count starting again once the source emits. A source that
 * should also come back after it completes (an upstream that closed its stream) turns its
 * completion into an error first.
 *
 * @example
 * defer(() => openUpstreamStream()).pipe(reconnect({ maxDelay: 5_000 }));
 * @param policy see {@link ReconnectPolicy}; its members default as {@link resolveReconnectPolicy} says.
 * @param options the scheduler (default `asyncScheduler`), the random source (default `Math.random`) and a callback per attempt.
 * @throws InvalidOptionError naming `reconnect` or one of its members (as {@link resolveReconnectPolicy}),
 *   `reconnect options` when `options` is not an object, or `scheduler`, `random`, `onRetry` when one is not what it takes.
 */
export function reconnect<T>(policy: ReconnectPolicy = {}, options: ReconnectOptions = {}): MonoTypeOperatorFunction<T> {
  const resolved = resolveReconnectPolicy('reconnect', policy);
  const given = validOptions<keyof ReconnectOptions>('reconnect options', options, ['scheduler', 'random', 'onRetry']);
  const scheduler = given.scheduler === undefined ? asyncScheduler : validScheduler<SchedulerLike>('scheduler', given.scheduler);
  const random = given.random === undefined ? Math.random : callback<() => number>('random', given.random);
  const onRetry = given.onRetry === undefined ? undefined : callback<NonNullable<ReconnectOptions['onRetry']>>('onRetry', given.onRetry);
  return retry<T>({
    resetOnSuccess: true,
    delay: (error: unknown, attempt: number) => {
      const delay = reconnectDelay(resolved, attempt, random);
      onRetry?.(error, attempt, delay);
      return timer(delay, scheduler);
    },
  });
}
