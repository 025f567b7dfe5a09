import type { IncomingMessage, ServerResponse } from 'node:http';
import { Subject, type Subscription } from 'rxjs';
import { encodeFrame } from '../lib/encode.js';
import type { EndpointRequest, EndpointResponse, McpEndpoint } from '../lib/endpoint.js';

/** A `(req, res)` handler for `http.createServer`, Express (`app.post('/mcp', h)`) or Fastify raw. */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, parsedBody?: unknown) => void;

/**
 * Serves an {@link McpEndpoint} on node:http.
 *
 * The request body is read here with the endpoint's size limit (413 beyond it), unless a framework
 * already parsed it: Express's `req.body`, or the third argument (Fastify: `request.body`). An SSE
 * response is written frame by frame; `write()` returning false tells the stream the socket is
 * busy until `'drain'`, so a client that stops reading costs at most its bounded queue. When the
 * connection closes (client gone, socket destroyed), the stream is unsubscribed at once.
 *
 * @example
 * import http from 'node:http';
 * const endpoint = new McpEndpoint({ hub });
 * http.createServer(nodeHandler(endpoint)).listen(3000);
 * // Express: app.post('/mcp', nodeHandler(endpoint));
 * // Fastify: app.post('/mcp', (request, reply) => { reply.hijack(); handler(request.raw, reply.raw, request.body); });
 * @param endpoint the endpoint to serve.
 * @see webHandler
 */
export function nodeHandler(endpoint: McpEndpoint): NodeHandler {
  return (req, res, parsedBody) => {
    const preParsed = typeof parsedBody === 'function' ? (req as { body?: unknown }).body : (parsedBody ?? (req as { body?: unknown }).body);
    const request: EndpointRequest = {
      method: req.method ?? 'GET',
      header: (name) => {
        const value = req.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      },
      remoteAddress: req.socket.remoteAddress,
      body: preParsed !== undefined ? { parsed: preParsed } : req,
    };
    endpoint.handle(request).then(
      (response) => write(response, res, endpoint.listenOptions.keepAliveInterval),
      () => res.destroy(),
    );
  };
}

function write(response: EndpointResponse, res: ServerResponse, graceMs: number): void {
  if (res.destroyed || res.writableEnded) {
    if (response.kind === 'stream') response.abandon();
    return;
  }
  switch (response.kind) {
    case 'json':
      res.writeHead(response.status, { ...response.headers, 'Content-Length': Buffer.byteLength(response.body) });
      res.end(response.body);
      return;
    case 'empty':
      res.writeHead(response.status, response.headers);
      res.end();
      return;
    case 'stream':
      return stream(response, res, graceMs);
  }
}

function stream(response: Extract<EndpointResponse, { kind: 'stream' }>, res: ServerResponse, graceMs: number): void {
  res.writeHead(response.status, response.headers);
  // The client learns the stream is open now, not at its first frame (a legacy GET may have none for a while).
  res.flushHeaders();
  const demand$ = new Subject<boolean>();
  let subscription: Subscription | undefined;
  let closed = false;
  // The frames a stream gets within one tick (a burst of publishes, a notification and its
  // keep-alive) go out as one write: one HTTP chunk and one syscall instead of one per frame.
  // They are at most one tick's worth: once a write returns false the stream queues upstream.
  let pending = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending === '' || closed) return;
    const text = pending;
    pending = '';
    if (!res.write(text)) demand$.next(false);
  };
  const onDrain = () => demand$.next(true);
  const onClose = () => {
    closed = true;
    pending = '';
    res.off('drain', onDrain);
    subscription?.unsubscribe();
  };
  res.on('drain', onDrain);
  res.once('close', onClose);
  subscription = response.open(demand$).subscribe({
    next: (frame) => {
      pending += encodeFrame(frame);
      if (!scheduled) {
        scheduled = true;
        process.nextTick(flush);
      }
    },
    error: () => res.destroy(),
    complete: () => {
      flush();
      res.end();
      // The closing frames may still sit in the socket's buffer of a client that stopped reading:
      // it gets one keep-alive interval to take them, then the connection is dropped.
      if (!res.writableFinished) {
        const timer = setTimeout(() => res.destroy(), graceMs);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
      }
    },
  });
  if (closed) subscription.unsubscribe();
}
