// node:cluster's round-robin handoff, made safe against a worker that dies while a connection is on
// its way to it (issue 31, item 5).
//
// With SCHED_RR (the default but on Windows) the primary accepts every connection and sends it to a
// worker over IPC, keeping its own copy of the socket until the worker answers that it accepted it
// (lib/internal/cluster/round_robin_handle.js, `handoff`). A worker that dies before it answers
// never answers: its copy of the socket died with it, and the primary's copy stays open for ever,
// referenced only by a callback nobody calls. Its client sent its request on a connection that is
// open and never read: no response, no close, no log line. `removeHandlesForWorker` drops the
// worker from the round-robin list but does not look at the handle in flight.
import cluster, { type Worker } from 'node:cluster';

/** A connection the primary accepted: the raw `TCP` handle node:cluster hands to a worker. */
interface RawHandle {
  close(): void;
}

/** Connections a worker died with before it accepted them, as {@link rescueHandoffs} reports them. */
export interface LostHandoffs {
  /** `cluster.worker.id` of the worker that died. */
  readonly worker: number;
  /** Handed to another worker. */
  readonly handedOn: number;
  /** Closed, no other worker listening. */
  readonly closed: number;
}

/** What {@link rescueHandoffs} did, for the operator. */
export interface HandoffRescue {
  /** Connections handed to a worker that died before it accepted them, handed to another worker since. */
  readonly handedOn: number;
  /** Those closed instead, because no other worker was listening. */
  readonly closed: number;
  /** Stops watching the workers (the ones tracked keep their wrapper, which then records nothing). Idempotent. */
  close(): void;
}

/**
 * Hands a connection on to another worker (or closes it) when the worker it was handed to dies
 * before it accepted it, so that no client waits for ever on a connection nobody reads.
 *
 * How: node:cluster's own messages are watched, not changed. Each `newconn` message the primary
 * sends a worker with a connection (`{ cmd: 'NODE_CLUSTER', act: 'newconn', seq }` and the
 * handle) is remembered until the worker's acknowledgment (`{ cmd: 'NODE_CLUSTER', ack: seq }`).
 * Once a worker is dead (its `exit` or `disconnect`, and node:cluster removed it from the round-robin
 * list), each connection it never acknowledged is answered for it as a worker that is
 * shutting down answers (`accepted: false`): node:cluster's round-robin handle then gives it to the
 * next free worker, exactly as it does when a closing server refuses one. With no other worker
 * listening it is closed instead: its client sees the connection end and may retry.
 *
 * These messages are node:cluster internals (Node 20's `lib/internal/cluster/round_robin_handle.js`
 * and `utils.js`, unchanged in this respect since round-robin scheduling came): were they to
 * change, nothing is recognized and the primary behaves as without this function. Precondition:
 * `cluster.schedulingPolicy` is `SCHED_RR` (with `SCHED_NONE` the workers accept from the shared
 * socket themselves, and a connection accepted by a worker dies with it: nothing to rescue).
 *
 * @example
 * if (cluster.isPrimary) {
 *   const rescue = rescueHandoffs(({ worker, handedOn }) => console.error(`worker ${worker} died with ${handedOn} connections on their way`));
 *   for (let i = 0; i < 4; i++) cluster.fork();
 * }
 * @param report told, once per worker that died with connections on their way to it, what became of them.
 * @returns the counts, and `close()`.
 * @internal
 */
export function rescueHandoffs(report: (lost: LostHandoffs) => void = () => undefined): HandoffRescue {
  const counts = { handedOn: 0, closed: 0 };
  const tracked = new WeakMap<Worker, Map<number, RawHandle>>();
  let closed = false;
  const track = (worker: Worker) => {
    if (tracked.has(worker)) return;
    const inFlight = new Map<number, RawHandle>();
    tracked.set(worker, inFlight);
    const child = worker.process as unknown as { send: (...args: unknown[]) => boolean; on(event: 'internalMessage', listener: (message: unknown) => void): void };
    const send = child.send;
    child.send = function (this: unknown, ...args: unknown[]) {
      const [message, handle] = args;
      if (!closed && handle != null && isNewConnection(message)) inFlight.set(message.seq, handle as RawHandle);
      return send.apply(this, args);
    };
    child.on('internalMessage', (message) => {
      if (isAck(message)) inFlight.delete(message.ack);
    });
  };
  const lost = (worker: Worker, waited = 0) => {
    const inFlight = tracked.get(worker);
    if (closed || inFlight === undefined || inFlight.size === 0) return;
    // node:cluster takes a worker out of its round-robin list once its channel is closed as well as
    // its process: at its 'disconnect', or at its 'exit' when the channel closed first. (A channel
    // closed with a connection unacknowledged never says 'disconnect'.) Until then a connection
    // handed on could come back to it; the channel of a dead process closes within milliseconds.
    if (worker.isConnected() && waited < CHANNEL_CLOSE_WAIT) return void setTimeout(() => lost(worker, waited + 10), 10).unref();
    const handles = [...inFlight];
    inFlight.clear();
    const others = !worker.isConnected() && Object.values(cluster.workers ?? {}).some((other) => other !== undefined && other !== worker && other.isConnected() && listening(other));
    let handedOn = 0;
    for (const [seq, handle] of handles) {
      if (others) {
        handedOn++;
        // node:cluster's answer of a worker that did not take the connection: its round-robin
        // handle gives it to the next free worker (the dead one is out of its list already).
        worker.process.emit('internalMessage', { cmd: 'NODE_CLUSTER', ack: seq, accepted: false });
      } else handle.close();
    }
    counts.handedOn += handedOn;
    counts.closed += handles.length - handedOn;
    report({ worker: worker.id, handedOn, closed: handles.length - handedOn });
  };
  const exited = (worker: Worker) => lost(worker);
  for (const worker of Object.values(cluster.workers ?? {})) if (worker !== undefined) track(worker);
  cluster.on('fork', track);
  cluster.on('disconnect', exited);
  cluster.on('exit', exited);
  return {
    get handedOn() {
      return counts.handedOn;
    },
    get closed() {
      return counts.closed;
    },
    close: () => {
      if (closed) return;
      closed = true;
      cluster.off('fork', track);
      cluster.off('disconnect', exited);
      cluster.off('exit', exited);
    },
  };
}

/** Milliseconds a dead worker's channel may take to close before its connections are closed rather than handed on. */
const CHANNEL_CLOSE_WAIT = 1000;

/** `worker.state` (not in @types/node): `'listening'` once one of its servers listens. */
function listening(worker: Worker): boolean {
  return (worker as Worker & { state?: string }).state === 'listening';
}

function isNewConnection(message: unknown): message is { readonly seq: number } {
  const m = message as { cmd?: unknown; act?: unknown; seq?: unknown } | null;
  return typeof m === 'object' && m !== null && m.cmd === 'NODE_CLUSTER' && m.act === 'newconn' && typeof m.seq === 'number';
}

function isAck(message: unknown): message is { readonly ack: number } {
  const m = message as { cmd?: unknown; ack?: unknown } | null;
  return typeof m === 'object' && m !== null && m.cmd === 'NODE_CLUSTER' && typeof m.ack === 'number';
}
