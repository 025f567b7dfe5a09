// What `McpEndpoint.streams()` answers: one plain object per open listen stream and per legacy
// session, built when asked from what each stream already holds (no bookkeeping per frame).
import { filterNames, type FilterName, type ListenFilter } from '../lib/filter.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';

/** Options of `McpEndpoint.streams()`. */
export interface StreamsOptions {
  /**
   * Include the resource URIs and task ids each stream listens to (`filter.uris`, `filter.tasks`);
   * default `false`: counts only. A snapshot with URIs says what every caller watches: treat it as
   * the callers' data.
   */
  readonly uris?: boolean;
}

/** What a stream listens to: the acknowledged filter of a listen, the subscriptions of a legacy session. */
export interface StreamFilterInfo {
  /** The kinds it listens to (`tools_list_changed`, …, `resource_subscriptions`, `task_ids`), as telemetry names them. */
  readonly names: readonly FilterName[];
  /** How many resource URIs it is subscribed to. */
  readonly resourceSubscriptions: number;
  /** How many task ids it listens to (listen streams only; 0 for legacy sessions). */
  readonly taskIds: number;
  /** The resource URIs, only with `{ uris: true }`. */
  readonly uris?: readonly string[];
  /** The task ids, only with `{ uris: true }`. */
  readonly tasks?: readonly string[];
}

/** What the snapshot tells of every stream, whatever its era. */
interface StreamInfoBase {
  /** The principal the stream was admitted for (authenticated id, or address bucket). */
  readonly principal: string;
  /** When the stream opened, in milliseconds since the epoch (legacy: its current GET stream; `null` when it has none open). */
  readonly openedAt: number | null;
  readonly filter: StreamFilterInfo;
  /** Frames held right now for a client that is not reading (control frames included). */
  readonly queuedFrames: number;
  /** Bytes of those frames, as they will be written. */
  readonly queuedBytes: number;
  /** Notifications dropped for this stream since it opened: its queue was full (`maxStreamQueue`, `maxStreamQueueBytes`). */
  readonly dropped: number;
  /** Notifications this stream's queue discarded since it opened because an identical one was held. */
  readonly coalesced: number;
}

/** An open `subscriptions/listen` stream (modern era). */
export interface ListenStreamInfo extends StreamInfoBase {
  readonly era: 'modern';
  /** The stream's id on this endpoint (`listen-<n>`), what `closeStream` takes. */
  readonly id: string;
  /** The listen request's id, as the client sent it (every frame of the stream is tagged with it). */
  readonly requestId: JsonRpcId;
  readonly openedAt: number;
  /**
   * When the stream last passed a notification on to its client (written, or queued for it), in
   * milliseconds since the epoch; `openedAt` until the first one. The idle timeout counts from it.
   */
  readonly lastNotificationAt: number;
}

/** A legacy session held on this node, with its GET stream when one is open (legacy era). */
export interface SessionInfo extends StreamInfoBase {
  readonly era: 'legacy';
  /** The session id (`Mcp-Session-Id`), what `closeStream` takes. */
  readonly id: string;
  /** The protocol revision its `initialize` negotiated. */
  readonly protocolVersion: string;
  /** When the session was last active (a request, or its live GET stream), in milliseconds since the epoch. */
  readonly lastActivity: number;
  /** Whether its GET stream is open on this node; the queue fields are 0 when not. */
  readonly streamOpen: boolean;
}

/** One entry of the snapshot `McpEndpoint.streams()` returns. */
export type StreamInfo = ListenStreamInfo | SessionInfo;

/** The filter info of a listen's acknowledged filter. @internal */
export function listenFilterInfo(filter: ListenFilter, options: StreamsOptions): StreamFilterInfo {
  const uris = filter.resourceSubscriptions;
  const tasks = filter.taskIds;
  const names = filterNames(filter);
  if (options.uris !== true) return { names, resourceSubscriptions: uris?.length ?? 0, taskIds: tasks?.length ?? 0 };
  return { names, resourceSubscriptions: uris?.length ?? 0, taskIds: tasks?.length ?? 0, uris: uris ?? [], tasks: tasks ?? [] };
}

/** The filter info of a legacy session: the list changes it hears and its subscribed URIs. @internal */
export function sessionFilterInfo(lists: readonly FilterName[], uris: readonly string[], options: StreamsOptions): StreamFilterInfo {
  const names = uris.length === 0 ? lists : [...lists, 'resource_subscriptions' as const];
  if (options.uris !== true) return { names, resourceSubscriptions: uris.length, taskIds: 0 };
  return { names, resourceSubscriptions: uris.length, taskIds: 0, uris, tasks: [] };
}
