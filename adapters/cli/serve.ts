// `mcp-rx-streams serve`: the reference server on one process, on every core (`--workers`), or over
// stdio (`--stdio`), with its logs on stderr and one line on stdout once it listens.
import cluster from 'node:cluster';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { readOptions } from '../../lib/optionTable.js';
import { REFERENCE_SETTINGS, type ReferenceServerOptions } from '../reference/options.js';
import { UsageError } from './errors.js';
import { helpText } from './flags.js';
import type { CliLogger } from './logLevels.js';
import type { MetricsKit } from './metrics.js';
import { readServe, SERVE, type ServeCommandOptions } from './serveFlags.js';
import { stopOnce } from './stop.js';

/** Runs `serve` with the command line `argv` (after `serve`). */
export async function serve(argv: readonly string[]): Promise<void> {
  const { help, server: options, command } = readServe(argv);
  if (help) return void process.stdout.write(helpText(SERVE));
  const { dir } = readOptions(REFERENCE_SETTINGS, options);
  const found = await stat(path.resolve(dir)).catch(() => undefined);
  if (found === undefined && command.demo !== true) throw new UsageError(`--dir ${dir} does not exist; create it, or add --demo to create it with sample files`);
  if (found !== undefined && !found.isDirectory()) throw new UsageError(`--dir ${dir} is not a directory`);
  // With --redis the server starts at once and the fleet connects in the background.
  const server: ReferenceServerOptions = options.redis === undefined ? options : { ...options, redisConnectTimeout: 0 };
  if (command.stdio === true) {
    const { serveStdio } = await import('./stdio.js');
    return serveStdio(server, command);
  }
  // Logs go to stderr (stdout has the one line that says the server is up, and the metrics URL); a
  // worker's lines say which worker wrote them.
  const { cliLogger } = await import('./log.js');
  const { logTo } = await import('../logTo.js');
  const logger = cliLogger(command.logLevel, command.logFormat, cluster.isWorker ? cluster.worker!.id : undefined);
  const stopLogging = logTo(logger);
  // Every listener the flags ask for is up before the ready line: without prom-client nothing opens.
  const metrics = command.metricsPort === undefined ? undefined : await (await import('./metrics.js')).loadMetrics();
  if (command.workers !== undefined && command.workers > 1) {
    const { serveMachine, serveWorker } = await import('./machine.js');
    return cluster.isPrimary ? serveMachine(server, command, metrics, logger, stopLogging) : serveWorker(server, metrics, logger);
  }
  return serveOne(server, command, metrics, logger, stopLogging);
}

/** The reference server on this one process, and its metrics port. */
async function serveOne(options: ReferenceServerOptions, command: ServeCommandOptions, metrics: MetricsKit | undefined, logger: CliLogger, stopLogging: () => void): Promise<void> {
  const { startReferenceServer } = await import('../reference/server.js');
  const server = await startReferenceServer({ ...options, logger });
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const closers: (() => Promise<void>)[] = [() => server.close()];
  const { metricsPort, metricsHost, adminToken } = command;
  let metricsUrl: string | undefined;
  if (metrics !== undefined) {
    try {
      const { processMetrics, serveMetrics } = await import('./metrics.js');
      const served = await serveMetrics(processMetrics(metrics, server.endpoint), metricsHost, metricsPort!, adminToken, logger);
      closers.push(served.close);
      metricsUrl = served.url;
    } catch (error) {
      await server.close();
      throw error;
    }
  }
  let fleetLog: { stop(): void } | undefined;
  const stop = stopOnce(logger, stopLogging, (why) => {
    // A shutdown is not an outage: nothing more is said about Redis.
    fleetLog?.stop();
    logger.info({ event: 'stopping', why, streams: server.endpoint.stats.streams }, `stopping (${why}): every open stream gets its closing frames (reason shutdown)`);
    return Promise.all(closers.map((close) => close())).then(() => undefined);
  });
  // Before the line that says the server is up: a supervisor (or a test) that stops the server as
  // soon as it reads it must find the handler, not the default action that kills the process.
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  say(`mcp-rx-streams listening on ${server.url}`);
  if (metricsUrl !== undefined) say(`metrics on ${metricsUrl}`);
  const { logStart } = await import('./start.js');
  logStart(logger, server, { dir: path.resolve(readOptions(REFERENCE_SETTINGS, options).dir), tokens: options.tokenSecret !== undefined || options.issuer !== undefined, issuer: options.issuer });
  if (metricsUrl !== undefined) (await import('./metrics.js')).logMetrics(logger, metricsUrl, adminToken);
  if (server.fleet !== undefined) {
    const { logFleet } = await import('../reference/fleetLog.js');
    fleetLog = logFleet(server.fleet, options.redis!, logger, {
      timeout: command.redisTimeout,
      giveUp: (message) => {
        logger.error({ event: 'fatal' }, message);
        stop(1, 'Redis unreachable');
      },
    });
  }
}
