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

/** A TCP port: an integer from 0 (any free port) to 65535. @internal */
export function port(label: string, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 65_535) return value;
  throw new InvalidOptionError(label, 'a TCP port: an integer from 0 (any free port) to 65535', value);
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
  refuseUnknownKeys(given, known, '', label);
  return given as Partial<Record<K, unknown>>;
}

/**
 * An options object of a constructor or factory: each key one of `known`. With `like` (the
 * smallest valid object, `'{ hub }'`) it is required; without, `undefined` means no options.
 * Anything but a plain object is refused with what to pass, and a `Hub`-like value given
 * where `{ hub }` belongs is told so (`got a Hub: pass { hub } instead`). An unknown key is named
 * with the list of known ones (or, for a long list, the nearest one: `did you mean …?`); `keyLabel`
 * prefixes its name in the message (`'hub.notifyToolsChanged options.'`).
 * @internal
 */
export function options<K extends string>(
  label: string,
  value: unknown,
  known: readonly K[],
  { like, keyLabel = '' }: { readonly like?: string; readonly keyLabel?: string } = {},
): Partial<Record<K, unknown>> {
  if (value === undefined && like === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value) || isHub(value)) {
    const expected = like === undefined ? 'an object' : `an object like ${like}`;
    throw new InvalidOptionError(label, expected, value, isHub(value) && (known as readonly string[]).includes('hub') ? 'pass { hub } instead' : undefined);
  }
  refuseUnknownKeys(value as Record<string, unknown>, known, keyLabel, label);
  return value as Partial<Record<K, unknown>>;
}

/** Throws for the first own key of `given` that is not in `known`; no allocation (a publish's options go through it). */
function refuseUnknownKeys(given: Record<string, unknown>, known: readonly string[], keyLabel: string, owner: string): void {
  for (const key in given) {
    if (!Object.hasOwn(given, key) || known.includes(key)) continue;
    // A short list is the fix; in a long one the nearest name is.
    if (known.length <= 12) throw new InvalidOptionError(keyLabel + key, `one of the known options (${known.join(', ')})`, given[key]);
    const near = nearest(key, known);
    throw new InvalidOptionError(keyLabel + key, `one of the ${known.length} known ${owner}`, given[key], near === undefined ? undefined : `did you mean ${near}?`);
  }
}

