import type { CloseReason } from './frame.js';

/**
 * The durable record of a legacy session (protocol revisions 2025-03-26 to 2025-11-25): what
 * outlives a connection, and what any node serving the session can read (DESIGN L1, L4, L8).
 */
export interface SessionRecord {
  /** The `Mcp-Session-Id`: cryptographically random, visible ASCII. */
  readonly id: string;
  /** Who created the session; requests of any other principal get HTTP 403. */
  readonly principal: string;
  /** The protocol revision negotiated by `initialize`. */
  readonly protocolVersion: string;
  /** The subscribed resource URIs, in subscription order, restored on every GET (DESIGN L8). */
  readonly subscriptions: readonly string[];
  /** When the session was last active (a request, or a live GET stream), in milliseconds since the epoch. */
  readonly lastActivity: number;
  /** The node that holds the session's live GET stream (a fleet, see {@link SessionBus}); absent or `null` when none does. */
  readonly streamNode?: string | null;
  /**
   * The node that keeps the session's subscriptions live, logging their changes into its event log:
   * the node of its GET stream, or, while it has none, the node in its grace period or the node that
   * took it up after its keeper stopped or died (a fleet, see {@link SessionStore.takeUp}); absent
   * or `null` when none does.
   */
  readonly keeper?: string | null;
  /** The read scopes of its latest GET stream's caller: what a node that takes the session up subscribes with. */
  readonly scopes?: readonly string[];
}

/** The fields of a {@link SessionRecord} that change after creation. */
export type SessionChanges = Partial<Pick<SessionRecord, 'subscriptions' | 'lastActivity' | 'streamNode' | 'keeper' | 'scopes'>>;

/** A session and the node that keeps it, as {@link SessionStore.keptBy} lists them. */
export interface KeptSession {
  readonly id: string;
  readonly keeper: string;
}

/**
 * What one node tells the others about a session (a fleet sharing a {@link SessionStore}):
 * - `claimed`: the session's GET stream is now on `node`; any other node holding a stream or live
 *   subscriptions for it ends and releases them (its subscriptions live with its stream);
 * - `subscribe` / `unsubscribe`: a POST served elsewhere changed the subscription to `uri`; the
 *   node holding the stream establishes or drops it;
 * - `ended`: the session was deleted or evicted; every node forgets it;
 * - `revoke`: every session of `principal` ends, on every node (their GET streams end with
 *   `reason`, their records are removed); published with the session id `''`, as it names none;
 * - `orphaned`: the session's keeper `node` stops (`died: false`: it keeps the subscriptions live
 *   until another node has taken them) or died (`died: true`: changes since may be missing); a node
 *   that can takes the session up ({@link SessionStore.takeUp}: one node wins) and says `kept`;
 * - `kept`: `node` took the session up: it keeps its subscriptions live, without a GET stream,
 *   until a GET claims the session or its grace period ends; a node that kept it without a stream
 *   lets go (a node with its GET stream keeps it: a `claimed` ends the take-up instead);
 * - `left`: node `node` of the fleet died (its heartbeat expired); never published: a bus that
 *   notices a death hands it to its own node, once in the fleet, with the session id `''`.
 */
export type SessionCommand =
  | { readonly kind: 'claimed'; readonly node: string }
  | { readonly kind: 'subscribe'; readonly uri: string }
  | { readonly kind: 'unsubscribe'; readonly uri: string }
  | { readonly kind: 'ended' }
  | { readonly kind: 'revoke'; readonly principal: string; readonly reason: CloseReason }
  | { readonly kind: 'orphaned'; readonly node: string; readonly died: boolean }
  | { readonly kind: 'kept'; readonly node: string }
  | { readonly kind: 'left'; readonly node: string };

/**
 * Relays {@link SessionCommand}s between the nodes of a fleet, so that a session's POSTs and its
 * GET stream can be served by different nodes. A single process needs none. Contract like
 * `HubBus`: `publish` never hands a command back to the node that sent it.
 */
export interface SessionBus {
  /** This node's id, unique in the fleet (recorded as `streamNode`). */
  readonly nodeId: string;
  /** Sends `command` about `sessionId` to every other node. */
  publish(sessionId: string, command: SessionCommand): void | Promise<void>;
  /** Starts delivering other nodes' commands; returns a function that stops. */
  connect(deliver: (sessionId: string, command: SessionCommand) => void): () => void;
  /**
   * This node is stopping and hands its sessions over (`orphaned`): how many other nodes may take
   * them up now. 0 tells it that nobody will, so it need not wait. Optional: without it a stopping
   * node waits for the `kept` of each session it hands over (a few seconds at most).
   */
  leave?(): number | Promise<number>;
}

/**
 * Where session records live. {@link MemorySessionStore} is the in-process default; a shared
 * store (Redis) lets any node of a fleet serve a session. Every method may answer synchronously
 * or with a Promise; a rejection becomes a JSON-RPC `-32603` for the request that needed it.
 */
