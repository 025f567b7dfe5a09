import { asyncScheduler, type SchedulerLike } from 'rxjs';
import type { AuthError, AuthInfo } from '../lib/auth.js';
import type { EndpointRequest, MethodHandler, RequestContext } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { ServerCapabilities } from '../lib/filter.js';
import type { Hub } from '../lib/hub.js';
import { type DeprecatedListenOptions, LISTEN_OPTIONS, STREAM_LIMITS, type ListenOptions, type StreamLimits } from '../lib/options.js';
import { namesOf, option, readOptions, type OptionTable } from '../lib/optionTable.js';
import {
  arrayOf,
  boolean,
  callback,
  flags,
  functions,
  hub,
  implementing,
  object,
  options as validOptions,
  scheduler as validScheduler,
  string,
} from '../lib/validate.js';
import type { PrincipalCap, PrincipalRegistry } from '../lib/principals.js';
import type { ServerInfo } from '../lib/protocol.js';
import type { EventLog } from '../lib/replayBuffer.js';
import { resourceProvider, type hubResources, type ResourceProvider } from '../lib/resources.js';
import type { MemorySessionStore, SessionBus, SessionStore } from '../lib/session.js';
import type { StreamSlots } from '../lib/slots.js';
import { DEFAULT_SERVER_INFO } from './discover.js';
import { SESSION_OPTIONS, type SessionOptions } from './legacy/sessionOptions.js';

/**
 * Options of {@link McpEndpoint}. Every number is validated at construction (DESIGN M13).
 *
 * A bare endpoint speaks to the official clients with no extra code: it answers `server/discover`
 * (2026-07-28, the first request of `@modelcontextprotocol/client` 2.x) and `initialize` (legacy,
 * `@modelcontextprotocol/sdk` 1.x) from `serverInfo`, `capabilities` (each advertised with
 * `listChanged`, resources also with `subscribe`), `extraCapabilities` and `instructions`;
 * `server/discover` offers `supportedVersions: ["2026-07-28"]`, `initialize` agrees on 2025-11-25,
 * 2025-06-18 or 2025-03-26. An entry in `methods` of the same name overrides either answer: a `server/discover`
 * handler's result is sent instead of the built-in one; an `initialize` handler's result is sent
 * as the `initialize` result (its `protocolVersion` set to the revision the session runs at),
 * while the endpoint still opens the session (`Mcp-Session-Id`); a throw from it opens none.
 *
 * @example
 * // Built in: discover and initialize advertise tools and resources, with this server info.
 * new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, serverInfo: { name: 'files', version: '1.2.0' } });
 * // Overridden: this server's own discover result (2026-07-28 results must say resultType "complete").
 * new McpEndpoint({
 *   hub,
 *   methods: {
 *     'server/discover': () => ({
 *       resultType: 'complete', ttlMs: 60_000, cacheScope: 'public',
 *       supportedVersions: ['2026-07-28'], capabilities: { resources: { subscribe: true, listChanged: true } },
 *     }),
 *   },
 * });
 */
