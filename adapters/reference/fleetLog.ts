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
 * (serving its local streams meanwhile, without the folder's changes: only the holder of the watch
 * lease publishes them, and nobody holds it for this node before Redis answers), then when Redis
 * first answers, when this node takes the folder-watch lease and when it lets it go, when Redis
 * becomes unreachable and when it is back (with the running totals of hub events that waited in
 * the outbox, that never reached Redis, and of resyncs). Resyncs and unrelayed events are
 * `logTo`'s lines. Call `stop()` before closing the fleet: a shutdown is not an outage, and nothing
 * is logged about Redis after it (nor does a connection the shutdown ends call `giveUp`).
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
  if (!fleet.sessionBus.connected) {
    say('warn', { event: 'redis_waiting', redis: where }, `waiting for Redis at ${where}; local streams are served meanwhile, without the folder's changes until this node holds the watch lease`);
  }
  const giveUp = (message: string) => {
    if (!stopped) options.giveUp(message);
  };
  const waiting = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    say('warn', { event: 'redis_waiting', redis: where, waitedMs: Date.now() - started }, `still waiting for Redis at ${where} (${seconds} s)`);
  }, options.waitingInterval ?? 10_000).unref();
  const deadline =
    options.timeout === undefined
      ? undefined
      : setTimeout(() => giveUp(`Redis at ${where} did not answer within ${options.timeout} ms (--redis-timeout); is it running?`), options.timeout).unref();
  Promise.all([fleet.bus.ready(), fleet.sessionStore.ready(), fleet.eventLog.ready(), fleet.sessionBus.ready()]).then(
    () => {
      clearInterval(waiting);
      clearTimeout(deadline);
      const afterMs = Date.now() - started;
      say('info', { event: 'redis_connected', redis: where, afterMs }, `connected to Redis at ${where} after ${afterMs} ms: this node is part of the fleet`);
    },
    (error: unknown) => giveUp(`the fleet could not start on ${where}: ${error instanceof Error ? error.message : String(error)}`),
  );
  const subscriptions: Subscription[] = [];
  // The lease is news when this node takes it and when it lets it go; not holding it from the start
  // says nothing about who does (before Redis answers, nobody may).
  let held = false;
  subscriptions.push(
    fleet.lease.held$.subscribe((now) => {
      if (now === held) return;
      held = now;
      if (now) return say('info', { event: 'watch_lease', held }, "watch lease held: this node publishes the folder's changes to the fleet");
      if (!fleet.sessionBus.connected) {
        // Fleet.publishes: it carries on until Redis is back, its outbox relays what it publishes.
        return say('info', { event: 'watch_lease', held, carrying: true }, "watch lease not held: it lapsed while Redis is unreachable; this node goes on publishing the folder's changes, the other nodes hear them once Redis is back");
      }
      say('info', { event: 'watch_lease', held }, "watch lease not held: another node publishes the folder's changes");
    }),
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
        const folder = fleet.lease.held ? "this node goes on publishing the folder's changes" : "the folder's changes published elsewhere reach them once it is back";
        say('warn', { event: 'redis_down', redis: where }, `Redis at ${where} is unreachable: local streams go on (${folder}), hub events wait in the outbox, legacy session requests answer -32603 until it is back`);
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
