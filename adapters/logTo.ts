// The library never logs by itself; `logTo(logger)` turns its diagnostics channels into log lines
// on a logger of the application's (pino, Fastify's `app.log`, anything with the same four methods).
import diagnostics_channel from 'node:diagnostics_channel';
import { implementing, nonNegativeInteger, options as validOptions } from '../lib/validate.js';
import { channels, type DropEvent, type ErrorEvent, type SessionCreatedEvent, type SessionEndedEvent, type StartEvent, type StopEvent } from '../lib/telemetry.js';
import { redisChannels, type ConnectionEvent, type ResyncEvent, type UnrelayedEvent } from './redis/telemetry.js';

/**
 * The part of a pino logger `logTo` uses: one method per level, called as pino's are, with an
 * object of fields first and the message second. A pino logger (or Fastify's `app.log`, which is
 * one) fits as it is; so does anything with these four methods.
 */
export interface Logger {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Options of {@link logTo}. */
export interface LogToOptions {
  /**
   * Least time between two `warn` lines about notifications dropped for clients that are not
   * reading, in milliseconds; the drops in between are counted into the next one (each drop is a
   * `debug` line as well). Defaults to 10 000.
   */
  readonly dropWarningInterval?: number;
}

/** What each `channels.error` place means to an operator, and how loud it is. */
const ERRORS: Readonly<Record<ErrorEvent['where'], { readonly level: 'error' | 'warn'; readonly message: string }>> = Object.freeze({
  endpoint: { level: 'error', message: 'a request failed inside the endpoint and was answered -32603 (a hook such as authenticate threw, or a bug)' },
  adapter: { level: 'error', message: "a stream's write path failed; that stream was ended and its connection dropped" },
  hub: { level: 'warn', message: 'a receiver of a hub notification threw; delivery went on without it' },
  source: { level: 'warn', message: 'a change source or resource provider failed; delivery went on without it' },
});

/**
 * Logs what the library reports on its `node:diagnostics_channel` channels to `logger`, until the
 * returned function is called. Lines, by level:
 *
 * - `info`: `stream opened` and `stream closed` (`era`, `reason`, `durationMs`, `filters`,
 *   `resourceSubscriptions`), `session created` and `session ended` (`protocolVersion`, `reason`);
 * - `warn`: notifications dropped for clients that are not reading (at most one line per
 *   `dropWarningInterval`, with the count since the last), a change source or hub receiver that
 *   failed, a Redis resync, a hub event Redis could not relay;
 * - `error`: a request that failed inside the endpoint (a throwing `authenticate`, say), a stream
 *   whose write path failed;
 * - `debug`: each dropped notification, each Redis connection ready, lost or closed.
 *
 * The channels never carry a URI, an id, a token or a principal, so neither does a line: the
 * endpoint's `streams()` snapshot is where those are. The channels are process-wide: one `logTo`
 * per process logs every endpoint of it. A logger that throws loses that line, nothing else.
 *
 * @example
 * import pino from 'pino';
 * import { logTo } from 'mcp-rx-streams';
 * const stop = logTo(pino());
 * // with Fastify: logTo(app.log)
 * @param logger where the lines go (a pino logger, or any {@link Logger}).
 * @param options see {@link LogToOptions}.
 * @returns a function that stops logging (idempotent).
 * @throws InvalidOptionError when `logger` lacks one of the four methods or an option is invalid.
 */
export function logTo(logger: Logger, options?: LogToOptions): () => void {
  implementing('logger', logger, ['error', 'warn', 'info', 'debug'], 'a logger with error, warn, info and debug methods (a pino logger)');
  const given = validOptions('logTo options', options, ['dropWarningInterval']);
  const interval = given.dropWarningInterval === undefined ? 10_000 : nonNegativeInteger('dropWarningInterval', given.dropWarningInterval, 'milliseconds');

  // A logger that throws must not become an uncaught exception (diagnostics_channel rethrows a
  // subscriber's error on the next tick).
  const line = (level: keyof Logger, fields: object, message: string) => {
    try {
      logger[level](fields, message);
    } catch {
      // The line is lost; nothing else is.
    }
  };
  let dropsSince = 0;
  let lastDropWarning = Number.NEGATIVE_INFINITY;
  const subscriptions: [diagnostics_channel.Channel, (message: unknown) => void][] = [
    [
      channels.start,
      (message) => {
        const { era, filters, resourceSubscriptions } = message as StartEvent;
        line('info', { event: 'stream_opened', era, filters, resourceSubscriptions }, 'stream opened');
      },
    ],
    [
      channels.stop,
      (message) => {
        const { era, reason, duration, filters } = message as StopEvent;
        line('info', { event: 'stream_closed', era, reason, durationMs: Math.round(duration), filters }, `stream closed: ${reason}`);
      },
    ],
    [
      channels.sessionCreated,
      (message) => line('info', { event: 'session_created', protocolVersion: (message as SessionCreatedEvent).protocolVersion }, 'legacy session created'),
    ],
    [
      channels.sessionEnded,
      (message) => {
        const { protocolVersion, reason } = message as SessionEndedEvent;
        line('info', { event: 'session_ended', protocolVersion, reason }, `legacy session ended: ${reason}`);
      },
    ],
    [
      channels.drop,
      (message) => {
        const { topic, queueLength, queueBytes } = message as DropEvent;
        line('debug', { event: 'notification_dropped', topic, queueLength, queueBytes }, 'notification dropped for a client that is not reading');
        dropsSince++;
        const now = Date.now();
        if (now - lastDropWarning < interval) return;
        line(
          'warn',
          { event: 'notifications_dropped', dropped: dropsSince, topic, queueLength, queueBytes },
          `${dropsSince} notification(s) dropped for clients that are not reading (their queues are full)`,
        );
        dropsSince = 0;
        lastDropWarning = now;
      },
    ],
    [
      channels.error,
      (message) => {
        const { where, error } = message as ErrorEvent;
        const { level, message: text } = ERRORS[where] ?? ERRORS.source;
        line(level, { event: 'error', where, err: error }, text);
      },
    ],
    [
      redisChannels.connection,
      (message) => {
        const { component, role, status } = message as ConnectionEvent;
        line('debug', { event: 'redis_connection', component, role, status }, `redis connection ${status}: ${component} ${role}`);
      },
    ],
    [
      redisChannels.resync,
      (message) => {
        const { reason, resyncs } = message as ResyncEvent;
        line('warn', { event: 'redis_resync', reason, resyncs }, `resynced (${reason}): this node could not prove it saw every change, so every stream was told to re-read`);
      },
    ],
    [
      redisChannels.unrelayed,
      (message) => {
        const { topic, reason, unrelayed } = message as UnrelayedEvent;
        line('warn', { event: 'redis_unrelayed', topic, reason, unrelayed }, `a hub event could not be relayed to the other nodes (${reason})`);
      },
    ],
  ];
  for (const [channel, listener] of subscriptions) channel.subscribe(listener);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    for (const [channel, listener] of subscriptions) channel.unsubscribe(listener);
  };
}
