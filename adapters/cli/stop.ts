// The one way out of `serve` (one process, or a machine's primary).
import type { CliLogger } from './logLevels.js';

/**
 * The process's one way out, taken once: `close(why)` (which logs what it stops, and why: the
 * signal, or what went wrong), then `stopped` and exit `code`, or exit 1 if closing failed.
 */
export function stopOnce(logger: CliLogger, stopLogging: () => void, close: (why: string) => Promise<void>): (code: number, why: string) => void {
  let stopping = false;
  return (code, why) => {
    if (stopping) return;
    stopping = true;
    close(why).then(
      () => {
        logger.info({ event: 'stopped' }, 'stopped');
        stopLogging();
        process.exit(code);
      },
      (error: unknown) => {
        logger.error({ event: 'stopped', err: error }, 'stopped with an error while closing');
        process.exit(1);
      },
    );
  };
}
