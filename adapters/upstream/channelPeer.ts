// The client end of a message channel (stdio to a child process, a WebSocket, an in-process pair):
// requests matched to their answers by id, 2026-07-28 listens told apart by their subscription id,
// and the other notifications (a legacy session's) on one Subject.
import { AsyncSubject, Observable, Subject, type Subscriber, type Subscription } from 'rxjs';
import { type JsonRpcId, type JsonRpcMessage, type JsonRpcNotification, SUBSCRIPTION_ID_META_KEY, tryParseJson } from '../../lib/jsonrpc.js';
import type { ChannelInput, MessageChannel } from '../channel/channel.js';
import { UpstreamError } from './errors.js';
import { rpcErrorOf } from './http.js';

interface Pending {
  resolve(result: Record<string, unknown>): void;
  reject(error: unknown): void;
}

/**
 * JSON-RPC over a {@link MessageChannel}, as a client: what an upstream reached over stdio (or any
 * channel) is asked through. The channel is subscribed once, at construction; when it ends, every
 * request in flight rejects, every stream errors and {@link ChannelPeer.ended} emits.
 * @internal
 */
export class ChannelPeer {
  /** Notifications that belong to no listen (a legacy session's `resources/updated`, list changes). */
  readonly notifications = new Subject<JsonRpcNotification>();
  /** Emits why and completes when the channel has ended (also to a subscriber that comes later). */
  readonly ended = new AsyncSubject<UpstreamError>();
  readonly #pending = new Map<JsonRpcId, Pending>();
  readonly #streams = new Map<JsonRpcId, Subscriber<JsonRpcMessage>>();
  readonly #incoming: Subscription;
  #nextId = 1;
  #done: UpstreamError | undefined;

  constructor(
    private readonly upstream: string,
    private readonly channel: MessageChannel,
    /** Called for every message received (telemetry). */
    private readonly onMessage: () => void = noop,
  ) {
    this.#incoming = channel.incoming.subscribe({
      next: (input) => this.#receive(input),
      error: (error: unknown) => this.#end(error),
      complete: () => this.#end(undefined),
    });
  }

  /** Sends a request; resolves with its result, rejects with an {@link UpstreamError} for an error answer or the channel's end. */
  request(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.#done !== undefined) return Promise.reject(this.#done);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.channel.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Sends a notification. */
  notify(method: string, params?: Record<string, unknown>): void {
    if (this.#done === undefined) this.channel.send(JSON.stringify(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params }));
  }

  /**
   * A request whose answer is a stream (2026-07-28 `subscriptions/listen`): emits each message tagged
   * with its id (`_meta["io.modelcontextprotocol/subscriptionId"]`), then its result, and completes;
   * an error answer is an {@link UpstreamError}. Unsubscribing before the result sends
   * `notifications/cancelled` for it, which ends it on the server.
   */
  stream(method: string, params: Record<string, unknown>): Observable<JsonRpcMessage> {
    return new Observable<JsonRpcMessage>((subscriber) => {
      if (this.#done !== undefined) return subscriber.error(this.#done);
      const id = this.#nextId++;
      this.#streams.set(id, subscriber);
      this.channel.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return () => {
        if (this.#streams.get(id) !== subscriber) return;
        this.#streams.delete(id);
        this.notify('notifications/cancelled', { requestId: id, reason: 'the gateway no longer needs this stream' });
      };
    });
  }

  /** Ends the channel (and so every request and stream on it). */
  close(): void {
    this.channel.close();
  }

  #receive(input: ChannelInput): void {
    const message = parse(input);
    if (message === undefined) return;
    this.onMessage();
    const { id, method } = message as { id?: JsonRpcId; method?: unknown };
    if (typeof method === 'string') {
      // A request from the server: a ping is answered, anything else is not served by a gateway.
      if (id !== undefined && id !== null) return this.#answer(id, method);
      const tag = ((message as JsonRpcNotification).params?._meta as Record<string, unknown> | undefined)?.[SUBSCRIPTION_ID_META_KEY];
      const stream = tag === undefined ? undefined : this.#streams.get(tag as JsonRpcId);
      if (stream !== undefined) return stream.next(message);
      if (tag === undefined) this.notifications.next(message as JsonRpcNotification);
      return;
    }
    if (id === undefined || id === null) return;
    const stream = this.#streams.get(id);
    if (stream !== undefined) {
      this.#streams.delete(id);
      const error = rpcErrorOf(message);
      if (error !== undefined) return stream.error(new UpstreamError(`upstream ${this.upstream} refused the stream: JSON-RPC error ${error.code} "${error.message}"`, { upstream: this.upstream, error }));
      stream.next(message);
      return stream.complete();
    }
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    const error = rpcErrorOf(message);
    if (error !== undefined) pending.reject(new UpstreamError(`upstream ${this.upstream} answered JSON-RPC error ${error.code} "${error.message}"`, { upstream: this.upstream, error }));
    else pending.resolve(((message as { result?: unknown }).result ?? {}) as Record<string, unknown>);
  }

  #answer(id: JsonRpcId, method: string): void {
    this.channel.send(
      JSON.stringify(
        method === 'ping' ? { jsonrpc: '2.0', id, result: {} } : { jsonrpc: '2.0', id, error: { code: -32601, message: `method not served by a gateway's upstream client: ${method}` } },
      ),
    );
  }

  #end(cause: unknown): void {
    if (this.#done !== undefined) return;
    const done = (this.#done = new UpstreamError(`upstream ${this.upstream}: the channel ended${cause === undefined ? '' : `: ${cause instanceof Error ? cause.message : String(cause)}`}`, { upstream: this.upstream }, { cause }));
    this.#incoming?.unsubscribe();
    for (const pending of this.#pending.values()) pending.reject(done);
    this.#pending.clear();
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const stream of streams) stream.error(done);
    this.notifications.complete();
    this.ended.next(done);
    this.ended.complete();
  }
}

/** One channel input as a JSON-RPC message object; `undefined` for anything else (an oversized line, text that is not JSON). */
function parse(input: ChannelInput): JsonRpcMessage | undefined {
  let value: unknown;
  if (typeof input === 'string') value = tryParseJson(input);
  else if (input instanceof Uint8Array) value = tryParseJson(Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('utf8'));
  else if ('parsed' in input) value = input.parsed;
  else return undefined;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRpcMessage) : undefined;
}

function noop(): void {}