export interface ProtocolOptions extends Partial<ListenOptions>, DeprecatedListenOptions, Partial<StreamLimits>, Partial<SessionOptions>, Partial<ProtocolSettings> {
  /** Where notifications come from. */
  readonly hub: Hub;
  /** What the server advertises; a listen honours only these. Defaults to tools, prompts and resources. */
  readonly capabilities?: ServerCapabilities;
  /** Identifies the caller; throw {@link AuthError} to answer 401. Defaults to anonymous callers bucketed by address. */
  readonly authenticate?: (request: EndpointRequest) => AuthInfo | Promise<AuthInfo>;
  /**
   * The read-scope check for resource URIs (the same one `resources/read` uses), in both eras: it
   * runs after the owning provider's `canRead` (see `resourceProviders`). A listen drops a URI it
   * refuses, silently (DESIGN M4); a legacy `resources/subscribe` answers `-32602 permission
   * denied: <uri>` (DESIGN L3). Anything but `true` refuses; a throw drops the URI from a listen and
   * answers `-32603 failed to subscribe: <uri>` to a subscribe. Defaults to none: the providers decide.
   */
  readonly canRead?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /**
   * Optional per-URI subscribe hook, in both eras, run last: only for a URI every read check
   * allowed. A refusal is answered as `canRead`'s (dropped from a listen, `-32602 permission
   * denied: <uri>` to a subscribe). Defaults to none.
   */
  readonly subscribeHook?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /**
   * Other JSON-RPC methods, answered with a single JSON response. An entry named `server/discover`
   * or `initialize` overrides the built-in answer (see {@link ProtocolOptions}), and so does one
   * named `resources/templates/list` (built in wherever `resources` is advertised: the templates
   * the `resourceProviders` declare).
   */
  readonly methods?: Readonly<Record<string, MethodHandler>>;
  /** The per-principal cap to admit listens through (e.g. a cluster-wide one); defaults to a {@link PrincipalRegistry} of `maxListensPerPrincipal`. */
  readonly principals?: PrincipalCap;
  /** A shared server-wide slot pool (e.g. also used by streamed `tools/call`); defaults to a pool of `maxStreams`. */
  readonly slots?: StreamSlots;
  /** Where time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Serve the legacy era (2025-03-26 / 2025-06-18 / 2025-11-25: `initialize`, sessions, GET stream, `resources/subscribe`). Defaults to true. */
  readonly legacy?: boolean;
  /** Where legacy session records live; defaults to a new {@link MemorySessionStore}. */
  readonly sessionStore?: SessionStore;
  /**
   * The event log (ids and replay buffer) of a legacy session; defaults to a new
   * `ReplayBuffer(replayBufferSize)` per session. A fleet passes a shared log (Redis), so that a
   * reconnect served by another node replays what its client missed.
   */
  readonly eventLog?: (sessionId: string) => EventLog;
  /** Relays session commands between the nodes of a fleet (with a shared `sessionStore` and `eventLog`); default none. */
  readonly sessionBus?: SessionBus;
  /**
   * Who owns which resource URIs, asked in order, in both eras: a URI no provider finds
   * `subscribable` is dropped from a listen and answers `-32602 resource is not subscribable` to a
   * legacy `resources/subscribe`; the owner's `canRead` runs before the endpoint's `canRead` and
   * `subscribeHook`. The owner's `changes` feed legacy sessions and, shared per URI on this node,
   * modern listens (a {@link hubResources} provider of this endpoint's hub needs no feed: listens
   * hear the hub). Defaults to `[hubResources(hub)]`: every URI, readable by everyone, changes
   * from `hub.notifyResourceUpdated(uri)`. An empty list makes no URI subscribable.
   */
  readonly resourceProviders?: readonly ResourceProvider[];
  /**
   * Who the server is: the legacy `initialize` result's `serverInfo`, and
   * `_meta["io.modelcontextprotocol/serverInfo"]` of the `server/discover` result (2026-07-28).
   * Defaults to `{ name: 'mcp-rx-streams', version: '0.1.0' }`.
   */
  readonly serverInfo?: ServerInfo;
  /** The `instructions` of the `initialize` and `server/discover` results; default none. */
  readonly instructions?: string;
  /**
   * More capabilities to advertise next to tools/prompts/resources (e.g. `{ logging: {} }`), in the
   * `initialize` and `server/discover` results alike; default none.
   */
  readonly extraCapabilities?: Readonly<Record<string, unknown>>;
  /**
   * Milliseconds a legacy `resources/subscribe` that finds no live GET stream waits for one to
   * open before answering `-32602` (official clients open the GET without waiting for it, so
   * their first subscribe can overtake it). 0 answers at once. Defaults to 1000.
   */
  readonly subscribeStreamWait?: number;
}

/**
 * The protocol core's own options that are values, beside the listen options, the stream limits and
 * the legacy session options: the request body's size, the wait told to a client refused for
 * capacity, and what an empty listen gets. Each in milliseconds or bytes as it says.
 */
