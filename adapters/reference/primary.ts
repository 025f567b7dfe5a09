// The reference server on every core (`serve --workers N`): this process is the node:cluster
// primary (mcp-rx-streams/cluster's clusterPrimary), N workers each run the reference server
// (`startReferenceServer({ cluster: true })`) on the one shared port, and a worker that dies is
// started again. The machine's snapshot, revoke and metrics are asked of every worker
// (workerChannel.ts: each worker says when it serves and answers what it is asked).
import { randomUUID } from 'node:crypto';
import cluster, { type Worker } from 'node:cluster';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { combineLatest, distinctUntilChanged, map } from 'rxjs';
import type { SessionOptions } from '../../protocol/legacy/sessionOptions.js';
import type { CloseReason } from '../../lib/frame.js';
import type { StreamLimits } from '../../lib/options.js';
import type { StreamInfo, StreamsOptions } from '../../protocol/inspect.js';
import { RevokeRelayError, type RevokeResult } from '../../protocol/revoke.js';
import { rescueHandoffs } from '../cluster/handoffs.js';
import { clusterPrimary, type ClusterEvent, type ClusterPrimary, type ClusterPrimaryOptions } from '../cluster/primary.js';
import { ensureDemoData } from './files.js';
import { openFleet, type Fleet, type ReferenceFleet } from './server.js';
import { primaryChannel, type WorkerAnswer, type WorkerQuestion } from './workerChannel.js';

/** Options of {@link startReferencePrimary}. */
export interface ReferencePrimaryOptions extends Partial<StreamLimits>, Partial<SessionOptions> {
  /** How many workers; at least 2 (one is a plain `startReferenceServer`). */
  readonly workers: number;
  /** The served directory (created with the demo files when missing: the CLI allows it with `--demo` only). */
  readonly dir: string;
  /** The fleet's Redis: the primary is the machine's node of the fleet (see `docs/cluster.md`). */
  readonly redis?: string;
  readonly nodeId?: string;
  readonly watchLeaseTtl?: number;
  /** Milliseconds to wait for Redis before failing; 0 connects in the background. */
  readonly redisConnectTimeout?: number;
  /** Where the primary says what happens to its workers, one line each (`cluster: …`). */
  readonly say: (line: string) => void;
  /** Called once the machine's primary exists, before any worker starts (a metrics bridge counts from there, the fleet's Redis connections included). */
  readonly onPrimary?: (primary: ClusterPrimary) => void;
}

/** A running machine of reference-server workers. */
export interface ReferencePrimary {
  /** `http://HOST:PORT/mcp`, the port every worker shares. */
  readonly url: string;
  readonly primary: ClusterPrimary;
  /** The Redis parts when started with `redis`, else `undefined`. */
  readonly fleet: ReferenceFleet | undefined;
  /**
   * What every worker serves now (`endpoint.streams(options)` of each), each entry with the id of
   * its worker (`cluster.worker.id`, as the log names it): listen stream ids are a worker's own. A
   * legacy session that several workers hold (its `initialize` on one, its GET on another) is
   * listed once, from the worker with its GET stream when one has it.
   */
  streams(options?: StreamsOptions): Promise<MachineStreamInfo[]>;
  /**
   * Ends every stream and legacy session of `principal` on the machine (and, with `redis`, on the
   * fleet: each worker's revoke tells it): every worker revokes at once; the counts are the
   * machine's (a session several workers held counts once).
   * @throws RevokeRelayError when a worker could not tell the fleet (what ended here is in its `info`).
   */
  revoke(principal: string, reason?: CloseReason): Promise<RevokeResult>;
  /** Asks every serving worker `op` (see workerChannel.ts); the answers that came within 3 s. */
  ask(op: WorkerQuestion, args?: readonly unknown[]): Promise<WorkerAnswer[]>;
  /** Stops every worker gracefully (SIGTERM: each closes its streams with their closing frames), then the primary and the Redis connections. */
  close(): Promise<void>;
}

/** One entry of {@link ReferencePrimary.streams}: a worker's `StreamInfo`, and that worker's id. */
export type MachineStreamInfo = { readonly worker: number } & StreamInfo;

/**
 * A worker's answer to `revoke` (workerChannel.ts): what its `endpoint.revoke` ended, the ids of the
 * sessions among them (a session two workers held is one), and `relayError` when it could not tell
 * the fleet.
 */
export interface WorkerRevoke extends RevokeResult {
  readonly sessionIds: readonly string[];
  readonly relayError?: string;
}

