import type { SchedulerLike } from 'rxjs';
import type { ServerCapabilities } from '../../lib/filter.js';
import type { Hub } from '../../lib/hub.js';
import { boolean, knownKeys, milliseconds, positiveInteger } from '../../lib/validate.js';
import type { ServerInfo } from '../../lib/protocol.js';
import type { SessionPlans } from '../../operators/sessionPipeline.js';
import type { EventLog } from '../../lib/replayBuffer.js';
import type { SessionBus, SessionStore } from '../../lib/session.js';
import type { StreamSlots } from '../../lib/slots.js';
import type { ResourceAccess } from '../authorize.js';
import type { Placement } from './placement.js';
/** Options of the legacy era (DESIGN L1–L10); every duration is in milliseconds. */
export interface SessionOptions {
  /** A session with no request and no live GET stream for this long is evicted. Default 1 800 000 (30 min). */
  readonly sessionIdleTimeout: number;
  /**
   * After a session's GET stream drops, its subscriptions keep feeding the replay buffer for this
   * long, so a reconnect with `Last-Event-ID` gets what changed meanwhile. Default 60 000 (60 s).
   */
  readonly sessionGracePeriod: number;
  /** How often the prune sweep looks for idle sessions nobody touches. Default 60 000 (1 min). */
  readonly sessionPruneInterval: number;
  /** How many of a session's most recent frames are kept for `Last-Event-ID` replay. Default 100. */
  readonly replayBufferSize: number;
  /** Whether `DELETE /mcp` ends a session (204); when false it answers 405 `Allow: POST, GET`. Default true. */
  readonly allowClientSessionDelete: boolean;
  /** How long a `resources/subscribe` without a live GET stream waits for one before `-32602`; 0 = not at all. Default 1000. */
  readonly subscribeStreamWait: number;
  /**
   * The most sessions this node holds; an `initialize` beyond it gets HTTP 503 and `-32000`, so a
   * flood of `initialize` cannot exhaust memory. Default 10 000.
   */
  readonly maxSessions: number;
  /**
   * The most resource URIs one session may subscribe to (like the 1000 URIs of a listen filter);
   * one more answers `-32602` until it unsubscribes from one. Default 1000.
   */
  readonly maxSubscriptionsPerSession: number;
  /**
   * The most sessions one principal holds on this node; an `initialize` beyond it ends that
   * principal's least recently used session (its GET stream ends cleanly, its record is removed),
   * never another principal's. Default 100.
   */
  readonly maxSessionsPerPrincipal: number;
  /**
   * Milliseconds a client should wait before reconnecting its GET stream: sent as the SSE `retry:`
   * field of the priming event every GET stream of a session on 2025-11-25 or later opens with
   * (DESIGN L7; earlier revisions get no priming event). Default 1000.
   */
  readonly reconnectDelay: number;
}

/** The legacy options used where none are given. */
export const DEFAULT_SESSION_OPTIONS: Readonly<SessionOptions> = Object.freeze({
  sessionIdleTimeout: 1_800_000,
  sessionGracePeriod: 60_000,
  sessionPruneInterval: 60_000,
  replayBufferSize: 100,
  allowClientSessionDelete: true,
  subscribeStreamWait: 1_000,
  maxSessions: 10_000,
  maxSubscriptionsPerSession: 1_000,
  maxSessionsPerPrincipal: 100,
  reconnectDelay: 1_000,
});

const SESSION_OPTION_NAMES = Object.keys(DEFAULT_SESSION_OPTIONS) as (keyof SessionOptions)[];

/**
 * Completes legacy options with their defaults and refuses values the library cannot use, as
 * `resolveListenOptions` does: an `undefined` value means the default (`null` does not).
 * @throws InvalidOptionError naming `options` when `input` is not an object, else the option that
 *   is unknown or has a value the library cannot use.
 */
export function resolveSessionOptions(input?: Partial<SessionOptions>): Readonly<SessionOptions> {
  const given = knownKeys('options', input, SESSION_OPTION_NAMES);
  const pick = <K extends keyof SessionOptions>(key: K): unknown => (given[key] === undefined ? DEFAULT_SESSION_OPTIONS[key] : given[key]);
  const allow = boolean('allowClientSessionDelete', pick('allowClientSessionDelete'));
  const wait = pick('subscribeStreamWait');
  return Object.freeze({
    sessionIdleTimeout: milliseconds('sessionIdleTimeout', pick('sessionIdleTimeout')),
    sessionGracePeriod: milliseconds('sessionGracePeriod', pick('sessionGracePeriod')),
    sessionPruneInterval: milliseconds('sessionPruneInterval', pick('sessionPruneInterval')),
    replayBufferSize: positiveInteger('replayBufferSize', pick('replayBufferSize')),
    allowClientSessionDelete: allow,
    subscribeStreamWait: wait === 0 ? 0 : milliseconds('subscribeStreamWait', wait),
    maxSessions: positiveInteger('maxSessions', pick('maxSessions')),
    maxSubscriptionsPerSession: positiveInteger('maxSubscriptionsPerSession', pick('maxSubscriptionsPerSession')),
    maxSessionsPerPrincipal: positiveInteger('maxSessionsPerPrincipal', pick('maxSessionsPerPrincipal')),
    reconnectDelay: milliseconds('reconnectDelay', pick('reconnectDelay')),
  });
}

/**
 * Everything the legacy sessions are built from (the endpoint's options, resolved).
 * @internal
 */
export interface LegacySessionsInit {
  readonly hub: Hub;
  readonly store: SessionStore;
  /** Who may subscribe to which URI, and whose changes it hears: the same decision as a modern listen's. */
  readonly access: ResourceAccess;
  readonly options: Readonly<SessionOptions>;
  readonly capabilities: ServerCapabilities;
  /** Extra members merged into the advertised capabilities (e.g. `logging`, `completions`). */
  readonly extraCapabilities: Readonly<Record<string, unknown>>;
  readonly serverInfo: ServerInfo;
  readonly instructions: string | undefined;
  /**
   * What every GET stream of the endpoint shares, made once from its options (`keepAliveInterval`,
   * `maxStreamLifetime`, `reconnectDelay`, `listenMaxQueue`, `listenMaxQueueBytes`, the shutdown signal).
   */
  readonly streams: SessionPlans;
  readonly slots: StreamSlots;
  readonly scheduler: SchedulerLike;
  /** The event log of a session (its ids and replay buffer): a `ReplayBuffer` in process, a shared log in a fleet. */
  readonly eventLog: (sessionId: string) => EventLog;
  /** Relays session commands between the nodes of a fleet; absent in a single process. */
  readonly bus: SessionBus | undefined;
  /** Where a session's GET stream is: here, or on another node (through `bus`). */
  readonly placement: Placement;
  /** Milliseconds an `initialize` refused at `maxSessions` is told to wait (`capacityRetryAfter`). */
  readonly capacityRetryAfter: number;
}