/** The name in `names` closest to `typo` (same letters but for case, or at most two edits away). */
function nearest(typo: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const distance = name.toLowerCase() === typo.toLowerCase() ? 0 : editDistance(typo, name, bestDistance);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

/** Levenshtein distance, or `limit` once it is known to reach it. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    if (Math.min(...row) >= limit) return limit;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit);
}

/** What {@link string} requires beyond a string, and how the message names it. @internal */
export interface StringRule {
  /** Refuse `''`. */
  readonly nonEmpty?: boolean;
  /** Refuse what it does not match. */
  readonly pattern?: RegExp;
  /** What is allowed, for the message; defaults to `a string` or `a non-empty string`. */
  readonly what?: string;
}

/**
 * A string, as `rule` says. Allocates nothing (a publish's URI goes through it): give a constant `rule`.
 * @internal
 */
export function string(label: string, value: unknown, rule?: StringRule): string {
  if (typeof value === 'string' && (rule === undefined || ((rule.nonEmpty !== true || value !== '') && (rule.pattern === undefined || rule.pattern.test(value))))) return value;
  throw new InvalidOptionError(label, rule?.what ?? (rule?.nonEmpty === true ? 'a non-empty string' : 'a string'), value);
}

/**
 * An object whose keys are among `known`, each `true`, `false` or absent (an endpoint's
 * `capabilities`): an unknown key is named, since it would advertise nothing.
 * @internal
 */
export function flags<K extends string>(label: string, value: unknown, known: readonly K[]): Partial<Record<K, boolean>> {
  const expected = `an object with only the keys ${known.join(', ')} (each a boolean)`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InvalidOptionError(label, expected, value);
  for (const [key, flag] of Object.entries(value)) {
    if (!(known as readonly string[]).includes(key)) throw new InvalidOptionError(label, expected, value, `${key} is not one of them`);
    if (flag !== undefined) boolean(`${label}.${key}`, flag);
  }
  return value as Partial<Record<K, boolean>>;
}

/** An object (`what` describes it) whose every entry passes `check` (called with `label.key`). @internal */
export function recordOf<T>(label: string, value: unknown, what: string, check: (label: string, entry: unknown) => T): Readonly<Record<string, T>> {
  for (const [key, entry] of Object.entries(object(label, value, what))) check(`${label}.${key}`, entry);
  return value as Readonly<Record<string, T>>;
}

/** A record of functions (an endpoint's `methods`): each entry named when it is not one. @internal */
export function functions<F extends (...args: never[]) => unknown>(label: string, value: unknown, what: string): Readonly<Record<string, F>> {
  return recordOf(label, value, `an object of functions (${what})`, (entryLabel, entry) => {
    if (typeof entry !== 'function') throw new InvalidOptionError(entryLabel, `a function (${what})`, entry);
    return entry as F;
  });
}

/** An `http:` or `https:` URL, as a string or a `URL`. @internal */
export function httpUrl(label: string, value: unknown): string | URL {
  let url: URL | undefined;
  try {
    url = value instanceof URL ? value : typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url !== undefined && (url.protocol === 'http:' || url.protocol === 'https:')) return value as string | URL;
  throw new InvalidOptionError(label, "an http:// or https:// URL (a string or a URL), e.g. 'http://127.0.0.1:3000/mcp'", value instanceof URL ? value.href : value);
}

/**
 * An object with every method of `methods` (an interface the library calls: a `SessionStore`, a
 * `HubBus`); `what` names the interface and its methods for the message.
 * @internal
 */
export function implementing<T>(label: string, value: unknown, methods: readonly string[], what: string): T {
  if (value !== null && (typeof value === 'object' || typeof value === 'function') && methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')) {
    return value as T;
  }
  throw new InvalidOptionError(label, what, value);
}

/** An array whose every entry passes `check` (called with `label[i]`). @internal */
export function arrayOf<T>(label: string, value: unknown, what: string, check: (label: string, entry: unknown) => T): readonly T[] {
  if (!Array.isArray(value)) throw new InvalidOptionError(label, what, value);
  value.forEach((entry, i) => check(`${label}[${i}]`, entry));
  return value as readonly T[];
}

// The methods the library calls on a hub. Checked by shape, not `instanceof`: a hub made by a second
// copy of the package (two versions installed side by side) serves as well.
const HUB_METHODS = ['topic', 'attach', 'detach', 'notifyToolsChanged', 'notifyPromptsChanged', 'notifyResourcesChanged', 'notifyResourceUpdated', 'notifyTask'];

/** Whether `value` has the methods of a `Hub`. @internal */
export function isHub(value: unknown): boolean {
  return value !== null && typeof value === 'object' && HUB_METHODS.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
}

/** Whether `value` has what the adapters use of an `McpEndpoint` (its `handle` and its hub). */
function isEndpoint(value: unknown): boolean {
  return value !== null && typeof value === 'object' && typeof (value as { handle?: unknown }).handle === 'function' && isHub((value as { hub?: unknown }).hub);
}

/**
 * A `Hub` (an object with its methods). An `McpEndpoint` given instead is told to pass its hub.
 * @internal
 */
export function hub<T>(label: string, value: unknown): T {
  if (isHub(value)) return value as T;
  throw new InvalidOptionError(label, 'a Hub', value, isEndpoint(value) ? 'pass endpoint.hub' : undefined);
}

/**
 * An `McpEndpoint` (an object with `handle` and a hub). A `Hub` given instead is told how to make one.
 * @internal
 */
export function endpoint<T>(label: string, value: unknown): T {
  if (isEndpoint(value)) return value as T;
  throw new InvalidOptionError(label, 'an McpEndpoint', value, isHub(value) ? 'pass new McpEndpoint({ hub })' : undefined);
}
