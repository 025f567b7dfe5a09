// `serve --workers N`: this process is the machine's node:cluster primary, and each worker it forks
// runs the same command line as a worker (adapters/reference/primary.ts).
import path from 'node:path';
import { readOptions } from '../../lib/optionTable.js';
import { RevokeRelayError } from '../../protocol/revoke.js';
import type { ClusterPrimary } from '../cluster/primary.js';
import { REFERENCE_SETTINGS, type ReferenceServerOptions } from '../reference/options.js';
import type { WorkerRevoke } from '../reference/primary.js';
import type { CliLogger } from './logLevels.js';
import type { MetricsKit, PrimaryMetrics } from './metrics.js';
import type { ServeCommandOptions } from './serveFlags.js';
import { stopOnce } from './stop.js';

/**
 * `serve --workers N` in the primary: the machine's shared state and N workers on one port (see
 * `adapters/reference/primary.ts`), and with `--metrics-port` the machine's metrics and admin
 * endpoints (every worker's, joined here). stdout says where it listens once every worker serves
 * and the metrics port is up, as one process does; the log (stderr) says what happens to the
 * workers (`cluster: …`) and, with `--redis`, to the fleet. SIGINT/SIGTERM stop every worker
 * gracefully (their streams get their closing frames), then the primary, exit code 0.
 */
export async function serveMachine(options: ReferenceServerOptions, command: ServeCommandOptions, metrics: MetricsKit | undefined, logger: CliLogger, stopLogging: () => void): Promise<void> {
  const { startReferencePrimary } = await import('../reference/primary.js');
  const { redis } = options;
  const workers = command.workers!;
  const dir = path.resolve(readOptions(REFERENCE_SETTINGS, options).dir);
  const { machineMetrics, primaryMetrics, serveMetrics } = await import('./metrics.js');
  let own: PrimaryMetrics | undefined;
  const machine = await startReferencePrimary({
    ...options,
    workers,
    dir,
    say: (line) => logger.info({ event: 'cluster' }, line),
    ...(metrics === undefined ? {} : { onPrimary: (primary: ClusterPrimary) => void (own = primaryMetrics(metrics, primary)) }),
  });
  const closers: (() => Promise<void>)[] = [];
  const { metricsPort, metricsHost, adminToken } = command;
  let metricsUrl: string | undefined;
  if (metrics !== undefined) {
    try {
      const served = await serveMetrics(machineMetrics(metrics, own!, machine), metricsHost, metricsPort!, adminToken, logger);
      closers.push(served.close);
      metricsUrl = served.url;
    } catch (error) {
      await machine.close();
      throw error;
    }
  }
  closers.push(() => machine.close());
  let fleetLog: { stop(): void } | undefined;
  const stop = stopOnce(logger, stopLogging, (why) => {
    fleetLog?.stop();
    logger.info({ event: 'stopping', why }, `stopping (${why}): every worker closes its streams with their closing frames (reason shutdown)`);
    return closers.reduce((done, close) => done.then(close), Promise.resolve());
  });
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  process.stdout.write(`mcp-rx-streams listening on ${machine.url}\n`);
  if (metricsUrl !== undefined) process.stdout.write(`metrics on ${metricsUrl}\n`);
  logger.info({ event: 'listening', url: machine.url, workers, dir }, `${workers} workers serve ${dir} on ${machine.url}`);
  if (metricsUrl !== undefined) (await import('./metrics.js')).logMetrics(logger, metricsUrl, adminToken);
  if (machine.fleet !== undefined) {
    const { logFleet } = await import('../reference/fleetLog.js');
    fleetLog = logFleet(machine.fleet, redis!, logger, {
      timeout: command.redisTimeout,
      giveUp: (message) => {
        logger.error({ event: 'fatal' }, message);
        stop(1, 'Redis unreachable');
      },
    });
  }
}

/**
 * `serve --workers N` in a worker: the reference server on the machine's parts (the primary holds
 * Redis, if any). It says nothing on stdout (the primary does); its log lines go to stderr, as the
 * primary's, each with its worker id. Once it serves it tells the primary, and answers what the
 * primary asks for the machine's metrics and admin endpoints: its registry (with --metrics-port),
 * its streams, a revoke. Stops like one process on SIGINT/SIGTERM.
 */
export async function serveWorker(options: ReferenceServerOptions, metrics: MetricsKit | undefined, logger: CliLogger): Promise<void> {
  const { redis: _redis, nodeId: _nodeId, watchLeaseTtl: _ttl, redisConnectTimeout: _timeout, ...own } = options;
  const { startReferenceServer } = await import('../reference/server.js');
  const { serveWorkerChannel } = await import('../reference/workerChannel.js');
  const server = await startReferenceServer({ ...own, cluster: true, logger });
  const registry = metrics === undefined ? undefined : (await import('./metrics.js')).workerMetrics(metrics, server.endpoint);
  const { endpoint } = server;
  const stopAnswering = serveWorkerChannel(async (op, args) => {
    switch (op) {
      case 'metrics':
        return registry === undefined ? [] : registry.json();
      case 'streams':
        return endpoint.streams(args[0] as Parameters<typeof endpoint.streams>[0]);
      case 'revoke': {
        const principal = args[0] as string;
        // The sessions it ends, by id: the primary counts a session two workers held once.
        const sessionIds = endpoint.streams().flatMap((info) => (info.era === 'legacy' && info.principal === principal ? [info.id] : []));
        try {
          return { ...(await endpoint.revoke(principal, args[1] as Parameters<typeof endpoint.revoke>[1])), sessionIds } satisfies WorkerRevoke;
        } catch (error) {
          // What ended here still counts; the primary says the fleet was not told.
          if (error instanceof RevokeRelayError) return { ...error.info, sessionIds, relayError: error.message } satisfies WorkerRevoke;
          throw error;
        }
      }
    }
  });
  const stop = () => {
    stopAnswering();
    registry?.close();
    return server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
