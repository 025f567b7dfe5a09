// `serve --stdio`: the reference server for one host that launches it as a child process.
import path from 'node:path';
import { readOptions } from '../../lib/optionTable.js';
import { REFERENCE_SETTINGS, type ReferenceServerOptions } from '../reference/options.js';
import type { ServeCommandOptions } from './serveFlags.js';

/**
 * `serve --stdio`: the reference server over this process's stdin and stdout. stdout carries
 * JSON-RPC only, so everything the command says goes to stderr. Ends with exit code 0 when the host
 * closes stdin (every stream ended, every slot released by then), or on SIGINT/SIGTERM after every
 * listen got its closing frames.
 */
export async function serveStdio(options: ReferenceServerOptions, { logLevel, logFormat }: ServeCommandOptions): Promise<void> {
  // Logs go to stderr, as on HTTP: stdout carries JSON-RPC only.
  const { cliLogger } = await import('./log.js');
  const { logTo } = await import('../logTo.js');
  const logger = cliLogger(logLevel, logFormat);
  const stopLogging = logTo(logger);
  const { startReferenceStdio } = await import('../reference/stdio.js');
  const dir = path.resolve(readOptions(REFERENCE_SETTINGS, options).dir);
  const server = await startReferenceStdio({ ...options, logger });
  let stopping = false;
  const stop = (code: number, why: string) => {
    // SIGTERM closes the channel, and its end would stop the process a second time.
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'stopping', why }, `stopping (${why}): every open stream gets its closing frames (reason shutdown)`);
    server.close().then(
      // stdout may still hold the closing frames: exit once it has taken them.
      () => {
        stopLogging();
        process.stdout.write('', () => process.exit(code));
      },
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  logger.info({ event: 'listening', dir, transport: 'stdio' }, `serving ${dir} on stdio`);
  await server.session.closed;
  stop(0, 'stdin closed');
}
