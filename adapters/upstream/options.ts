// The options of upstream sources and of the gateway, declared once (lib/optionTable.ts): what each
// is, its unit, its default, and whether the `serve` command has a flag for it.
import { InvalidOptionError } from '../../lib/errors.js';
import { defaultsOf, option, type OptionTable } from '../../lib/optionTable.js';

/** Which protocol revision an upstream speaks: `modern` (2026-07-28 `subscriptions/listen`), `legacy` (a 2025 session), or `auto` (asked once with `server/discover`). */
export type UpstreamEra = 'auto' | 'modern' | 'legacy';

/**
 * What the gateway does with a URI whose upstream has not acknowledged it within `ackTimeout`:
 * `open` serves it (the acknowledgment says what the gateway knows it holds, and changes follow once
 * the upstream answers), `closed` refuses it (left out of a listen's acknowledgment, a legacy
 * `resources/subscribe` answered `-32603 failed to subscribe`).
 */
export type FailMode = 'open' | 'closed';

/** The settings of one upstream (besides its name, where it is, and its credentials). @internal */
export interface UpstreamSettings {
  readonly era: UpstreamEra;
  readonly bodyTimeout: number;
  readonly maxMessageBytes: number;
  readonly maxUris: number;
  readonly linger: number;
}

/**
 * An upstream's settings, declared once. None has a `serve` flag of its own: `serve --upstream`
 * upstreams take their defaults (a flag would be one value for every upstream, and `bodyTimeout` is
 * the HTTP front's name already).
 * @internal
 */
export const UPSTREAM_SETTINGS: OptionTable<UpstreamSettings> = {
  era: option.choice<UpstreamEra>(['auto', 'modern', 'legacy'], { default: 'auto', flag: false, placeholder: 'ERA', description: "the upstream's revision: 2026-07-28 (modern), a 2025 session (legacy), or asked with server/discover (auto)" }),
  bodyTimeout: option.milliseconds({ min: 0, default: 0, flag: false, description: 'longest silence on an upstream HTTP stream before it is opened again (0 = wait forever)' }),
  maxMessageBytes: option.bytes({ default: 1_048_576, flag: false, description: 'largest message taken from the upstream; a bigger one fails its stream' }),
  maxUris: option.count({ unit: 'resource URIs', default: 10_000, flag: false, description: 'resource URIs held at once of one upstream; one more is refused' }),
  linger: option.milliseconds({ min: 0, default: 1_000, flag: false, description: 'how long a URI, a stream or a process no longer needed is kept in case it is needed again' }),
};

/** A number from `min` to `max`, in code or written in decimal. */
function fraction(min: number, max: number): { check(label: string, value: unknown): number; read(label: string, text: string): number } {
  const check = (label: string, value: unknown): number => {
    if (typeof value === 'number' && value >= min && value <= max) return value;
    throw new InvalidOptionError(label, `a number from ${min} to ${max}`, value);
  };
  return { check, read: (label, text) => check(label, /^\d+(\.\d+)?$/.test(text) ? Number(text) : text) };
}

/** A reconnect policy with every member given (see `ReconnectPolicy`). */
export interface ResolvedReconnectPolicy {
  readonly initialDelay: number;
  readonly maxDelay: number;
  readonly multiplier: number;
  readonly jitter: number;
}

/** The reconnect policy's members, declared once (checked together by `resolveReconnectPolicy`). @internal */
export const RECONNECT_SETTINGS: OptionTable<ResolvedReconnectPolicy> = {
  initialDelay: option.milliseconds({ default: 500, flag: false, description: "the first attempt's delay after an upstream stream failed or ended" }),
  maxDelay: option.milliseconds({ default: 30_000, flag: false, description: 'the ceiling: no attempt waits longer' }),
  multiplier: option.custom({ placeholder: 'X', default: 2, flag: false, description: 'what each failed attempt in a row multiplies the delay by', ...fraction(1, 10) }),
  jitter: option.custom({ placeholder: 'SHARE', default: 0.5, flag: false, description: 'the share of each delay that is random (0: none, 1: anything from 0 to the delay)', ...fraction(0, 1) }),
};

/** The policy used when none is given: 500 ms, doubling, at most 30 s, half of it random. */
export const DEFAULT_RECONNECT_POLICY: ResolvedReconnectPolicy = defaultsOf(RECONNECT_SETTINGS);

/** The gateway's own settings. @internal */
export interface GatewaySettings {
  readonly ackTimeout: number;
  readonly failMode: FailMode;
  readonly requestTimeout: number;
}

/** The gateway's settings, declared once: `serve --upstream` takes them as `--ack-timeout`, `--fail-mode` and `--request-timeout`. @internal */
export const GATEWAY_SETTINGS: OptionTable<GatewaySettings> = {
  ackTimeout: option.milliseconds({ default: 5_000, description: "how long a listen's or a subscribe's decision waits for an upstream to acknowledge a URI (--upstream)" }),
  failMode: option.choice<FailMode>(['open', 'closed'], { default: 'open', description: 'a URI its upstream has not acknowledged within --ack-timeout is served (open) or refused (closed)' }),
  requestTimeout: option.milliseconds({ default: 30_000, description: 'how long a resources/read, resources/list or templates list forwarded to an upstream (--upstream) waits for its answer' }),
};

