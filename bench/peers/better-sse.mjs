// better-sse: one Session per listen POST, all registered on one Channel per topic, published with
// `channel.broadcast`. A broadcast writes the same data to every session (better-sse serializes
// it per session), so its notifications cannot carry each stream's own subscription id: they are
// sent untagged, which only makes its frames cheaper. The ack is pushed per session, tagged.
// better-sse writes an `id:` (a UUID per broadcast) on every event; `retry` is turned off.
import { createChannel, createSession } from 'better-sse';
import { readListen, SUBSCRIPTION_ID_META_KEY } from './common.mjs';

export const name = 'better-sse';
export const description = 'Channel.broadcast';

export async function create() {
  const byUri = new Map();
  const tools = createChannel();
  const handler = async (req, res) => {
    const listen = await readListen(req, res);
    if (listen === undefined) return;
    const { message, filter } = listen;
    const session = await createSession(req, res, {
      keepAlive: 15_000,
      retry: null,
      headers: { 'X-Accel-Buffering': 'no', 'Cache-Control': 'no-cache, no-transform' },
    });
    session.push({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: filter, _meta: { [SUBSCRIPTION_ID_META_KEY]: message.id } },
    }, 'message');
    if (filter.toolsListChanged) tools.register(session);
    for (const uri of filter.resourceSubscriptions ?? []) {
      let channel = byUri.get(uri);
      if (channel === undefined) byUri.set(uri, (channel = createChannel()));
      channel.register(session);
    }
  };
  return {
    handler,
    publish(uri) {
      byUri.get(uri)?.broadcast({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } }, 'message');
    },
    publishMarker() {
      tools.broadcast({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'message');
    },
    registry: () => {
      let streams = 0;
      for (const channel of byUri.values()) streams += channel.sessionCount;
      return { streams, tools: tools.sessionCount };
    },
    close() {},
  };
}
