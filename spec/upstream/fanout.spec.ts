// Shared and bounded (issue 34): 1 000 downstream listens on one URI hold one upstream stream,
// closed when the last one leaves and opened again when one arrives; an upstream holds at most
// maxUris URIs.
import { deepStrictEqual, strictEqual } from 'node:assert';
import { Agent } from 'undici';
import { test } from 'uvu';
import { listen } from '../../adapters/client.js';
import { upstreamUri } from '../../adapters/upstream/index.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { acknowledged, referenceUpstream, startGateway, until } from '../helpers/gateway.js';

const N = 1_000;
const FAST = { initialDelay: 20, maxDelay: 100, jitter: 0 };

for (const era of ['modern', 'legacy'] as const) {
  test(`${N} downstream listens on one URI of an upstream speaking ${era} hold one upstream stream, closed after the last leaves, opened again for the next`, async () => {
    const upstream = await referenceUpstream({ 'a.txt': 'a' });
    const front = await startGateway({
      upstreams: [{ name: 'notes', url: upstream.server.url, era, reconnect: FAST, linger: 50 }],
      endpoint: { maxStreams: N + 10, maxListensPerPrincipal: N + 10 },
    });
    const dispatcher = new Agent({ connections: null, pipelining: 0 });
    const a = upstreamUri('notes', upstream.uri('a.txt'));
    const heard: number[] = new Array(N).fill(0);
    const subscriptions = Array.from({ length: N }, (_, i) =>
      listen({ url: front.url, id: i, notifications: { resourceSubscriptions: [a] }, dispatcher }).subscribe((message: JsonRpcMessage) => void heard[i]!++),
    );
    const upstreamStats = () => upstream.server.endpoint.stats;
    try {
      await until(() => heard.every((count) => count === 1), `${N} acknowledgments`, 30_000);
      const stats = front.gateway.stats[0]!;
      deepStrictEqual([stats.uris, stats.streams], [1, era === 'modern' ? 2 : 1], 'one URI; the list stream and one listen (modern), or one session stream (legacy)');
      if (era === 'modern') strictEqual(upstreamStats().streams, 2, 'the upstream serves two listens: the list changes, and the one URI');
      else deepStrictEqual([upstreamStats().sessions, upstreamStats().streams, upstreamStats().sessionSubscriptions], [1, 1, 2], 'one session, one GET, one resources/subscribe (and its list feed)');

      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      await until(() => heard.every((count) => count === 2), `the update on ${N} streams`, 30_000);
      strictEqual(front.gateway.stats[0]!.framesOut, 1, 'one change handed on, fanned out by the hub');

      for (const subscription of subscriptions) subscription.unsubscribe();
      await until(() => front.endpoint.stats.streams === 0, 'the downstream streams to end', 10_000);
      await until(() => front.gateway.stats[0]!.uris === 0, 'the URI let go after its linger');
      if (era === 'modern') await until(() => upstreamStats().streams === 1, 'the upstream listen of the URI closed');
      else await until(() => upstreamStats().sessionSubscriptions === 1, 'the URI unsubscribed upstream');

      // The next listen opens it again.
      const again: JsonRpcMessage[] = [];
      const next = listen({ url: front.url, notifications: { resourceSubscriptions: [a] } }).subscribe((message) => again.push(message));
      try {
        await until(() => again.length === 1, 'the acknowledgment');
        deepStrictEqual(acknowledged(again[0]), { resourceSubscriptions: [a] });
        upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
        await until(() => again.length === 2, 'the update');
      } finally {
        next.unsubscribe();
      }
    } finally {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await front.close();
      await dispatcher.close();
      await upstream.server.close();
    }
  });
}

test('an upstream holds at most maxUris URIs: one more is left out of the acknowledgment of a listen; room comes back as URIs are let go', async () => {
  const upstream = await referenceUpstream({ 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' });
  const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era: 'modern', reconnect: FAST, maxUris: 2, linger: 0 }] });
  const [a, b, c] = ['a.txt', 'b.txt', 'c.txt'].map((name) => upstreamUri('notes', upstream.uri(name)));
  const messages: JsonRpcMessage[] = [];
  const first = listen({ url: front.url, notifications: { resourceSubscriptions: [a, b, c] } }).subscribe((message) => messages.push(message));
  try {
    await until(() => messages.length === 1, 'the acknowledgment');
    const honoured = (acknowledged(messages[0]) as { resourceSubscriptions: string[] }).resourceSubscriptions;
    strictEqual(honoured.length, 2, `two of three: ${JSON.stringify(honoured)}`);
    strictEqual(front.gateway.stats[0]!.uris, 2);
    first.unsubscribe();
    await until(() => front.gateway.stats[0]!.uris === 0, 'the URIs let go');
    const later: JsonRpcMessage[] = [];
    const second = listen({ url: front.url, notifications: { resourceSubscriptions: [c] } }).subscribe((message) => later.push(message));
    try {
      await until(() => later.length === 1, 'the acknowledgment');
      deepStrictEqual(acknowledged(later[0]), { resourceSubscriptions: [c] });
    } finally {
      second.unsubscribe();
    }
  } finally {
    first.unsubscribe();
    await front.close();
    await upstream.server.close();
  }
});

test.run();
