import type { SchedulerLike } from 'rxjs';
import type { ServerCapabilities } from '../../lib/filter.js';
import type { CloseReason } from '../../lib/frame.js';
import type { Hub } from '../../lib/hub.js';
import { defaultsOf, option, resolveOptions, type OptionTable } from '../../lib/optionTable.js';
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

/**
 * The legacy options, declared once: what each is, its default, and its `serve` flag
 * (`--session-idle-timeout`…); see `LISTEN_OPTIONS`.
 * @internal
 */
export const SESSION_OPTIONS: OptionTable<SessionOptions> = {
  sessionIdleTimeout: option.milliseconds({ default: 1_800_000, description: 'a legacy session without a request or a live GET stream for this long is evicted' }),
  sessionGracePeriod: option.milliseconds({ default: 60_000, description: "after a dropped GET stream, how long the session's subscriptions keep filling its replay buffer" }),
  sessionPruneInterval: option.milliseconds({ default: 60_000, description: 'how often the sweep looks for legacy sessions idle past --session-idle-timeout' }),
  replayBufferSize: option.count({ unit: 'frames', default: 100, description: 'frames kept per legacy session for Last-Event-ID; beyond it the oldest are forgotten' }),
  // A switch can only turn an option on, and this one is on already.
  allowClientSessionDelete: option.toggle({ default: true, flag: false, description: 'DELETE /mcp ends a legacy session (204); when false it answers 405' }),
  subscribeStreamWait: option.milliseconds({
    min: 0,
    default: 1_000,
    description: 'how long a legacy resources/subscribe that finds no live GET stream waits for one before -32602 (0 = not at all)',
  }),
  maxSessions: option.count({ unit: 'sessions', default: 10_000, description: 'legacy sessions held; an initialize beyond it gets HTTP 503' }),
  maxSubscriptionsPerSession: option.count({ unit: 'URIs', default: 1_000, description: 'resources/subscribe URIs per legacy session; beyond it -32602' }),
  maxSessionsPerPrincipal: option.count({
    unit: 'sessions',
    default: 100,
    description: "legacy sessions (and so GET streams) one principal holds; an initialize beyond it ends that principal's least recently used session",
  }),
  reconnectDelay: option.milliseconds({
    default: 1_000,
    description: 'the SSE retry: a legacy GET stream of a 2025-11-25 session opens with (how long its client waits before reconnecting)',
  }),
};

/** The legacy options used where none are given. */
export const DEFAULT_SESSION_OPTIONS: Readonly<SessionOptions> = defaultsOf(SESSION_OPTIONS);

/**
 * Completes legacy options with their defaults and refuses values the library cannot use, as
 * `resolveListenOptions` does: an `undefined` value means the default (`null` does not).
 * @throws InvalidOptionError naming `options` when `input` is not an object, else the option that
 *   is unknown or has a value the library cannot use.
 */
export function resolveSessionOptions(input?: Partial<SessionOptions>): Readonly<SessionOptions> {
  return resolveOptions('options', SESSION_OPTIONS, input);
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
   * `maxStreamLifetime`, `reconnectDelay`, `maxStreamQueue`, `maxStreamQueueBytes`, the shutdown signal).
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
  /** The message channels of the node: a revoke (here or relayed by `bus`) ends its principal's channels too. */
  readonly channels?: { revoke(principal: string, reason: CloseReason): number };
}
