// `serve --workers N`: this process is the machine's node:cluster primary, and each worker it forks
// runs the same command line as a worker (adapters/reference/primary.ts).
import path from 'node:path';
import { readOptions } from '../../lib/optionTable.js';
import { REFERENCE_SETTINGS, type ReferenceServerOptions } from '../reference/options.js';
import type { CliLogger } from './logLevels.js';
import { stopOnce } from './stop.js';

/**
 * `serve --workers N` in the primary: the machine's shared state and N workers on one port (see
 * `adapters/reference/primary.ts`). stdout says where it listens, as one process does; the log
 * (stderr) says what happens to the workers (`cluster: …`) and, with `--redis`, to the fleet.
 * SIGINT/SIGTERM stop every worker gracefully (their streams get their closing frames), then the
 * primary, exit code 0.
 */
export async function serveMachine(options: ReferenceServerOptions, workers: number, redisTimeout: number | undefined, logger: CliLogger, stopLogging: () => void): Promise<void> {
  const { startReferencePrimary } = await import('../reference/primary.js');
  const { redis } = options;
  const dir = path.resolve(readOptions(REFERENCE_SETTINGS, options).dir);
  const machine = await startReferencePrimary({ ...options, workers, dir, say: (line) => logger.info({ event: 'cluster' }, line) });
  let fleetLog: { stop(): void } | undefined;
  const stop = stopOnce(logger, stopLogging, (why) => {
    fleetLog?.stop();
    logger.info({ event: 'stopping', why }, `stopping (${why}): every worker closes its streams with their closing frames (reason shutdown)`);
    return machine.close();
  });
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  process.stdout.write(`mcp-rx-streams listening on ${machine.url}\n`);
  logger.info({ event: 'listening', url: machine.url, workers, dir }, `${workers} workers serve ${dir} on ${machine.url}`);
  if (machine.fleet !== undefined) {
    const { logFleet } = await import('../reference/fleetLog.js');
    fleetLog = logFleet(machine.fleet, redis!, logger, {
      timeout: redisTimeout,
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
 * primary's. Stops like one process on SIGINT/SIGTERM.
 */
export async function serveWorker(options: ReferenceServerOptions, logger: CliLogger): Promise<void> {
  const { redis: _redis, nodeId: _nodeId, watchLeaseTtl: _ttl, redisConnectTimeout: _timeout, ...own } = options;
  const { startReferenceServer } = await import('../reference/server.js');
  const server = await startReferenceServer({ ...own, cluster: true, logger });
  const stop = () => server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
