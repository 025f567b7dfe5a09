// The messages between a cluster's primary and its workers over node:cluster's IPC channel, and the
// one way both ends send them: batched, one IPC message per microtask.
//
// Why batched: every IPC message is a JSON.stringify, a write on the pipe, a read and a JSON.parse
// on the other side. A hub publish that reaches 5 000 legacy sessions on a worker is 5 000 event-log
// appends; one message carrying all of them costs a fraction of 5 000 messages, and nothing is
// reordered: a batch is the messages of one synchronous run, in the order they were sent.
import type { TopicKind } from '../../lib/frame.js';
import type { HubEvent } from '../../lib/hub.js';
import type { SessionChanges, SessionCommand, SessionRecord } from '../../lib/session.js';
import { TurnBatch } from '../../lib/turn.js';

/** The key of every message of this library on the IPC channel (the application may use the channel too). */
export const ENVELOPE = 'mcp-rx-streams/cluster';

/**
 * One end of an IPC channel: a worker's `process`, or the primary's `cluster.Worker`. `send` takes
 * a callback so that a closed channel is an error handed to it, never an `'error'` event.
 * @internal
 */
export interface Port {
  send(message: unknown, callback: (error: Error | null) => void): unknown;
}

/** A message frame on the wire: its JSON (as written the first time), topic and coalescing key. @internal */
export type WireFrame = readonly [plain: string, topic: TopicKind | null, coalesceKey: string | null];

/** A logged frame on the wire: its event id, then as {@link WireFrame}. @internal */
export type LoggedFrame = readonly [eventId: string, plain: string, topic: TopicKind | null, coalesceKey: string | null];

/** What the primary tells a worker that says hello: its id and the machine's limits. @internal */
export interface Welcome {
  /** The worker's node id: the primary's, a slash, the worker's `cluster.worker.id`. */
  readonly nodeId: string;
  readonly maxStreams: number;
  readonly maxListensPerPrincipal: number;
  /** Whether the machine's event logs know their newest id (a legacy GET stream primes with it). */
  readonly newestId: boolean;
}

/**
 * The requests a worker makes and what each answers (`call`): each answer is a `reply` with the
 * request's id. A failure carries its message; `capacity` marks the refusal of an `initialize` at
 * the machine's `maxSessions`.
 * @internal
 */
export interface Calls {
  hello: [args: [], answer: Welcome];
  /** A stream slot of the machine's pool, numbered by the worker; false when all are held. */
  slot: [args: [slot: number], answer: boolean];
  'store.create': [args: [record: SessionRecord], answer: null];
  'store.get': [args: [id: string], answer: SessionRecord | null];
  'store.update': [args: [id: string, changes: SessionChanges], answer: null];
  'store.delete': [args: [id: string], answer: null];
  /** `SessionStore.takeUp`: false when the store has none. */
  'store.takeUp': [args: [id: string, from: string | null, to: string | null], answer: boolean];
  /** Appends: the distinct frames, then (session id, frame index) pairs; answers the ids in order. */
  'log.append': [args: [frames: readonly WireFrame[], appends: readonly (string | number)[]], answer: readonly string[]];
  'log.after': [args: [sessionId: string, lastEventId: string | null], answer: readonly LoggedFrame[]];
  'log.newest': [args: [sessionId: string], answer: string];
  'session.publish': [args: [sessionId: string, command: SessionCommand], answer: null];
  /** The worker stops and hands its sessions over: how many nodes (other workers, the fleet's) may take them up. */
  'session.leave': [args: [], answer: number];
  /** Ends every listen stream of a principal on every worker (and, with a shared cap, beyond). */
  revoke: [args: [principal: string, reason: string], answer: null];
}

export type CallName = keyof Calls;

/** What a worker sends the primary. @internal */
export type WorkerMessage =
  | { readonly k: 'call'; readonly id: number; readonly op: CallName; readonly a: readonly unknown[] }
  /** A hub event its hub delivered locally: for every other worker. */
  | { readonly k: 'hub'; readonly e: HubEvent }
  | { readonly k: 'release'; readonly slot: number }
  /** A listen stream admitted for principal `p`, numbered `s` by the worker; `unadmit` when it ends. */
  | { readonly k: 'admit'; readonly s: number; readonly p: string }
  | { readonly k: 'unadmit'; readonly s: number }
  /** Joins (or leaves) the contenders of a lease. */
  | { readonly k: 'lease'; readonly key: string; readonly join: boolean }
  /** The holder of a lease merges entries into its handover state (`null`: delete). */
  | { readonly k: 'leaseState'; readonly key: string; readonly s: readonly (readonly [string, string | null])[] };

/** What the primary sends a worker. @internal */
export type PrimaryMessage =
  | { readonly k: 'reply'; readonly id: number; readonly v?: unknown; readonly err?: { readonly message: string; readonly capacity?: true } }
  | { readonly k: 'hub'; readonly e: HubEvent }
  /** The machine may have missed hub events (its fleet bus said so): every stream re-reads. */
  | { readonly k: 'resync' }
  /** Admitted stream `s` must end: superseded, or `r` (a revoke's reason). */
  | { readonly k: 'supersede'; readonly s: number; readonly r?: string }
  | { readonly k: 'session'; readonly sid: string; readonly c: SessionCommand }
  /** Whether the worker holds the lease; when it does, the handover state its last holder left (`null`: none). */
  | { readonly k: 'lease'; readonly key: string; readonly held: boolean; readonly state?: readonly (readonly [string, string])[] | null };

/** The messages of one batch, as they travel. @internal */
export type Envelope<M> = { readonly [ENVELOPE]: readonly M[] };

/** The batch `value` carries, if it is one of ours. @internal */
export function batchOf<M>(value: unknown): readonly M[] | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const batch = (value as Record<string, unknown>)[ENVELOPE];
  return Array.isArray(batch) ? (batch as M[]) : undefined;
}

/**
 * Messages to one port, sent as one IPC message per microtask (see the top of this file): a
 * {@link TurnBatch} of them. A send that fails (the channel closed: the other end died or is
 * leaving) goes to `onError` once.
 * @internal
 */
export class Outbox<M> {
  readonly #batch = new TurnBatch<M>((messages) => this.#send(messages));

  constructor(
    private readonly port: Port,
    private readonly onError: (error: Error) => void,
  ) {}

  push(message: M): void {
    this.#batch.add(message);
  }

  /**
   * Which batch a message pushed now goes out in: it changes when a batch is sent. A message may
   * be added to (an array in it grown) until then, and not after: it is serialized as it is sent.
   */
  get batch(): number {
    return this.#batch.delivered;
  }

  /** Sends what is batched now (also what happens at the end of the turn). */
  flush(): void {
    this.#batch.flush();
  }

  #send(batch: M[]): void {
    const envelope: Envelope<M> = { [ENVELOPE]: batch };
    try {
      this.port.send(envelope, (error) => {
        if (error !== null && error !== undefined) this.onError(error);
      });
    } catch (error) {
      // Not serializable (a task status with a cycle slipped through), or the channel is gone.
      this.onError(error as Error);
    }
  }
}
