// The `mcp-rx-streams serve` logger: pino on stderr, written synchronously (a line is out before
// the next statement runs, and before `process.exit`), as JSON or through pino-pretty in this
// process (no transport worker thread). Loaded by the CLI only: the library's entries never import
// pino, it takes a logger (`logTo`).
import pino from 'pino';
import pretty from 'pino-pretty';
import type { CliLogger, LogFormat, LogLevel } from './logLevels.js';

/**
 * The CLI's logger on stderr (file descriptor 2).
 * - `json`: pino's own lines (`level` as a number, `time` in milliseconds since the epoch, `pid`,
 *   `hostname`, `worker` in a worker of `serve --workers`, `msg`, the fields), one per line;
 * - `pretty`: `[HH:MM:ss.mmm] LEVEL: message {fields}` on one line (an error's stack below it),
 *   the message of a worker's line after `worker N: `, colored when stderr is a terminal.
 * @param level the least severe level written.
 * @param worker the `cluster.worker.id` of a worker of `serve --workers` (the id the primary's
 *   `cluster: worker N (pid P) …` lines give it); absent in the primary or one process.
 */
export function cliLogger(level: LogLevel, format: LogFormat, worker?: number): CliLogger {
  const bindings = worker === undefined ? {} : { worker };
  if (format === 'json') return pino({ level }, pino.destination({ fd: 2, sync: true })).child(bindings);
  const stream = pretty({
    destination: 2,
    sync: true,
    singleLine: true,
    ignore: 'pid,hostname,event,worker',
    messageFormat: '{if worker}worker {worker}: {end}{msg}',
    translateTime: 'SYS:HH:MM:ss.l',
    colorize: process.stderr.isTTY === true,
  });
  return pino({ level }, stream).child(bindings);
}