/** A worker that dies is started again after this long, doubled (up to 5 s) while the new ones die before they listen. */
const RESTART_DELAY = 100;
const MAX_RESTART_DELAY = 5_000;
/** How long the workers have to close their streams on shutdown before they are killed. */
const STOP_GRACE = 10_000;
/** How long a worker has to answer the primary (a scrape, a snapshot, a revoke): a worker busier than that is left out. */
const ASK_TIMEOUT = 3_000;

/**
 * Runs the reference server's primary: forks `workers` workers of this script (with this process's
 * arguments: node:cluster's default) and keeps them running; resolves once every one serves (it
 * listens, and its endpoint is open: `serveWorkerChannel` said so).
 * @throws Error when a worker exits before it served while they start (its own message is on
 *   stderr already): the others are stopped.
 */
export async function startReferencePrimary(options: ReferencePrimaryOptions): Promise<ReferencePrimary> {
  const { workers: count, dir, redis, nodeId, watchLeaseTtl, redisConnectTimeout, say, onPrimary, ...limits } = options;
  await ensureDemoData(path.resolve(dir));
  const root = await realpath(path.resolve(dir));
  const fleet = redis === undefined ? undefined : await openFleet(redis, nodeId ?? randomUUID(), watchLeaseTtl, root, limits, redisConnectTimeout ?? 10_000);
  const primary = clusterPrimary({ ...machineLimits(limits), ...(nodeId === undefined ? {} : { nodeId }), ...(fleet === undefined ? {} : fleetParts(fleet)) });
  let stopping = false;
  primary.events$.subscribe((event) => report(event, say, !stopping));
  onPrimary?.(primary);
  // A connection node:cluster handed to a worker that died before accepting it would be held open,
  // unread, for ever (issue 31, item 5): it goes to another worker instead.
  const handoffs = rescueHandoffs(({ worker, handedOn, closed }) =>
    say(`cluster: worker ${worker} died with ${handedOn + closed} new connection(s) on their way to it: ${handedOn} handed to another worker, ${closed} closed (no other worker listening)`),
  );
  // A message to a worker that died meanwhile fails (EPIPE) as an 'error' event of its Worker, which
  // would end this process for want of a listener; its exit is on its way.
  const onFork = (worker: Worker) => worker.on('error', (error: Error) => say(`cluster: worker ${worker.id}: ${error.message}`));
  cluster.on('fork', onFork);
  let delay = RESTART_DELAY;
  // A worker listens before its endpoint opens (requests wait for it meanwhile): it counts once it serves.
  const addresses = new Map<Worker, { address: string; port: number }>();
  const listening = new Set<Worker>();
  let started: (url: string) => void;
  let failed: (error: Error) => void;
  const up = new Promise<string>((resolve, reject) => ((started = resolve), (failed = reject)));
  let url: string | undefined;
  const onListening = (worker: Worker, address: { address: string; port: number }) => void addresses.set(worker, address);
  const channel = primaryChannel();
  channel.onReady((worker) => {
    const address = addresses.get(worker);
    if (address === undefined || worker.isDead()) return;
    listening.add(worker);
    delay = RESTART_DELAY;
    say(`cluster: worker ${worker.id} (pid ${worker.process.pid}) listening`);
    if (url !== undefined || listening.size < count) return;
    const host = address.address.includes(':') ? `[${address.address}]` : address.address;
    url = `http://${host}:${address.port}/mcp`;
    started(url);
  });
  const onExit = (worker: Worker) => {
    addresses.delete(worker);
    const wasListening = listening.delete(worker);
    if (stopping) return;
    if (url === undefined) {
      failed(new Error(`worker ${worker.id} exited before it listened (code ${worker.process.exitCode ?? worker.process.signalCode}); see its message above`));
      return;
    }
    const wait = delay;
    if (!wasListening) delay = Math.min(delay * 2, MAX_RESTART_DELAY);
    setTimeout(() => {
      if (!stopping) cluster.fork();
    }, wait).unref();
  };
  cluster.on('listening', onListening);
  cluster.on('exit', onExit);
  for (let i = 0; i < count; i++) cluster.fork();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      stopping = true;
      const alive = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && !worker.isDead());
      const exited = Promise.all(alive.map((worker) => new Promise<void>((resolve) => (worker.isDead() ? resolve() : worker.once('exit', () => resolve())))));
      for (const worker of alive) worker.process.kill('SIGTERM');
      const grace = setTimeout(() => alive.forEach((worker) => worker.isDead() || worker.process.kill('SIGKILL')), STOP_GRACE);
      await exited;
      clearTimeout(grace);
      cluster.off('listening', onListening);
      cluster.off('exit', onExit);
      cluster.off('fork', onFork);
      channel.close();
      handoffs.close();
      primary.close();
      await fleet?.close();
    })());
  const ask = (op: WorkerQuestion, args: readonly unknown[] = []) => channel.ask([...listening], op, args, ASK_TIMEOUT);
  const streams = async (options: StreamsOptions = {}) => {
    const answers = await ask('streams', [options]);
    const listens: MachineStreamInfo[] = [];
    const sessions = new Map<string, MachineStreamInfo & { readonly era: 'legacy' }>();
    for (const answer of answers) {
      if (!('value' in answer)) continue;
      for (const info of answer.value as StreamInfo[]) {
        if (info.era !== 'legacy') listens.push({ worker: answer.worker, ...info });
        else if (sessions.get(info.id)?.streamOpen !== true) sessions.set(info.id, { worker: answer.worker, ...info });
      }
    }
    return [...listens, ...sessions.values()];
  };
  const revoke = async (principal: string, reason: CloseReason = 'revoked') => {
    const answers = await ask('revoke', [principal, reason]);
    let listens = 0;
    const sessions = new Set<string>();
    const failures: string[] = [];
    for (const answer of answers) {
      if ('error' in answer) {
        failures.push(`worker ${answer.worker}: ${answer.error}`);
        continue;
      }
      const ended = answer.value as WorkerRevoke;
      listens += ended.streams;
      for (const id of ended.sessionIds) sessions.add(id);
      if (ended.relayError !== undefined) failures.push(`worker ${answer.worker}: ${ended.relayError}`);
    }
    const ended: RevokeResult = { streams: listens, sessions: sessions.size };
    if (failures.length > 0) throw new RevokeRelayError(ended, new Error(failures.join('; ')));
    return ended;
  };
  try {
    return { url: await up, primary, fleet: fleet?.view, streams, revoke, ask, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The machine-wide limits among the serve options, for the primary. */
function machineLimits(limits: Partial<StreamLimits> & Partial<SessionOptions>): ClusterPrimaryOptions {
  const { maxStreams, maxListensPerPrincipal, maxSessions, maxSessionsPerPrincipal, replayBufferSize, sessionIdleTimeout, sessionPruneInterval } = limits;
  const given = { maxStreams, maxListensPerPrincipal, maxSessions, maxSessionsPerPrincipal, replayBufferSize, sessionIdleTimeout, sessionPruneInterval };
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}

/**
 * The fleet's Redis parts as the machine's: the primary is the machine's one node. The folder
 * watch goes to a worker while this machine publishes the folder's changes: while it holds the
 * fleet's watch lease, or held it when Redis went away and Redis is not back (`Fleet.publishes`).
 */
function fleetParts(fleet: Fleet): ClusterPrimaryOptions {
  const { bus, principals, sessionStore, eventLog, sessionBus, lease } = fleet;
  const publishes$ = combineLatest([lease.held$, sessionBus.connected$]).pipe(
    map(() => fleet.publishes),
    distinctUntilChanged(),
  );
  // The workers ask for one lease, the folder's: the fleet's own (closed with the fleet, not here),
  // with its state, so that a worker on any machine catches up from what the last watcher published.
  const state = { state: () => lease.state(), saveState: (entries: Iterable<readonly [string, string | null]>) => lease.saveState(entries) };
  return { bus, principals, sessionStore, eventLog, sessionBus, lease: () => ({ held$: publishes$, close: () => undefined, ...state }) };
}

/** Says what happened to the workers; `restarting`: the machine is not stopping (a worker that left is replaced, a lease that moves is news). */
function report(event: ClusterEvent, say: (line: string) => void, restarting: boolean): void {
  switch (event.kind) {
    case 'joined':
      return;
    case 'left': {
      const { slots, streams, sessions } = event.released;
      const how = event.signal === null ? `code ${event.code}` : `signal ${event.signal}`;
      return say(
        `cluster: worker ${event.worker} (pid ${event.pid}) exited (${how}); released ${slots} stream slots, ${streams} listen admissions, ${sessions} sessions' GET streams${restarting ? '; starting another, its clients reconnect to the other workers' : ''}`,
      );
    }
    case 'lease':
      // While stopping, the lease passes from worker to worker as they exit: nothing to say.
      if (!restarting) return;
      return say(event.worker === undefined ? 'cluster: no worker watches the folder' : `cluster: worker ${event.worker} watches the folder`);
  }
}
