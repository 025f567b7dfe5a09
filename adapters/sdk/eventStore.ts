// `Last-Event-ID` replay for servers built on the official SDK 1.x (`@modelcontextprotocol/sdk`):
// the `eventStore` its StreamableHTTPServerTransport takes, backed by this library's event logs.
// Typed structurally, so nothing here loads (or needs) the SDK.
import { InvalidOptionError } from '../../lib/errors.js';
import type { EncodedMessage, MessageFrame } from '../../lib/frame.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { isThenable, ReplayBuffer, type EventLog } from '../../lib/replayBuffer.js';
import { options as validOptions, string } from '../../lib/validate.js';

/**
 * The SDK 1.x transport's name for a session's standalone GET stream (every other stream it opens
 * is a POST's, named by a fresh UUID). {@link replayEventStore} never evicts this one.
 */
export const STANDALONE_STREAM_ID = '_GET_stream';

/**
 * The `EventStore` interface of `@modelcontextprotocol/sdk` 1.x
 * (`@modelcontextprotocol/sdk/server/streamableHttp.js`), restated so that this module needs no
 * SDK at run time: an object of this type is what `new StreamableHTTPServerTransport({ eventStore })`
 * takes.
 *
 * Event ids are `<streamId>:<n>`: the SDK's stream id, then a per-stream decimal counter (1, 2, …).
 * The stream of any id can be read from the id itself, so a cursor older than what is kept still
 * resumes the right stream.
 */
export interface SdkEventStore {
  /** Records `message` (a JSON-RPC message, or `{}` for a priming event) on `streamId`; resolves with its event id (`<streamId>:<n>`). */
  storeEvent(streamId: string, message: object): Promise<string>;
  /** The stream an event id belongs to; `undefined` for an id this store did not make (the SDK answers 400). */
  getStreamIdForEventId(eventId: string): Promise<string | undefined>;
  /** Sends, oldest first, the recorded messages of `lastEventId`'s stream that came after it; resolves with that stream's id. */
  replayEventsAfter(lastEventId: string, sink: { send: (eventId: string, message: object) => Promise<void> }): Promise<string>;
}

/** Options of {@link replayEventStore}. */
export interface ReplayEventStoreOptions {
  /** Messages kept per stream, a positive integer count; defaults to 100 (as the endpoint's `replayBufferSize`). */
  readonly capacity?: number;
  /**
   * Streams kept per transport, a positive integer count; defaults to 32. Past it, the stream that
   * was written least recently is forgotten (a POST's, long answered); the GET stream
   * ({@link STANDALONE_STREAM_ID}) is always kept.
   */
  readonly maxStreams?: number;
}

/**
 * An in-memory `eventStore` for one SDK 1.x transport: every stream keeps its last `capacity`
 * messages in a {@link ReplayBuffer}, and at most `maxStreams` streams are kept, so a session costs
 * a bounded amount of memory however long it lives.
 *
 * Make one per transport (per session): the SDK names every session's GET stream alike, so a store
 * shared by several transports would mix their GET streams. A `Last-Event-ID` older than the oldest
 * kept message replays all that is kept (the older ones are gone); one at or past the newest
 * replays nothing.
 *
 * @example
 * import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
 * const transport = new StreamableHTTPServerTransport({
 *   sessionIdGenerator: () => randomUUID(),
 *   eventStore: replayEventStore({ capacity: 100 }),
 * });
 * @param options `capacity` (messages per stream, default 100) and `maxStreams` (default 32).
 * @throws InvalidOptionError naming `replayEventStore options` when `options` is not an object, else
 *   the option that is unknown or not a positive integer.
 * @see eventLogStore for a store a fleet shares (on Redis).
 */
export function replayEventStore(options: ReplayEventStoreOptions = {}): SdkEventStore {
  const given = validOptions<keyof ReplayEventStoreOptions>('replayEventStore options', options, ['capacity', 'maxStreams']);
  const capacity = count('capacity', given.capacity, 100);
  const maxStreams = count('maxStreams', given.maxStreams, 32);
  // Insertion order is recency: a stream written to moves to the end, the first is the stalest.
  const buffers = new Map<string, ReplayBuffer>();
  return new LogEventStore((streamId, create) => {
    let buffer = buffers.get(streamId);
    if (!create) return buffer;
    if (buffer !== undefined) buffers.delete(streamId);
    else {
      buffer = new ReplayBuffer(capacity);
      evict(buffers, maxStreams - 1);
    }
    buffers.set(streamId, buffer);
    return buffer;
  });
}

