// What a fleet node of the reference server says about Redis and the folder watch, worded as what
// it means for the streams it serves (the `serve --redis` log lines).
import type { Subscription } from 'rxjs';
import type { Logger } from '../logTo.js';
import { redactedUrl } from '../redactedUrl.js';
import type { ReferenceFleet } from './server.js';

/** Options of {@link logFleet}. */
export interface FleetLogOptions {
  /** Milliseconds after which a node that never reached Redis gives up (`giveUp`); none: it waits for ever. */
  readonly timeout?: number | undefined;
  /** Called with a sentence when Redis did not answer within `timeout`, or the fleet could not start. */
  readonly giveUp: (message: string) => void;
  /** Milliseconds between two "still waiting" lines while Redis has never answered; defaults to 10 000. */
  readonly waitingInterval?: number;
}

/**
 * Logs a fleet node's state as it changes: at once which node it is and that it waits for Redis
 * (serving its local streams meanwhile), then when Redis first answers, whether it holds the
 * folder-watch lease, when Redis becomes unreachable and when it is back (with the running totals
 * of hub events that waited in the outbox, that never reached Redis, and of resyncs). Resyncs and
 * unrelayed events are `logTo`'s lines. Call `stop()` before closing the fleet: a shutdown is not
 * an outage, and nothing is logged about Redis after it.
 * @internal
 */
export function logFleet(fleet: ReferenceFleet, redis: string, logger: Logger, options: FleetLogOptions): { stop(): void } {
  const where = redactedUrl(redis);
  const started = Date.now();
  let stopped = false;
  const say = (level: 'info' | 'warn', fields: object, message: string) => {
    if (!stopped) logger[level](fields, message);
  };
  say('info', { event: 'fleet_node', nodeId: fleet.nodeId, redis: where }, `fleet node ${fleet.nodeId}: hub events, legacy sessions and the listen cap are shared through Redis at ${where}`);
  if (!fleet.sessionBus.connected) say('warn', { event: 'redis_waiting', redis: where }, `waiting for Redis at ${where}; local streams are served meanwhile`);
  const waiting = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    say('warn', { event: 'redis_waiting', redis: where, waitedMs: Date.now() - started }, `still waiting for Redis at ${where} (${seconds} s)`);
  }, options.waitingInterval ?? 10_000).unref();
  const deadline =
    options.timeout === undefined
      ? undefined
      : setTimeout(() => options.giveUp(`Redis at ${where} did not answer within ${options.timeout} ms (--redis-timeout); is it running?`), options.timeout).unref();
  Promise.all([fleet.bus.ready(), fleet.sessionStore.ready(), fleet.eventLog.ready(), fleet.sessionBus.ready()]).then(
    () => {
      clearInterval(waiting);
      clearTimeout(deadline);
      const afterMs = Date.now() - started;
      say('info', { event: 'redis_connected', redis: where, afterMs }, `connected to Redis at ${where} after ${afterMs} ms: this node is part of the fleet`);
    },
    (error: unknown) => options.giveUp(`the fleet could not start on ${where}: ${error instanceof Error ? error.message : String(error)}`),
  );
  const subscriptions: Subscription[] = [];
  subscriptions.push(
    fleet.lease.held$.subscribe((held) =>
      say(
        'info',
        { event: 'watch_lease', held },
        held ? 'watch lease held: this node publishes the folder\'s changes to the fleet' : 'watch lease not held: another node publishes the folder\'s changes',
      ),
    ),
  );
  let heard = false;
  subscriptions.push(
    fleet.sessionBus.connected$.subscribe((connected) => {
      // Before the first connection, "unreachable" would only repeat the waiting line.
      if (connected) {
        if (!heard) return void (heard = true);
        const { queued, unrelayed, resyncs } = fleet.bus.stats;
        say('info', { event: 'redis_back', redis: where, queued, unrelayed, resyncs }, `Redis at ${where} is reachable again: the outbox is sent (queued ${queued}, unrelayed ${unrelayed}, resyncs ${resyncs})`);
      } else if (heard) {
        say('warn', { event: 'redis_down', redis: where }, `Redis at ${where} is unreachable: local streams go on, hub events wait in the outbox, legacy session requests answer -32603 until it is back`);
      }
    }),
  );
  return {
    stop: () => {
      stopped = true;
      clearInterval(waiting);
      clearTimeout(deadline);
      for (const subscription of subscriptions) subscription.unsubscribe();
    },
  };
}