export interface ProtocolSettings {
  /**
   * Largest accepted request body, in bytes as received (never the decoded text); larger ones get
   * HTTP 413. A body that is not UTF-8 gets HTTP 400 with `-32700`, whatever its size. Defaults to
   * 1 048 576 (1 MiB).
   */
  readonly maxBodyBytes: number;
  /**
   * Milliseconds a client refused for capacity (HTTP 503: a listen or GET stream beyond
   * `maxStreams`, an `initialize` beyond `maxSessions`) is told to wait before trying again: sent
   * as `Retry-After` in whole seconds (rounded up) and as `error.data.retryAfterMs`. A closed
   * endpoint's 503 (shutting down) carries neither. Defaults to 5000.
   */
  readonly capacityRetryAfter: number;
  /**
   * What a listen whose acknowledged filter is empty gets (nothing asked for was honoured: no
   * field, or every URI refused). `'hold'`: the stream stays open like any other until its idle
   * timeout, lifetime or a close (DESIGN M2), which is what the protocol describes and what a
   * long-running client that adds nothing later expects. `'complete'`: the empty acknowledgment
   * and then the listen result (`resultType: "complete"`) at once, and the response ends, taking
   * no slot: pick it on serverless platforms, where an open response is a billed invocation and a
   * client that asked for nothing gains nothing by holding one (stop reason `empty_filter`).
   * Defaults to `'hold'`.
   */
  readonly emptyListen: EmptyListen;
}

/** What a listen with an empty acknowledged filter gets; see {@link ProtocolSettings.emptyListen}. */
export type EmptyListen = 'hold' | 'complete';

/** Default of {@link ProtocolSettings.maxBodyBytes}: 1 048 576 bytes (1 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/** Default of {@link ProtocolSettings.capacityRetryAfter}: 5000 milliseconds. */
export const DEFAULT_CAPACITY_RETRY_AFTER = 5_000;

/**
 * {@link ProtocolSettings}, declared once (see `LISTEN_OPTIONS`): checked here, accepted by the
 * reference server, and `serve` flags.
 * @internal
 */
export const PROTOCOL_SETTINGS: OptionTable<ProtocolSettings> = {
  maxBodyBytes: option.bytes({ default: DEFAULT_MAX_BODY_BYTES, description: 'largest request body; larger ones get HTTP 413' }),
  capacityRetryAfter: option.milliseconds({
    default: DEFAULT_CAPACITY_RETRY_AFTER,
    description: 'how long a client refused with HTTP 503 (--max-streams, --max-sessions) is told to wait: Retry-After and data.retryAfterMs',
  }),
  emptyListen: option.choice<EmptyListen>(['hold', 'complete'], {
    default: 'hold',
    description: 'a listen that honoured nothing: hold it open like any other, or answer the empty acknowledgment and the result at once (hold | complete; complete suits serverless hosts)',
  }),
};

/** The options of {@link ProtocolOptions} that are not values of a table: the hub, the hooks and the parts it is wired to. */
const PROTOCOL_WIRING: readonly (keyof ProtocolOptions)[] = [
  'hub', 'capabilities', 'authenticate', 'canRead', 'subscribeHook', 'methods', 'principals', 'slots', 'scheduler', 'legacy',
  'sessionStore', 'eventLog', 'sessionBus', 'resourceProviders', 'serverInfo', 'instructions', 'extraCapabilities',
];

/** Every option name {@link ProtocolOptions} has: any other key is refused, so that a typo is not silently ignored. */
export const PROTOCOL_OPTIONS: readonly (keyof ProtocolOptions)[] = [
  ...PROTOCOL_WIRING,
  ...namesOf(LISTEN_OPTIONS),
  // The former names of listen options, still read as the new ones (`formerly` in their entries).
  ...Object.values(LISTEN_OPTIONS).flatMap((spec) => (spec.formerly === undefined ? [] : [spec.formerly as keyof DeprecatedListenOptions])),
  ...namesOf(STREAM_LIMITS),
  ...namesOf(PROTOCOL_SETTINGS),
  ...namesOf(SESSION_OPTIONS),
];

/** What the endpoint may advertise (`capabilities`). */
const CAPABILITIES: readonly (keyof ServerCapabilities)[] = ['tools', 'prompts', 'resources', 'tasks'];

/**
 * {@link ProtocolOptions} with every default filled in and every value checked.
 * @internal
 */
export interface ResolvedProtocolOptions extends ProtocolSettings {
  readonly listenOptions: Readonly<ListenOptions>;
  readonly limits: Readonly<StreamLimits>;
  readonly capabilities: ServerCapabilities;
  readonly scheduler: SchedulerLike;
  readonly sessionOptions: Readonly<SessionOptions>;
  readonly serverInfo: ServerInfo;
  readonly extraCapabilities: Readonly<Record<string, unknown>>;
}

