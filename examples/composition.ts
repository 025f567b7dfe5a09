// A stream of your own, composed from the public operators instead of served by McpEndpoint: the
// same chain the endpoint serves fused (listenPipeline), written out on node:http.
// Run it:   node --import tsx examples/composition.ts [port]     (then curl -N http://127.0.0.1:3001/)
// spec/adapters/frameworks.spec.ts serves composedServer() on a loopback port and reads its bytes.
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { BehaviorSubject } from 'rxjs';
import {
  ackThenNotify,
  acknowledgedNotification,
  closeWhen,
  controlFrame,
  dropWhenQueueExceeds,
  encodeFrame,
  Hub,
  idleTimeout,
  keepAlive,
  lifetimeCap,
  notifications,
  tagSubscriptionId,
  type ListenFilter,
} from '../index.js';

/**
 * An http.Server whose every request gets one SSE stream of `filter`'s notifications from `hub`,
 * tagged with subscription id `requestId`.
 *
 * `demand$` carries the socket's demand into the chain: the server pushes `false` when
 * `res.write()` returns false (the socket's buffer is past its high-water mark, the client is not
 * keeping up) and `true` on `'drain'`. `dropWhenQueueExceeds` is the only operator that reads it:
 * while it is `false`, frames wait in that operator's queue, bounded at 1000 notifications and
 * 1 MiB, where an identical pending notification is coalesced and beyond the bounds new ones are
 * dropped (control frames never are); on `true` the queue is written out in order. Without it
 * every frame would pile up in the response's own unbounded buffer.
 */
export function composedServer(hub: Hub, filter: ListenFilter, requestId: number | string): http.Server {
  return http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform' });
    const demand$ = new BehaviorSubject(true);
    res.on('drain', () => demand$.next(true));
    const stream = notifications(hub, filter)
      .pipe(
        ackThenNotify(controlFrame(acknowledgedNotification(filter))), // register topics, then ack
        keepAlive(15_000), // `:\r\n` every 15 s
        closeWhen([lifetimeCap(3_600_000), idleTimeout(1_800_000)], { requestId }), // closing frames, then complete
        tagSubscriptionId(requestId), // _meta subscriptionId on every message
        dropWhenQueueExceeds({ notifications: 1000, bytes: 1 << 20 }, demand$), // the socket boundary
      )
      .subscribe({
        next: (frame) => {
          if (!res.write(encodeFrame(frame))) demand$.next(false);
        },
        complete: () => res.end(),
      });
    res.on('close', () => stream.unsubscribe()); // the client went away: release everything
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const hub = new Hub();
  const port = Number(process.argv[2] ?? 3001);
  const server = composedServer(hub, { toolsListChanged: true }, 7).listen(port, '127.0.0.1', () => console.log(`streaming on http://127.0.0.1:${port}/`));
  // A change every 5 s, so the stream has something to show.
  const tick = setInterval(() => hub.notifyToolsChanged(), 5_000);
  const stop = () => {
    clearInterval(tick);
    server.closeAllConnections();
    server.close(() => hub.close());
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
