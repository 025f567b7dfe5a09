import type { Observable } from 'rxjs';

/**
 * One message as a channel received it: its text, its bytes (decoded here as strict UTF-8), a
 * value the transport already parsed (`{ parsed }`: an in-process peer), or the mark of a message
 * the transport refused for its size without holding it (`{ oversized }`).
 */
export type ChannelInput = string | Uint8Array | { readonly parsed: unknown } | OversizedMessage;

/** A message longer than the channel's limit, discarded as it arrived: answered `-32600` with id `null`. */
export interface OversizedMessage {
  /** How many bytes were discarded (at least the limit plus one). */
  readonly oversized: number;
}

/**
 * A duplex channel of JSON-RPC messages: the seam every message transport implements (stdio, a
 * WebSocket, an in-process pair, yours). The endpoint serves every request on it and multiplexes
 * any number of `subscriptions/listen` streams over it (see `serveChannel`).
 *
 * The contract is Node's `Writable.write` for the way out and an Observable for the way in:
 * - `incoming` emits each message the peer sends, in order, and completes when the channel ends
 *   (stdin closed, the socket closed); an error ends it too. It is subscribed once.
 * - `send(json)` writes one message, one JSON text without a line break, and says whether the
 *   channel can take more now: `false` when what it buffers is past its high-water mark. The message
 *   is taken either way (the channel's own buffer holds it); the session then holds its streams'
 *   notifications in their bounded queues until `drain$` emits.
 * - `drain$` emits when a channel that said `false` can take more.
 * - `close()` ends the channel from this side (the server shuts down, the session is closed).
 *
 * @example
 * // A WebSocket (the `ws` package) as a channel: this is what `webSocketChannel` does.
 * const channel: MessageChannel = {
 *   incoming: new Observable((subscriber) => {
 *     socket.on('message', (data, isBinary) => subscriber.next(isBinary ? new Uint8Array(data as Buffer) : String(data)));
 *     socket.on('close', () => subscriber.complete());
 *   }),
 *   send: (json) => (socket.send(json), socket.bufferedAmount < 65_536),
 *   drain$: interval(10).pipe(filter(() => socket.bufferedAmount < 65_536)),
 *   close: () => socket.close(),
 * };
 * @see serveChannel
 */
export interface MessageChannel {
  /** What the peer sends, one message at a time; completes (or errors) when the channel ends. */
  readonly incoming: Observable<ChannelInput>;
  /**
   * Writes one message (JSON text, no line break) and returns whether the channel can take more
   * now; `false` asks the sender to wait for {@link drain$}. Never throws for a channel that has
   * ended: it drops the message.
   */
  send(json: string): boolean;
  /** Emits when the channel can take more after `send` returned `false`. */
  readonly drain$: Observable<unknown>;
  /** Ends the channel from this side; `incoming` then completes. Idempotent. */
  close(): void;
}