function evict(buffers: Map<string, ReplayBuffer>, keep: number): void {
  for (const streamId of buffers.keys()) {
    if (buffers.size <= keep) return;
    if (streamId !== STANDALONE_STREAM_ID) buffers.delete(streamId);
  }
}

/**
 * An `eventStore` for one session of an SDK 1.x server, over event logs that several nodes share:
 * `eventLogs` is what `redisEventLogs({ redis })` (from `mcp-rx-streams/redis`) returns, or any
 * function of a key giving an {@link EventLog}. Each stream of the session gets the log keyed
 * `<sessionId>/<streamId>`, bounded and expiring as that log is (Redis: `capacity` messages,
 * `ttl` after the last write). So a client cut off from one node resumes on another with
 * `Last-Event-ID` and is sent exactly what it missed, whichever node recorded it.
 *
 * @example
 * import { redisEventLogs } from 'mcp-rx-streams/redis';
 * const eventLogs = redisEventLogs({ redis: process.env.REDIS_URL!, capacity: 100 });
 * await eventLogs.ready();
 * const sessionId = randomUUID();
 * const transport = new StreamableHTTPServerTransport({
 *   sessionIdGenerator: () => sessionId,
 *   eventStore: eventLogStore(eventLogs, sessionId),
 * });
 * @param eventLogs gives the log of a key; called once per stream and call.
 * @param sessionId the session's `Mcp-Session-Id` (what keeps sessions apart in the shared logs).
 * @throws InvalidOptionError when `eventLogs` is not a function or `sessionId` is not a non-empty string.
 * @see replayEventStore for a single process.
 */
export function eventLogStore(eventLogs: (key: string) => EventLog, sessionId: string): SdkEventStore {
  if (typeof eventLogs !== 'function') throw new InvalidOptionError('eventLogs', 'a function of a key giving an EventLog (e.g. redisEventLogs(...))', eventLogs);
  string('sessionId', sessionId, { nonEmpty: true });
  return new LogEventStore((streamId) => eventLogs(`${sessionId}/${streamId}`));
}

/** Where a stream's log is: made when `create` is true, else `undefined` when there is none. */
type LogOf = (streamId: string, create: boolean) => EventLog | undefined;

const EVENT_ID = /^(.+):([0-9]+)$/;
// SSE `id:` lines and the Last-Event-ID header carry the stream id: visible ASCII only.
const STREAM_ID = /^[\x21-\x7e]+$/;

class LogEventStore implements SdkEventStore {
  constructor(private readonly logOf: LogOf) {}

  async storeEvent(streamId: string, message: object): Promise<string> {
    if (typeof streamId !== 'string' || !STREAM_ID.test(streamId)) {
      throw new TypeError(`an event store's stream id must be visible ASCII, got ${JSON.stringify(streamId)}`);
    }
    const plain = JSON.stringify(message);
    // The SDK stores `{}` for the priming event that opens a stream: it takes an id, and is never replayed.
    const encoded: EncodedMessage = { plain, head: plain, tail: '' };
    const frame: MessageFrame = { type: 'message', message: message as JsonRpcMessage, priority: 'notification', encoded };
    const appended = this.logOf(streamId, true)!.append(frame);
    const stamped = isThenable(appended) ? await appended : appended;
    return `${streamId}:${stamped.eventId}`;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return parse(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, sink: { send: (eventId: string, message: object) => Promise<void> }): Promise<string> {
    const cursor = parse(lastEventId);
    // The SDK asks getStreamIdForEventId first and answers 400 itself for a foreign id.
    if (cursor === undefined) throw new TypeError(`not an event id of this store: ${JSON.stringify(lastEventId)}`);
    const log = this.logOf(cursor.streamId, false);
    const read = log?.after(cursor.n) ?? [];
    const frames = isThenable(read) ? await read : read;
    for (const frame of frames) {
      if ((frame.message as { jsonrpc?: unknown }).jsonrpc === undefined) continue;
      await sink.send(`${cursor.streamId}:${frame.eventId}`, frame.message);
    }
    return cursor.streamId;
  }
}

function parse(eventId: string): { readonly streamId: string; readonly n: string } | undefined {
  const match = typeof eventId === 'string' ? EVENT_ID.exec(eventId) : null;
  if (match === null || !STREAM_ID.test(match[1]!)) return undefined;
  return { streamId: match[1]!, n: match[2]! };
}

function count(option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) <= 0) throw new InvalidOptionError(option, 'a positive integer count', value);
  return value as number;
}
