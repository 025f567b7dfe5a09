/**
 * Listen stream options and server-wide stream limits, declared once ({@link LISTEN_OPTIONS},
 * {@link STREAM_LIMITS}) and validated once at construction (DESIGN M13).
 */
import { MAX_TIMER_DELAY } from './clock.js';
import { defaultsOf, option, resolveOptions, type OptionTable } from './optionTable.js';

/** What a server-side close sends before the stream ends (DESIGN M7). */
export type CloseNoticeMode = 'cancelled-then-result' | 'result-only';

/**
 * Timing and queue options of the streams an endpoint serves: every listen stream, and, but for
 * `listenIdleTimeout` and `closeNotice` (a listen's only), every legacy GET stream too.
 */
export interface ListenOptions {
  /** Milliseconds between `:\r\n` keep-alive comments; defaults to 15 000. */
  readonly keepAliveInterval: number;
  /** Milliseconds without a delivered notification before the stream is closed; defaults to 1 800 000 (30 min). */
  readonly listenIdleTimeout: number;
  /** Milliseconds a stream may live; defaults to 3 600 000 (1 h). */
  readonly maxStreamLifetime: number;
  /**
   * Undelivered notifications held per stream (listen and legacy GET streams alike) for a client
   * that is not reading, before new ones are dropped; defaults to 1000. Formerly `listenMaxQueue`.
   */
  readonly maxStreamQueue: number;
  /**
   * Bytes of undelivered frames (as they will be written) held per stream for a client that is
   * not reading; a notification that would go past it is dropped like one past `maxStreamQueue`
   * (control frames are always kept). Defaults to 1 048 576 (1 MiB). Applies to listen streams
   * and legacy GET streams alike. Formerly `listenMaxQueueBytes`.
   */
  readonly maxStreamQueueBytes: number;
  /**
   * `'cancelled-then-result'` sends `notifications/cancelled` and then the listen result;
   * `'result-only'` skips the cancelled notification. Defaults to `'cancelled-then-result'`.
   */
  readonly closeNotice: CloseNoticeMode;
}

/**
 * The former names of two {@link ListenOptions}, still accepted wherever listen options are given
 * (an endpoint's options, {@link resolveListenOptions}, `listenPipeline`) and read as the new ones
 * (their table entries say so: `formerly`). Giving both names with different values is refused.
 */
export interface DeprecatedListenOptions {
  /** @deprecated Renamed {@link ListenOptions.maxStreamQueue} (it bounds legacy GET streams too); read as it. */
  readonly listenMaxQueue?: number;
  /** @deprecated Renamed {@link ListenOptions.maxStreamQueueBytes} (it bounds legacy GET streams too); read as it. */
  readonly listenMaxQueueBytes?: number;
}

/** Listen options as they are given: any of them, under their names or the former ones. */
export type ListenOptionsInput = Partial<ListenOptions> & DeprecatedListenOptions;

/** How many streams may be open, per principal and server-wide. */
export interface StreamLimits {
  /** Live listens per principal before the oldest is superseded; defaults to 4. */
  readonly maxListensPerPrincipal: number;
  /** Live streams server-wide (listens and streamed `tools/call`) before 503; defaults to 1000. */
  readonly maxStreams: number;
}

/**
 * The longest delay, in milliseconds, a timer can wait: 2 147 483 647 (about 24.8 days).
 *
 * Node's timers (which RxJS's `asyncScheduler` uses) store delays as signed 32-bit
 * integers and run a longer one after **1 ms** with only a warning, so a lifetime of
 * 30 days would close every stream at once. Millisecond options are refused above it.
 *
 * @example
 * ```ts
 * resolveListenOptions({ maxStreamLifetime: MAX_TIMER_DELAY }); // accepted
 * ```
 *
 * @see resolveListenOptions
 */
export { MAX_TIMER_DELAY };

/**
 * The listen options, declared once: what each is, its default, and its `serve` flag
 * (`--keep-alive-interval`…). {@link resolveListenOptions} checks against it, the endpoint and the
 * reference server accept these options, and `serve --help` lists them from it.
 * @internal
 */
export const LISTEN_OPTIONS: OptionTable<ListenOptions> = {
  keepAliveInterval: option.milliseconds({ default: 15_000, description: 'time between ":" keep-alive comments on a stream' }),
  listenIdleTimeout: option.milliseconds({ default: 1_800_000, description: 'a listen stream without a notification for this long is closed (idle_timeout)' }),
  maxStreamLifetime: option.milliseconds({ default: 3_600_000, description: 'any stream (listen or legacy GET) is closed after this long (max_lifetime)' }),
  maxStreamQueue: option.count({
    unit: 'notifications',
    default: 1000,
    description: 'notifications held for a slow client, per stream (listen or legacy GET); beyond it new ones are dropped (identical ones coalesce)',
    formerly: 'listenMaxQueue',
  }),
  maxStreamQueueBytes: option.bytes({
    default: 1_048_576,
    description: 'bytes of frames held for a slow client, per stream (listen or legacy GET); beyond it new notifications are dropped',
    formerly: 'listenMaxQueueBytes',
  }),
  closeNotice: option.choice<CloseNoticeMode>(['cancelled-then-result', 'result-only'], {
    default: 'cancelled-then-result',
    description: 'on a server-side close send notifications/cancelled then the result, or the result only (cancelled-then-result | result-only)',
  }),
};

