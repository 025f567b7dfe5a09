import type { Channel } from 'node:diagnostics_channel';

/** Runs `body` with every event published on `channel` meanwhile collected in `events`. */
export async function collecting<T>(channel: Channel, body: (events: T[]) => Promise<void>): Promise<void> {
  const events: T[] = [];
  const onEvent = (event: unknown) => events.push(event as T);
  channel.subscribe(onEvent);
  try {
    await body(events);
  } finally {
    channel.unsubscribe(onEvent);
  }
}
