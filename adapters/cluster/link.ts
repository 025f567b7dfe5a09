// A worker's end of the channel to the primary: messages out (batched), requests with their
// replies, and the primary's messages handed to the part that handles their kind.
import { McpRxError } from '../../lib/errors.js';
import { reportError } from '../../lib/telemetry.js';
import { batchOf, type CallName, type Calls, Outbox, type Port, type PrimaryMessage, type WorkerMessage } from './protocol.js';

/**
 * Thrown (as a rejection) by a request to the primary that the primary refused, or that cannot
 * reach it any more (its channel closed: the worker is leaving, or the primary died).
 */
export class ClusterError extends McpRxError {
  override readonly name = 'ClusterError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_CLUSTER';
  /** The request (`slot`, `store.get`…) and, for a refusal at the machine's `maxSessions`, `capacity: true`. */
  override readonly info: { readonly op: string; readonly capacity?: true };

  constructor(op: string, message: string, capacity?: true) {
    super(`cluster ${op}: ${message}`);
    this.info = capacity === undefined ? { op } : { op, capacity };
  }
}

type Handlers = { [K in PrimaryMessage['k']]?: (message: Extract<PrimaryMessage, { k: K }>) => void };

/** What a worker's `process` is to the link: a port with `'message'` and `'disconnect'` events. @internal */
export interface WorkerPort extends Port {
  on(event: 'message' | 'disconnect', listener: (message: unknown) => void): unknown;
  off(event: 'message' | 'disconnect', listener: (message: unknown) => void): unknown;
}

/** @internal */
export class WorkerLink {
  readonly #port: WorkerPort;
  readonly #outbox: Outbox<WorkerMessage>;
  readonly #calls = new Map<number, { readonly op: string; resolve(value: unknown): void; reject(error: unknown): void }>();
  readonly #handlers: Handlers = {};
  #nextCall = 0;
  #closed = false;

  constructor(port: WorkerPort) {
    this.#port = port;
    this.#outbox = new Outbox(port, () => this.#lost());
    port.on('message', this.#receive);
    port.on('disconnect', this.#disconnected);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Which outgoing batch a message sent now travels in (see `Outbox.batch`). */
  get batch(): number {
    return this.#outbox.batch;
  }

  send(message: WorkerMessage): void {
    if (!this.#closed) this.#outbox.push(message);
  }

  call<K extends CallName>(op: K, args: Calls[K][0]): Promise<Calls[K][1]> {
    if (this.#closed) return Promise.reject(new ClusterError(op, 'this worker has left the cluster'));
    const id = ++this.#nextCall;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { op, resolve: resolve as (value: unknown) => void, reject });
      this.#outbox.push({ k: 'call', id, op, a: args });
    });
  }

  /** Hands the primary's messages of kind `kind` to `handler` (one handler a kind). */
  on<K extends PrimaryMessage['k']>(kind: K, handler: (message: Extract<PrimaryMessage, { k: K }>) => void): void {
    (this.#handlers as Record<string, unknown>)[kind] = handler;
  }

  /** Sends what is batched, stops listening and fails the requests still waiting. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#outbox.flush();
    this.#closed = true;
    this.#port.off('message', this.#receive);
    this.#port.off('disconnect', this.#disconnected);
    this.#failCalls('this worker has left the cluster');
  }

  readonly #receive = (value: unknown) => {
    const batch = batchOf<PrimaryMessage>(value);
    if (batch === undefined) return;
    for (const message of batch) {
      try {
        if (message.k === 'reply') this.#reply(message);
        else (this.#handlers[message.k] as ((message: PrimaryMessage) => void) | undefined)?.(message);
      } catch (error) {
        reportError('source', error);
      }
    }
  };

  #reply(message: Extract<PrimaryMessage, { k: 'reply' }>): void {
    const call = this.#calls.get(message.id);
    if (call === undefined) return;
    this.#calls.delete(message.id);
    if (message.err === undefined) call.resolve(message.v ?? null);
    else call.reject(new ClusterError(call.op, message.err.message, message.err.capacity));
  }

  readonly #disconnected = () => this.#lost();

  /** The channel to the primary is gone (node:cluster then ends this process): nothing will answer. */
  #lost(): void {
    this.#failCalls('the channel to the primary is closed');
  }

  #failCalls(why: string): void {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) call.reject(new ClusterError(call.op, why));
  }
}