/**
 * The stream limits, declared once (see {@link LISTEN_OPTIONS}).
 * @internal
 */
export const STREAM_LIMITS: OptionTable<StreamLimits> = {
  maxListensPerPrincipal: option.count({
    unit: 'streams',
    default: 4,
    description: "one principal's listen streams; a new one beyond it supersedes the oldest (legacy GET streams are one per session)",
  }),
  maxStreams: option.count({ unit: 'streams', default: 1000, description: 'open streams server-wide; beyond it a new one gets HTTP 503' }),
};

/**
 * The listen options used where none are given.
 *
 * Keep-alive every 15 s, idle close after 30 min, lifetime cap 1 h, 1000 queued
 * notifications and 1 MiB of frames per stream, and the full close notice — the values of the reference
 * server this library follows.
 *
 * @example
 * ```ts
 * DEFAULT_LISTEN_OPTIONS.keepAliveInterval; // → 15000
 * ```
 *
 * @see resolveListenOptions
 */
export const DEFAULT_LISTEN_OPTIONS: Readonly<ListenOptions> = defaultsOf(LISTEN_OPTIONS);

/**
 * The stream limits used where none are given: 4 listens per principal, 1000 streams server-wide.
 *
 * @example
 * ```ts
 * DEFAULT_STREAM_LIMITS.maxStreams; // → 1000
 * ```
 *
 * @see resolveStreamLimits
 */
export const DEFAULT_STREAM_LIMITS: Readonly<StreamLimits> = defaultsOf(STREAM_LIMITS);

/**
 * Completes listen options with their defaults and refuses any value the library cannot use.
 *
 * Call it once, where a server is constructed, so a bad configuration fails at startup
 * with a message naming the option rather than misbehaving on the first stream. Every
 * number must be a positive safe integer (millisecond options at most
 * {@link MAX_TIMER_DELAY}); `closeNotice` must be one of its two modes; a key that is not an
 * option (a typo such as `keepAliveIntervall`) is refused too, because ignoring it would
 * silently keep the default. An `undefined` value means the default (`null` does not). Unknown keys are
 * checked first, then the options in declaration order. The former names `listenMaxQueue` and
 * `listenMaxQueueBytes` are read as `maxStreamQueue` and `maxStreamQueueBytes` (deprecated).
 *
 * @example
 * ```ts
 * const options = resolveListenOptions({ keepAliveInterval: 5_000 });
 * options.listenIdleTimeout; // → 1800000 (default)
 * resolveListenOptions({ keepAliveInterval: -5 });
 * // throws InvalidOptionError: keepAliveInterval must be a positive integer of milliseconds, got -5
 * ```
 *
 * @param input Options to override; omitted or `undefined` fields take the defaults of
 *   {@link DEFAULT_LISTEN_OPTIONS}.
 * @returns A complete, frozen options object.
 * @throws {InvalidOptionError} for an unknown key or an unusable value, or a former name given
 *   beside its new one with another value.
 * @see DEFAULT_LISTEN_OPTIONS
 * @see resolveStreamLimits
 * @see positiveInteger
 */
export function resolveListenOptions(input?: ListenOptionsInput): Readonly<ListenOptions> {
  return resolveOptions('options', LISTEN_OPTIONS, input);
}

/**
 * Completes stream limits with their defaults and refuses any value the library cannot use.
 *
 * Same rules as {@link resolveListenOptions}: positive safe integers only, unknown keys
 * refused, `undefined` means the default.
 *
 * @example
 * ```ts
 * resolveStreamLimits({ maxListensPerPrincipal: 2 }); // → { maxListensPerPrincipal: 2, maxStreams: 1000 }
 * resolveStreamLimits({ maxStreams: 0 });
 * // throws InvalidOptionError: maxStreams must be a positive integer, got 0
 * ```
 *
 * @param input Limits to override; omitted or `undefined` fields take the defaults of
 *   {@link DEFAULT_STREAM_LIMITS}.
 * @returns Complete, frozen limits.
 * @throws {InvalidOptionError} for an unknown key or an unusable value.
 * @see DEFAULT_STREAM_LIMITS
 * @see resolveListenOptions
 */
export function resolveStreamLimits(input?: Partial<StreamLimits>): Readonly<StreamLimits> {
  return resolveOptions('options', STREAM_LIMITS, input);
}
