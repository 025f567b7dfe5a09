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
  const demand$ = new Subject<boolean>();
  let subscription: Subscription | undefined;
  let closed = false;
  const onDrain = () => demand$.next(true);
  const onClose = () => {
    closed = true;
    res.off('drain', onDrain);
    subscription?.unsubscribe();
  };
  res.on('drain', onDrain);
  res.once('close', onClose);
  subscription = response.open(demand$).subscribe({
    next: (frame) => {
      if (!res.write(encodeFrame(frame))) demand$.next(false);
    },
    error: () => res.destroy(),
    complete: () => {
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
