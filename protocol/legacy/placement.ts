import type { SessionBus, SessionCommand, SessionRecord, SessionStore } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';

/**
 * Where a legacy session's GET stream is: on this node, or on another worker of the machine or
 * node of the fleet. The single-node code asks it and reads straight through ({@link LOCAL_PLACEMENT}:
 * the stream is always here); a fleet's or a machine's session bus plugs in ({@link busPlacement}),
 * and then a session's record names the node that holds its stream (`streamNode`), a node that
 * opens a GET claims it, and the subscribes and unsubscribes served on another node are handed to
 * the holder.
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
  /** This node now holds the session's GET stream: recorded, and every other node lets go of it. */
  claim(sessionId: string): void;
  /** The record's changes when the stream ended here: `lastActivity`, and no holder any more where streams are shared. */
  released(lastActivity: number): { lastActivity: number; streamNode?: null };
}

/** One node: every stream is here, nothing to read, claim or relay. @internal */
export const LOCAL_PLACEMENT: Placement = Object.freeze({
  shared: false,
  nodeId: undefined,
  heldElsewhere: () => false,
  elsewhere: async () => undefined,
  relay: async () => undefined,
  claim: () => undefined,
  released: (lastActivity: number) => ({ lastActivity }),
});

/** Streams placed through a session bus and the shared store (a machine's workers, a fleet's nodes). @internal */
export function busPlacement(bus: SessionBus, store: SessionStore): Placement {
  const heldElsewhere = (record: SessionRecord) => record.streamNode !== undefined && record.streamNode !== null && record.streamNode !== bus.nodeId;
  return {
    shared: true,
    nodeId: bus.nodeId,
    heldElsewhere,
    elsewhere: async (sessionId) => {
      const record = await store.get(sessionId);
      return record !== undefined && heldElsewhere(record) ? record : undefined;
    },
    relay: async (sessionId, command) => void (await bus.publish(sessionId, command)),
    claim: (sessionId) => {
      const claimed = async () => {
        await store.update(sessionId, { streamNode: bus.nodeId });
        await bus.publish(sessionId, { kind: 'claimed', node: bus.nodeId });
      };
      claimed().catch((error: unknown) => reportError('source', error));
    },
    released: (lastActivity) => ({ lastActivity, streamNode: null }),
  };
}

/** The placement of a node: through `bus` when there is one, else local. @internal */
export function placementOf(bus: SessionBus | undefined, store: SessionStore): Placement {
  return bus === undefined ? LOCAL_PLACEMENT : busPlacement(bus, store);
}