/** A {@link ServerInfo}: the `name` and `version` strings the clients are told. */
function serverInfo(label: string, value: unknown): void {
  const info = object<Partial<Record<keyof ServerInfo, unknown>>>(label, value, "an object like { name: 'files', version: '1.2.0' }");
  string(`${label}.name`, info.name);
  string(`${label}.version`, info.version);
}

/**
 * Checks the protocol core's options and fills in the defaults (DESIGN M13); a front's own options
 * (`known`, beside {@link PROTOCOL_OPTIONS}) are the front's to check.
 * @throws InvalidOptionError naming `label` when `options` is not an object (a Hub given instead is
 *   told to pass `{ hub }`), else the first option that is unknown or has a value the library
 *   cannot use, or a former name (`listenMaxQueue`, `listenMaxQueueBytes`) given beside its new one
 *   with another value.
 * @internal
 */
export function resolveProtocolOptions(options: ProtocolOptions, label: string, known: readonly string[]): ResolvedProtocolOptions {
  validOptions(label, options, known, { like: '{ hub }' });
  hub('hub', options.hub);
  const listenOptions = Object.freeze(readOptions(LISTEN_OPTIONS, options));
  const limits = Object.freeze(readOptions(STREAM_LIMITS, options));
  const capabilities = options.capabilities === undefined ? { tools: true, prompts: true, resources: true } : flags('capabilities', options.capabilities, CAPABILITIES);
  for (const name of ['authenticate', 'canRead', 'subscribeHook'] as const) if (options[name] !== undefined) callback(name, options[name]);
  if (options.methods !== undefined) functions('methods', options.methods, 'a MethodHandler per JSON-RPC method name');
  if (options.principals !== undefined) implementing('principals', options.principals, ['admit', 'count'], 'a PrincipalCap (admit, count), e.g. a PrincipalRegistry or a RedisPrincipalCap');
  if (options.slots !== undefined) implementing('slots', options.slots, ['tryAcquire'], 'a StreamSlots (for a number of slots, give maxStreams)');
  const { maxBodyBytes, capacityRetryAfter, emptyListen } = readOptions(PROTOCOL_SETTINGS, options);
  const scheduler = options.scheduler === undefined ? asyncScheduler : validScheduler<SchedulerLike>('scheduler', options.scheduler);
  const sessionOptions = Object.freeze(readOptions(SESSION_OPTIONS, options));
  if (options.legacy !== undefined) boolean('legacy', options.legacy);
  if (options.resourceProviders !== undefined) arrayOf('resourceProviders', options.resourceProviders, 'an array of ResourceProvider', resourceProvider);
  if (options.eventLog !== undefined && typeof options.eventLog !== 'function') throw new InvalidOptionError('eventLog', 'a function of a session id', options.eventLog);
  if (options.sessionBus !== undefined) {
    const bus = implementing<SessionBus>('sessionBus', options.sessionBus, ['publish', 'connect'], 'a SessionBus (nodeId, publish, connect), e.g. a RedisSessionBus');
    string('sessionBus.nodeId', bus.nodeId, { what: "a string (this node's id in the fleet)" });
  }
  if (options.sessionStore !== undefined) {
    implementing('sessionStore', options.sessionStore, ['create', 'get', 'update', 'delete', 'idleSince'], 'a SessionStore (create, get, update, delete, idleSince), e.g. a MemorySessionStore or a RedisSessionStore');
  }
  if (options.serverInfo !== undefined) serverInfo('serverInfo', options.serverInfo);
  if (options.instructions !== undefined) string('instructions', options.instructions);
  if (options.extraCapabilities !== undefined) object('extraCapabilities', options.extraCapabilities, 'an object of capabilities, e.g. { logging: {} }');
  return {
    listenOptions,
    limits,
    capabilities,
    maxBodyBytes,
    capacityRetryAfter,
    emptyListen,
    scheduler,
    sessionOptions,
    serverInfo: options.serverInfo ?? DEFAULT_SERVER_INFO,
    extraCapabilities: options.extraCapabilities ?? {},
  };
}
