import { isObservable, type Observable } from 'rxjs';
import { MAX_TIMER_DELAY } from './clock.js';
import { InvalidOptionError } from './errors.js';
import { isJsonRpcId, type JsonRpcId } from './jsonrpc.js';

/**
 * The checks every option, operator argument and constructor argument of the library goes
 * through (DESIGN M13): each returns the value it was given, typed, or throws an
 * {@link InvalidOptionError} whose message starts with the caller's own `label` (the option's
 * public name: `keepAliveInterval`, `keepAlive intervalMs`, `HubOptions.coalesce`), says what is
 * allowed and shows what was given:
 *
 * ```
 * keepAliveInterval must be a positive integer of milliseconds, got -5
 * ```
 *
 * A value is checked once on its way in, where the caller named it; the code behind takes it as
 * valid. All but {@link positiveInteger} are internal.
 */

/**
 * Returns `value` if it is a positive safe integer, else throws an error naming the option.
 *
 * The shared validator for counts and durations: `0`, negatives, fractions, `NaN`,
 * `Infinity`, numbers beyond `Number.MAX_SAFE_INTEGER`, numeric strings and bigints are
 * all refused, because each of them would quietly mean something else to a timer or a
 * queue. Give `unit` to say what the number counts in the message.
 *
 * @example
 * ```ts
 * positiveInteger('maxStreams', 500); // → 500
 * positiveInteger('keepAliveInterval', 1.5, 'milliseconds');
 * // throws InvalidOptionError: keepAliveInterval must be a positive integer of milliseconds, got 1.5
 * ```
 *
 * @param label The option's name, as the caller wrote it.
 * @param value The value to check; any value.
 * @param unit What the integer counts, e.g. `'milliseconds'`; omitted for plain counts.
 * @returns `value`, typed as a number.
 * @throws {InvalidOptionError} when `value` is not a positive safe integer.
 * @see resolveListenOptions
 * @see resolveStreamLimits
 */
export function positiveInteger(label: string, value: unknown, unit?: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  throw new InvalidOptionError(label, unit === undefined ? 'a positive integer' : `a positive integer of ${unit}`, value);
}

/** Zero or a positive safe integer. @internal */
export function nonNegativeInteger(label: string, value: unknown, unit?: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw new InvalidOptionError(label, unit === undefined ? 'a non-negative integer' : `a non-negative integer of ${unit}`, value);
}

/**
 * A duration that becomes a timer's delay: a positive integer of milliseconds no greater than
 * {@link MAX_TIMER_DELAY} (Node fires a longer timer at once).
 * @internal
 */
export function milliseconds(label: string, value: unknown): number {
  const delay = positiveInteger(label, value, 'milliseconds');
  if (delay > MAX_TIMER_DELAY) throw new InvalidOptionError(label, `a positive integer of milliseconds no greater than ${MAX_TIMER_DELAY}`, value);
  return delay;
}

/** A point in time: a finite number of milliseconds since the epoch. @internal */
export function epochMs(label: string, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw new InvalidOptionError(label, 'a finite number of milliseconds since the epoch', value);
}

/** An RxJS Observable (`what` says of what, for the message: `'booleans'`). @internal */
export function observable<T>(label: string, value: unknown, what?: string): Observable<T> {
  if (isObservable(value)) return value as Observable<T>;
  throw new InvalidOptionError(label, what === undefined ? 'an Observable' : `an Observable of ${what}`, value);
}

/** A function. @internal */
export function callback<F extends (...args: never[]) => unknown>(label: string, value: unknown): F {
  if (typeof value === 'function') return value as F;
  throw new InvalidOptionError(label, 'a function', value);
}

/** A JSON-RPC request id: a string or a finite number. @internal */
export function requestId(label: string, value: unknown): JsonRpcId {
  if (isJsonRpcId(value)) return value;
  throw new InvalidOptionError(label, 'a string or a finite number (the listen request id)', value);
}

/** A boolean. @internal */
export function boolean(label: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new InvalidOptionError(label, 'a boolean', value);
}

/** One of `choices` (compared with `===`). @internal */
export function oneOf<T extends string>(label: string, value: unknown, choices: readonly T[]): T {
  const found = choices.find((choice) => choice === value);
  if (found !== undefined) return found;
  throw new InvalidOptionError(label, choices.map((choice) => JSON.stringify(choice)).join(' or '), value);
}

/** An array of non-empty strings. @internal */
export function nonEmptyStrings(label: string, value: unknown): readonly string[] {
  if (Array.isArray(value) && value.every((entry) => typeof entry === 'string' && entry !== '')) return value as readonly string[];
  throw new InvalidOptionError(label, 'an array of non-empty strings', value);
}

/** An object that is not an array (`what` describes it for the message: `'an RxJS SchedulerLike'`). @internal */
export function object<T extends object>(label: string, value: unknown, what = 'an object'): T {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as T;
  throw new InvalidOptionError(label, what, value);
}

/** An RxJS `SchedulerLike` (an object with `now()` and `schedule()`). @internal */
export function scheduler<T>(label: string, value: unknown): T {
  const candidate = value as { now?: unknown; schedule?: unknown } | null;
  if (candidate !== null && typeof candidate === 'object' && typeof candidate.now === 'function' && typeof candidate.schedule === 'function') return value as T;
  throw new InvalidOptionError(label, 'an RxJS SchedulerLike', value);
}

/**
 * The entries of an options object, refusing a key that is not one of `known` (a misspelled option
 * must not be ignored silently). `undefined` and `null` are no options.
 * @internal
 */
export function knownKeys<K extends string>(label: string, input: unknown, known: readonly K[]): Partial<Record<K, unknown>> {
  if (input === undefined || input === null) return {};
  const given = object<Record<string, unknown>>(label, input);
  for (const key of Object.keys(given)) {
    if (!(known as readonly string[]).includes(key)) throw new InvalidOptionError(key, `one of the known options (${known.join(', ')})`, given[key]);
  }
  return given as Partial<Record<K, unknown>>;
}
