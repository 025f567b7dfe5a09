import type { KeptSession, SessionBus, SessionCommand, SessionRecord, SessionStore } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';

/**
 * Where a legacy session's GET stream is, and which node keeps its subscriptions live: this node,
 * or another worker of the machine or node of the fleet. The single-node code asks it and reads
 * straight through ({@link LOCAL_PLACEMENT}: the stream is always here); a fleet's or a machine's
 * session bus plugs in ({@link busPlacement}), and then a session's record names the node that
 * holds its stream (`streamNode`) and the node that keeps its subscriptions (`keeper`: the
 * stream's node, or while it has none the node in its grace period or the one that took it up), a
 * node that opens a GET claims it, the subscribes and unsubscribes served on another node are
 * handed to the holder, and a keeper that stops or dies has its sessions taken up by another node
 * (one wins, {@link SessionStore.takeUp}), so that their changes keep reaching their logs.
 * @internal
 */
export interface Placement {
  /** True when streams may be elsewhere (a bus is connected): a GET stream then keeps its request's context for relayed subscribes. */
  readonly shared: boolean;
  /** This node's id in the fleet (`undefined` alone). */
  readonly nodeId: string | undefined;
  /** True when `record` says another node holds the session's GET stream. */
  heldElsewhere(record: SessionRecord): boolean;
  /**
   * The session's record when another node holds its GET stream (a subscribe is then handed
   * there), else `undefined`: alone, without reading anything.
   */
  elsewhere(sessionId: string): Promise<SessionRecord | undefined>;
  /** Hands a subscribe or an unsubscribe to the node that holds the session's stream. */
  relay(sessionId: string, command: SessionCommand & { kind: 'subscribe' | 'unsubscribe' }): Promise<void>;
  /**
   * This node now holds the session's GET stream and keeps its subscriptions: recorded (with the
   * stream's read scopes, for a node that may take the session up), and every other node lets go.
   */
  claim(sessionId: string, scopes: ReadonlySet<string>): void;
  /** The record's changes when the stream ended here: `lastActivity`, and no holder any more where streams are shared (this node still keeps it). */
  released(lastActivity: number): { lastActivity: number; streamNode?: null };
  /** This node no longer keeps the session (its grace period ended): the record says nobody does, unless another node does by now. */
  letGo(sessionId: string): void;
  /** Makes this node the keeper of a session `from` kept (it stopped or died): true when this node won it. */
  takeUp(sessionId: string, from: string): Promise<boolean>;
  /** Tells the other nodes this node keeps the session now (it took it up): a node that kept it without a stream lets go. */
  kept(sessionId: string): void;
  /**
   * Offers the sessions this node keeps to the others, as it stops (`orphaned`): false when
   * nobody can take them (no need to wait for a `kept`).
   */
  handOver(sessionIds: readonly string[]): Promise<boolean>;
  /** The sessions that node `node` of the fleet (or a worker of it) kept when it died. */
  keptBy(node: string): Promise<readonly KeptSession[]>;
}

/** One node: every stream is here, nothing to read, claim, relay or hand over. @internal */
export const LOCAL_PLACEMENT: Placement = Object.freeze({
  shared: false,
  nodeId: undefined,
  heldElsewhere: () => false,
  elsewhere: async () => undefined,
  relay: async () => undefined,
  claim: () => undefined,
  released: (lastActivity: number) => ({ lastActivity }),
  letGo: () => undefined,
  takeUp: async () => false,
  kept: () => undefined,
  handOver: async () => false,
  keptBy: async () => [],
});

/** Streams placed through a session bus and the shared store (a machine's workers, a fleet's nodes). @internal */
export function busPlacement(bus: SessionBus, store: SessionStore): Placement {
  const self = bus.nodeId;
  const heldElsewhere = (record: SessionRecord) => record.streamNode !== undefined && record.streamNode !== null && record.streamNode !== self;
  const quietly = (work: () => Promise<unknown>) => void work().catch((error: unknown) => reportError('source', error));
  return {
    shared: true,
    nodeId: self,
    heldElsewhere,
    elsewhere: async (sessionId) => {
      const record = await store.get(sessionId);
      return record !== undefined && heldElsewhere(record) ? record : undefined;
    },
    relay: async (sessionId, command) => void (await bus.publish(sessionId, command)),
    claim: (sessionId, scopes) =>
      quietly(async () => {
        await store.update(sessionId, { streamNode: self, keeper: self, scopes: [...scopes] });
        await bus.publish(sessionId, { kind: 'claimed', node: self });
      }),
    released: (lastActivity) => ({ lastActivity, streamNode: null }),
    letGo: (sessionId) => quietly(async () => void (await store.takeUp?.(sessionId, self, null))),
    takeUp: async (sessionId, from) => (store.takeUp === undefined ? false : (await store.takeUp(sessionId, from, self)) === true),
    kept: (sessionId) => quietly(async () => void (await bus.publish(sessionId, { kind: 'kept', node: self }))),
    handOver: async (sessionIds) => {
      if (store.takeUp === undefined || sessionIds.length === 0) return false;
      let peers: number | undefined;
      try {
        peers = await bus.leave?.();
      } catch (error) {
        reportError('source', error);
        return false;
      }
      if (peers === 0) return false;
      const offers = await Promise.allSettled(sessionIds.map((sessionId) => bus.publish(sessionId, { kind: 'orphaned', node: self, died: false })));
      for (const offer of offers) if (offer.status === 'rejected') reportError('source', offer.reason);
      return offers.some((offer) => offer.status === 'fulfilled');
    },
    keptBy: async (node) => (store.keptBy === undefined ? [] : await store.keptBy(node)),
  };
}

/** The placement of a node: through `bus` when there is one, else local. @internal */
export function placementOf(bus: SessionBus | undefined, store: SessionStore): Placement {
  return bus === undefined ? LOCAL_PLACEMENT : busPlacement(bus, store);
}
