import { Observable, Subject, type Subscriber } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { options as validOptions } from '../../lib/validate.js';
import { highWaterMark, messageChannel } from './check.js';
import type { ChannelInput, MessageChannel } from './channel.js';

/** Options of {@link channelPair}. */
export interface ChannelPairOptions {
  /**
   * Bytes of messages one end may hold unread for the other before its `send` says `false`; defaults
   * to 65 536 (the WebSocket and stdio channels' mark). A paused end so makes its peer's streams
   * hold their notifications in their bounded queues, as a host that stops reading stdout does.
   */
  readonly highWaterMark?: number;
}

/**
 * One end of an in-process channel (see {@link channelPair}): a {@link MessageChannel}, plus a way
 * to stop reading, as a host that stops reading a pipe does.
 */
export interface PairEnd extends MessageChannel {
  /** Stops delivering what the other end sends: it waits in this end's inbox (the other end's `send` says `false` past the mark). */
  pause(): void;
  /** Delivers what waits, and what comes next, again. */
  resume(): void;
  /** Bytes waiting in this end's inbox (what the other end sent that this end has not read). */
  readonly unread: number;
}

/**
 * Two connected in-process {@link MessageChannel} ends: what one sends, the other receives, as JSON
 * text, in order, one event-loop turn later (never inside `send`, as with a real transport). For
 * tests, and for embedding a server in the process of its client: serve one end
 * (`serveChannel(endpoint, server)`) and speak on the other, or hand it to the official client with
 * {@link channelTransport}.
 *
 * Each end has an inbox; `send` returns `false` once the peer's inbox holds `highWaterMark` bytes,
 * and `drain$` emits when the peer has read it below that again. `close()` on either end ends both:
 * each end still reads what was sent before (unless paused), then its `incoming` completes.
 *
 * @example
 * const [client, server] = channelPair();
 * serveChannel(new McpEndpoint({ hub }), server);
 * client.incoming.subscribe((message) => console.log(message));
 * client.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' }));
 * @param options `highWaterMark` in bytes; defaults to 65 536.
 * @returns `[client, server]`: the two ends (the names are only a convention; the ends are alike).
 * @see serveChannel
 * @see channelTransport
 */
export function channelPair(options?: ChannelPairOptions): [PairEnd, PairEnd] {
  const mark = highWaterMark(validOptions('channelPair options', options, ['highWaterMark']).highWaterMark) ?? 65_536;
  const a = new End(mark);
  const b = new End(mark);
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class End implements PairEnd {
  peer!: End;
  readonly incoming: Observable<ChannelInput>;
  readonly drain$ = new Subject<void>();
  #inbox: string[] = [];
  #unread = 0;
  #paused = false;
  #scheduled = false;
  /** The pair was closed: deliver what waits, then complete. */
  #closing = false;
  #done = false;
  /** This end said `false` to a send and owes a drain. */
  #owesDrain = false;
  #reader: Subscriber<ChannelInput> | undefined;

  constructor(private readonly highWaterMark: number) {
    this.incoming = new Observable<ChannelInput>((subscriber) => {
      if (this.#reader !== undefined) {
        subscriber.error(new InvalidOptionError('incoming', 'subscribed once', 'a second subscription'));
        return;
      }
      this.#reader = subscriber;
      this.#schedule();
      return () => {
        this.#reader = undefined;
      };
    });
  }

  get unread(): number {
    return this.#unread;
  }

  send(json: string): boolean {
    return this.peer.#take(json);
  }

  /** What the peer sent; returns whether the peer may send more now. */
  #take(json: string): boolean {
    if (this.#closing || this.#done) return true;
    this.#inbox.push(json);
    this.#unread += Buffer.byteLength(json);
    this.#schedule();
    if (this.#unread < this.highWaterMark) return true;
    this.#owesDrain = true;
    return false;
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#schedule();
  }

  close(): void {
    this.#end();
    this.peer.#end();
  }

  #end(): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#paused || this.#reader === undefined) return;
    this.#scheduled = true;
    setImmediate(() => this.#deliver());
  }

  #deliver(): void {
    this.#scheduled = false;
    const reader = this.#reader;
    while (reader !== undefined && !this.#paused && this.#inbox.length > 0 && !reader.closed) {
      const json = this.#inbox.shift()!;
      this.#unread -= Buffer.byteLength(json);
      reader.next(json);
    }
    if (this.#owesDrain && this.#unread < this.highWaterMark) {
      this.#owesDrain = false;
      this.peer.drain$.next();
    }
    if (this.#closing && this.#inbox.length === 0 && !this.#done && reader !== undefined && !this.#paused) {
      this.#done = true;
      reader.complete();
    }
  }
}

/**
 * The transport shape of the official MCP SDKs (`Transport` of `@modelcontextprotocol/client` 2.x
 * and `@modelcontextprotocol/sdk` 1.x), restated so that nothing here loads an SDK.
 */
export interface SdkTransport {
  start(): Promise<void>;
  send(message: unknown): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: any) => void) | undefined;
}

/**
 * An official SDK client's (or server's) transport over a {@link MessageChannel}: the end of a
 * {@link channelPair} that the server does not serve, a WebSocket client's channel, any channel.
 * `send` waits for the channel's drain when it says it is full, as the SDK's stdio transport waits
 * for stdin's.
 *
 * @example
 * const [clientEnd, serverEnd] = channelPair();
 * serveChannel(endpoint, serverEnd);
 * const client = new Client({ name: 'me', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
 * await client.connect(channelTransport(clientEnd));
 * @param channel the client's end.
 * @see channelPair
 */
export function channelTransport(channel: MessageChannel): SdkTransport {
  messageChannel('channelTransport channel', channel);
  let closed = false;
  const transport: SdkTransport = {
    async start() {
      channel.incoming.subscribe({
        next: (input) => {
          try {
            const text = typeof input === 'string' ? input : input instanceof Uint8Array ? Buffer.from(input).toString('utf8') : undefined;
            transport.onmessage?.(text === undefined ? (input as { parsed?: unknown }).parsed : JSON.parse(text));
          } catch (error) {
            transport.onerror?.(error instanceof Error ? error : new Error(String(error)));
          }
        },
        error: (error: unknown) => transport.onerror?.(error instanceof Error ? error : new Error(String(error))),
        complete: () => {
          if (closed) return;
          closed = true;
          transport.onclose?.();
        },
      });
    },
    async send(message) {
      if (closed) throw new Error('the channel is closed');
      if (!channel.send(JSON.stringify(message))) {
        await new Promise<void>((resolve) => {
          const drained = channel.drain$.subscribe(() => {
            drained.unsubscribe();
            resolve();
          });
        });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      channel.close();
      transport.onclose?.();
    },
  };
  return transport;
}
