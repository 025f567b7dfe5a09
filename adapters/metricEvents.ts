// The diagnostics-channel events the metrics bridges count (`mcp-rx-streams/metrics` on prom-client,
// `mcp-rx-streams/otel` on OpenTelemetry): one subscription list, so both count the same things.
import diagnostics_channel from 'node:diagnostics_channel';
import type { TopicKind } from '../lib/frame.js';
import { channels, type DropEvent, type ErrorEvent, type StartEvent, type StopEvent, type StopReason } from '../lib/telemetry.js';
import { redisChannels, type ConnectionEvent, type UnrelayedEvent } from './redis/telemetry.js';

/** What a metrics bridge is told, one method per counted event. @internal */
export interface MetricEventSink {
  /** A listen stream ended (legacy GET streams are counted from `endpoint.stats`). */
  closed(reason: StopReason): void;
  /** A notification was dropped for a slow consumer holding `queueBytes`. */
  dropped(topic: TopicKind, queueBytes: number): void;
  failed(where: ErrorEvent['where']): void;
  unrelayed(topic: UnrelayedEvent['topic'], reason: UnrelayedEvent['reason']): void;
  /** A Redis connection became ready (`up`) or was lost or closed. */
  connection(component: ConnectionEvent['component'], role: string, up: boolean): void;
}

/**
 * Subscribes the channels a metrics bridge counts and tells `sink`; `modernOpen()` is the number of
 * listen streams opened minus those stopped since (exact when subscribed before the endpoint serves).
 * @internal
 */
export function followMetricEvents(sink: MetricEventSink): { modernOpen(): number; close(): void } {
  let modernOpen = 0;
  const subscriptions: [diagnostics_channel.Channel, (message: unknown) => void][] = [
    [
      channels.start,
      (message) => {
        if ((message as StartEvent).era !== 'legacy') modernOpen++;
      },
    ],
    [
      channels.stop,
      (message) => {
        const event = message as StopEvent;
        if (event.era === 'legacy') return;
        modernOpen--;
        sink.closed(event.reason);
      },
    ],
    [
      channels.drop,
      (message) => {
        const event = message as DropEvent;
        sink.dropped(event.topic, event.queueBytes);
      },
    ],
    [channels.error, (message) => sink.failed((message as ErrorEvent).where)],
    [
      redisChannels.unrelayed,
      (message) => {
        const event = message as UnrelayedEvent;
        sink.unrelayed(event.topic, event.reason);
      },
    ],
    [
      redisChannels.connection,
      (message) => {
        const event = message as ConnectionEvent;
        sink.connection(event.component, event.role, event.status === 'ready');
      },
    ],
  ];
  for (const [channel, listener] of subscriptions) channel.subscribe(listener);
  let closed = false;
  return {
    modernOpen: () => modernOpen,
    close: () => {
      if (closed) return;
      closed = true;
      for (const [channel, listener] of subscriptions) channel.unsubscribe(listener);
    },
  };
}

/** `fn` to be run once: later calls do nothing (a bridge's idempotent `close`). @internal */
export function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