export interface SessionStore {
  /** Stores a new record. */
  create(record: SessionRecord): void | Promise<void>;
  /** The record of `id`, or `undefined` when there is none (never created, deleted or expired). */
  get(id: string): SessionRecord | undefined | Promise<SessionRecord | undefined>;
  /** Applies `changes` to the record of `id`; a missing record stays missing. */
  update(id: string, changes: SessionChanges): void | Promise<void>;
  /** Deletes the record of `id`; deleting a missing record is not an error. */
  delete(id: string): void | Promise<void>;
  /**
   * The ids of records last active before `cutoff` (milliseconds since the epoch), for the prune
   * sweep. A store that expires records by itself (a TTL) may return an empty list.
   */
  idleSince(cutoff: number): readonly string[] | Promise<readonly string[]>;
  /**
   * Makes `to` the session's keeper if `from` is (`null`: none), atomically, and forgets a GET
   * stream recorded on `from` (it stopped or died): how a node takes up a session whose keeper
   * stopped or died, exactly one of the nodes that try winning, and how a keeper lets go (`to`
   * `null`) without undoing a newer keeper. False when the keeper is another (or the record is gone).
   * Optional: a store without it leaves a stopped or dead node's sessions to their clients' next GET.
   */
  takeUp?(id: string, from: string | null, to: string | null): boolean | Promise<boolean>;
  /**
   * The sessions kept by `node` or by a worker of it (a keeper `node/…`: a machine's workers under
   * their primary), for a node that learnt of its death. Optional, as {@link takeUp}.
   */
  keptBy?(node: string): readonly KeptSession[] | Promise<readonly KeptSession[]>;
}

/**
 * The in-process {@link SessionStore}: a `Map` of records. Records are replaced, never mutated,
 * so a record handed out stays as it was.
 *
 * @example
 * const endpoint = new McpEndpoint({ hub, sessionStore: new MemorySessionStore() });
 */
export class MemorySessionStore implements SessionStore {
  readonly #records = new Map<string, SessionRecord>();

  /** How many records are held. */
  get size(): number {
    return this.#records.size;
  }

  create(record: SessionRecord): void {
    this.#records.set(record.id, stored(record));
  }

  get(id: string): SessionRecord | undefined {
    return this.#records.get(id);
  }

  update(id: string, changes: SessionChanges): void {
    const record = this.#records.get(id);
    if (record === undefined) return;
    this.#records.set(id, stored({ ...record, ...changes }));
  }

  delete(id: string): void {
    this.#records.delete(id);
  }

  idleSince(cutoff: number): readonly string[] {
    const ids: string[] = [];
    for (const record of this.#records.values()) if (record.lastActivity < cutoff) ids.push(record.id);
    return ids;
  }

  takeUp(id: string, from: string | null, to: string | null): boolean {
    const record = this.#records.get(id);
    if (record === undefined || (record.keeper ?? null) !== from) return false;
    const streamNode = from !== null && record.streamNode === from ? null : record.streamNode;
    this.#records.set(id, stored({ ...record, keeper: to, streamNode }));
    return true;
  }

  keptBy(node: string): readonly KeptSession[] {
    const kept: KeptSession[] = [];
    for (const { id, keeper } of this.#records.values()) if (typeof keeper === 'string' && keptByNode(keeper, node)) kept.push({ id, keeper });
    return kept;
  }
}

/** True when `keeper` is `node` or one of its workers (`node/…`). @internal */
export function keptByNode(keeper: string, node: string): boolean {
  return keeper === node || (keeper.length > node.length && keeper.startsWith(node) && keeper[node.length] === '/');
}

/**
 * A frozen copy of `record` as a literal of its fields, which V8 keeps inside the object: a spread
 * copy of five or six fields put the last ones in a separate property array (40 bytes more per
 * session, and a server holds thousands).
 */
function stored(record: SessionRecord): SessionRecord {
  const { id, principal, protocolVersion, lastActivity, streamNode, keeper, scopes } = record;
  const subscriptions = frozen(record.subscriptions);
  if (keeper !== undefined || scopes !== undefined) {
    // A session of a fleet or a machine, once a GET claimed it.
    return Object.freeze({ id, principal, protocolVersion, subscriptions, lastActivity, streamNode: streamNode ?? null, keeper: keeper ?? null, scopes: frozen(scopes ?? []) });
  }
  return Object.freeze(
    streamNode === undefined
      ? { id, principal, protocolVersion, subscriptions, lastActivity }
      : { id, principal, protocolVersion, subscriptions, lastActivity, streamNode },
  );
}

/** `list` itself when it is frozen (nobody can change it: the session and its record share it), else a frozen copy. */
function frozen(list: readonly string[]): readonly string[] {
  return Object.isFrozen(list) ? list : Object.freeze([...list]);
}
