import type { IncomingMessage, ServerResponse } from 'node:http';
import { Subscriber } from 'rxjs';
import { Broadcast } from '../lib/broadcast.js';
import { encodeFrame } from '../lib/encode.js';
import type { Frame } from '../lib/frame.js';
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
  const writer = new SseWriter(res, graceMs);
  response.open(writer.demand).subscribe(writer);
  // The connection closed while the stream was being opened.
  if (writer.gone) writer.unsubscribe();
}

// The streams that got frames in this tick, written out together on the next one.
let dirty: SseWriter[] = [];

function flushDirty(): void {
  const writers = dirty;
  dirty = [];
  for (let i = 0; i < writers.length; i++) writers[i]!.flush();
}

/**
 * Writes one stream's frames to its response and reports the socket's demand back. One object
 * per stream (a Subscriber, not an observer object with closures): idle streams are many.
 */
class SseWriter extends Subscriber<Frame> {
  /** `false` when `write()` returned false, `true` on `'drain'`. */
  readonly demand = new Broadcast<boolean>();
  /** Set when the connection closed. */
  gone = false;
  // The frames a stream gets within one tick (a burst of publishes, a notification and its
  // keep-alive) go out as one write: one HTTP chunk and one syscall instead of one per frame.
  // They are at most one tick's worth: once a write returns false the stream queues upstream.
  private pending = '';
  private scheduled = false;
  private readonly onDrain = () => this.demand.next(true);
  private readonly onClose = () => {
    this.gone = true;
    this.pending = '';
    this.res.off('drain', this.onDrain);
    this.unsubscribe();
  };

  constructor(
    private readonly res: ServerResponse,
    private readonly graceMs: number,
  ) {
    super();
    res.on('drain', this.onDrain);
    res.once('close', this.onClose);
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending === '' || this.gone) return;
    const text = this.pending;
    this.pending = '';
    if (!this.res.write(text)) this.demand.next(false);
  }

  protected override _next(frame: Frame): void {
    this.pending += encodeFrame(frame);
    if (!this.scheduled) {
      this.scheduled = true;
      if (dirty.push(this) === 1) process.nextTick(flushDirty);
    }
  }

  protected override _error(): void {
    try {
      this.res.destroy();
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      const { res, graceMs } = this;
      this.flush();
      res.end();
      // The closing frames may still sit in the socket's buffer of a client that stopped reading:
      // it gets one keep-alive interval to take them, then the connection is dropped.
      if (!res.writableFinished) {
        const timer = setTimeout(() => res.destroy(), graceMs);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
      }
    } finally {
      this.unsubscribe();
    }
  }
}
