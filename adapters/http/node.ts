import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Broadcast } from '../../lib/broadcast.js';
import { encodeFrame, KEEP_ALIVE_TEXT } from '../../lib/encode.js';
import type { Frame } from '../../lib/frame.js';
import type { EndpointRequest } from '../../lib/context.js';
import type { McpEndpoint } from './endpoint.js';
import type { EndpointResponse } from '../../protocol/responses.js';
import { StalledStreamError } from '../../lib/errors.js';
import { LeanSubscriber } from '../../lib/subscribers.js';
import { reportError } from '../../lib/telemetry.js';
import { ownsSocket, writeChunk } from './socketChunk.js';
import { endpoint as validEndpoint } from '../../lib/validate.js';

/** A `(req, res)` handler for `http.createServer`, Express (`app.post('/mcp', h)`) or Fastify (`request.raw`, `reply.raw`). */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, parsedBody?: unknown) => void;

/**
 * Serves an {@link McpEndpoint} on node:http.
 *
 * The request body is read here with the endpoint's size limit (413 beyond it), unless a framework
 * already parsed it: Express's `req.body`, or the third argument. A framework that parses JSON
 * itself answers a malformed body with its own error before this handler runs; leave the body to
 * the endpoint to have it answer JSON-RPC `-32700` (Express: mount `/mcp` ahead of `express.json()`;
 * Fastify: a plugin without content-type parsers, as below and in `examples/fastify.ts`). An SSE
 * response is written once per tick with the frames the stream got in it: as one HTTP chunk
 * written to the socket directly while the response owns its connection and node's own
 * `res.write` is in place (the same bytes, one syscall), else through `res.write` (a compression
 * middleware, a response queued behind another on a keep-alive connection). A write that leaves
 * 64 KiB waiting tells the stream the client is busy until `'drain'`, so a client that stops
 * reading costs at most its bounded queue. When the
 * connection closes (client gone, socket destroyed), the stream is unsubscribed at once, whatever
 * state it is in: mid-stream, closing, or still queued behind another response pipelined on the
 * same keep-alive connection (the socket is watched, not only the response). An error on a
 * stream's write path ends that stream alone and is reported on `channels.error`.
 *
 * An answer given before the request's body has all arrived (a refusal that did not need it: 401,
 * 403, 404, 405, 406, 413, 503…) says `Connection: close`, and node ends the connection once the
 * answer is out, instead of reading and discarding the rest of the body for as long as the client
 * trickles it (see {@link answerHeaders}). A request whose body has arrived keeps its keep-alive
 * connection, read or not. Every `Host` line reaches the endpoint (node's `req.headers` keeps only
 * the first), which answers two with 400.
 *
 * @example
 * import http from 'node:http';
 * const endpoint = new McpEndpoint({ hub });
 * http.createServer(nodeHandler(endpoint)).listen(3000);
 * // Express 5, ahead of express.json() (examples/express.ts):
 * app.all('/mcp', nodeHandler(endpoint));
 * app.use(express.json());
 * // Fastify 5: a plugin whose own parsers read nothing, so the endpoint reads the raw body (examples/fastify.ts):
 * const handle = nodeHandler(endpoint);
 * await app.register(async (scope) => {
 *   scope.removeAllContentTypeParsers();
 *   scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
 *   scope.route({ method: ['GET', 'POST', 'DELETE'], url: '/mcp', handler: (request, reply) => { reply.hijack(); handle(request.raw, reply.raw); } });
 * });
 * @param endpoint the endpoint to serve.
 * @throws InvalidOptionError naming `nodeHandler endpoint` when `endpoint` is not an McpEndpoint (a
 *   Hub given instead is told to pass `new McpEndpoint({ hub })`).
 * @see webHandler
 */
export function nodeHandler(endpoint: McpEndpoint): NodeHandler {
  validEndpoint('nodeHandler endpoint', endpoint);
  return (req, res, parsedBody) => {
    // Taken now: once the request is destroyed (say, a refused body) `req.socket` is null.
    const socket = req.socket;
    const preParsed = typeof parsedBody === 'function' ? (req as { body?: unknown }).body : (parsedBody ?? (req as { body?: unknown }).body);
    const request: EndpointRequest = {
      method: req.method ?? 'GET',
      header: (name) => requestHeader(req, name),
      remoteAddress: socket.remoteAddress,
      body: preParsed !== undefined ? { parsed: preParsed } : req,
    };
    // Nothing thrown while answering may reach the process (an unhandled rejection ends it).
    const answer = (response: EndpointResponse): void => {
      try {
        write(response, req, socket, res, endpoint.listenOptions.keepAliveInterval);
      } catch (error) {
        reportError('adapter', error);
        res.destroy();
      }
    };
    endpoint
      .handle(request)
      .then(
        (response) => whenParsed(req, () => answer(response)),
        () => res.destroy(),
      )
      .catch((error: unknown) => {
        reportError('adapter', error);
        res.destroy();
      });
  };
}

/**
 * The header `name` (lower case) of `req` as {@link EndpointRequest.header} reports it: several
 * values joined with `, `. Every `Host` line counts (node's `req.headers` keeps only the first),
 * so that the endpoint can refuse two.
 * @internal also for the SDK router, which routes on the same view of a request.
 */
export function requestHeader(req: IncomingMessage, name: string): string | undefined {
  if (name === 'host') return fieldValues(req.rawHeaders, name);
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Every value of the header `name` (lower case) in `rawHeaders`, joined with `, ` as Fetch
 * `Headers.get` joins them; `undefined` when there is none. For a header whose later lines node
 * drops from `req.headers` (Host, Authorization, Content-Type…).
 */
function fieldValues(rawHeaders: readonly string[], name: string): string | undefined {
  let joined: string | undefined;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const field = rawHeaders[i]!;
    if (field.length === name.length && field.toLowerCase() === name) joined = joined === undefined ? rawHeaders[i + 1]! : `${joined}, ${rawHeaders[i + 1]!}`;
  }
  return joined;
}

/**
 * The headers to answer `req` with: `headers`, plus `Connection: close` while the request's body
 * has not all arrived (see {@link bodyPending}).
 *
 * node:http keeps the connection of a request answered before its body arrived, and after the
 * response reads and discards the rest of the body for as long as the client sends it, bounded
 * only by `server.requestTimeout` (which a server of long streams often sets to 0). One client
 * could so hold any number of sockets with requests it already got an answer to (401, 403, 404,
 * 405, 413…). With `Connection: close` node ends the connection as soon as the response is out.
 * A request whose body has arrived, read or not, keeps its keep-alive connection, and so does one
 * without a body.
 * @param req the request being answered.
 * @param headers the response's own headers (not modified).
 * @internal also for the answers a server around {@link nodeHandler} writes itself (the
 *   reference server's 404, the CLI's metrics, the SDK router's answers), with {@link whenParsed}.
 */
export function answerHeaders<H extends Readonly<Record<string, string | number | readonly string[]>>>(req: IncomingMessage, headers: H): H {
  return bodyPending(req) ? { ...headers, Connection: 'close' } : headers;
}

/**
 * Calls `write` once node has parsed what has arrived of `req`, so that {@link answerHeaders}
 * judges the body by what the client sent, not by how far node got: at once for a request without
 * a body or whose body is in, else one turn of the event loop later. node parses the bytes that
 * came with the head only after the microtasks its `'request'` event started, so an answer that did
 * not read the body would find it unparsed even when all of it has arrived.
 * @param req the request being answered.
 * @param write writes the answer (must not throw: it may run in a `setImmediate`).
 * @internal also for the answers a server around {@link nodeHandler} writes itself.
 */
export function whenParsed(req: IncomingMessage, write: () => void): void {
  if (bodyPending(req)) setImmediate(write);
  else write();
}

/**
 * True while node has not parsed the whole of an HTTP/1.x request that has a body (a
 * `Content-Length` other than 0, or a `Transfer-Encoding`): its body, or part of it, is still to
 * come. A request without a body is never pending, even in the moment before node marks it complete.
 */
function bodyPending(req: IncomingMessage): boolean {
  // HTTP/2 (the compat API) has no Connection header: a stream is reset, not a connection kept.
  if (req.complete || req.httpVersionMajor !== 1) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function write(response: EndpointResponse, req: IncomingMessage, socket: Socket, res: ServerResponse, keepAliveInterval: number): void {
  // The connection may have ended while the request was being handled; a response queued behind
  // another on a keep-alive connection never hears its own 'close' (Node 20): look at the socket.
  if (res.destroyed || res.writableEnded || socket.destroyed) {
    if (response.kind === 'stream') response.abandon();
    return;
  }
  switch (response.kind) {
    case 'json':
      res.writeHead(response.status, answerHeaders(req, { ...response.headers, 'Content-Length': Buffer.byteLength(response.body) }));
      res.end(response.body);
      return;
    case 'empty':
      res.writeHead(response.status, answerHeaders(req, response.headers));
      res.end();
      return;
    case 'stream':
      return stream(response, answerHeaders(req, response.headers), socket, res, keepAliveInterval);
  }
}

function stream(
  response: Extract<EndpointResponse, { kind: 'stream' }>,
  headers: Readonly<Record<string, string | number>>,
  socket: Socket,
  res: ServerResponse,
  keepAliveInterval: number,
): void {
  res.writeHead(response.status, headers);
  // The client learns the stream is open now, not at its first frame (a legacy GET may have none for a while).
  res.flushHeaders();
  const writer = new SseWriter(res, socket, keepAliveInterval);
  try {
    response.open(writer.demand).subscribe(writer);
  } catch (error) {
    writer.fail(error);
    return;
  }
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
 * What a stream's text is written in: once a stream's pending text reaches this many UTF-16 code
 * units it is written at once instead of at the end of the tick, so that a burst never becomes
 * one unbounded string (and the socket's backpressure applies within the burst).
 */
const WRITE_CHUNK = 16_384;

/**
 * Bytes a stream's response may buffer in node (`res.writableLength`) before the stream is told
 * the client is busy: 64 KiB. Node reports any write busy once 16 KiB wait for the kernel, which
 * happens within a single burst to a client that reads at full speed (the kernel takes them a
 * moment later); told at once, the stream would queue, coalesce and drop the burst of a healthy
 * client. So a burst of up to this much is written straight through, and only a client whose
 * backlog reaches it is slow. What a stalled client costs: this, plus its queue
 * (`listenMaxQueueBytes`), plus the kernel's socket buffers.
 */
const BUSY_BYTES = 65_536;

/** Milliseconds after a keep-alive on a paused connection before the probe that finds a gone peer (see `probeLater`). */
const PROBE_DELAY_MS = 50;

/**
 * The streams queued on each connection behind the response it is serving (pipelined on a
 * keep-alive connection): such a response hears no `'close'` of its own until the connection
 * serves it, so its connection is watched, with one `'close'` listener per socket however many
 * wait. A response the connection serves hears its connection close itself.
 */
const queuedOn = new WeakMap<Socket, Set<SseWriter>>();

function watch(socket: Socket, writer: SseWriter): void {
  let writers = queuedOn.get(socket);
  if (writers === undefined) {
    const set = (writers = new Set());
    queuedOn.set(socket, set);
    socket.once('close', () => {
      queuedOn.delete(socket);
      for (const each of Array.from(set)) each.connectionClosed();
    });
  }
  writers.add(writer);
}

function unwatch(socket: Socket, writer: SseWriter): void {
  queuedOn.get(socket)?.delete(writer);
}

/** The writer of a streamed response, on the response itself (see {@link onResponseClose}). */
const WRITER = Symbol('mcp-rx-streams.writer');
type WrittenResponse = ServerResponse & { [WRITER]?: SseWriter | undefined };

/** The `'close'` listener of every streamed response: its writer learns the client went away. */
function onResponseClose(this: ServerResponse): void {
  (this as WrittenResponse)[WRITER]?.connectionClosed();
}

/**
 * Writes one stream's frames to its response and reports the socket's demand back. One object
 * per stream (a Subscriber, not an observer object with closures): idle streams are many. It is a
 * {@link LeanSubscriber}: the one teardown it gets, its pipeline's, is held in a field.
 *
 * Whatever goes wrong on the write path (a frame that cannot be encoded, a write that throws, a
 * demand signal whose receiver throws) ends this stream alone: the error is reported on
 * `channels.error` (`where: 'adapter'`), the connection is dropped and the stream unsubscribed,
 * which gives back its slot and principal entry. Nothing escapes into a socket callback.
 */
class SseWriter extends LeanSubscriber<Frame> {
  /** `false` when `write()` returned false, `true` on `'drain'`. */
  readonly demand = new Broadcast<boolean>();
  // The frames a stream gets within one tick (a burst of publishes, a notification and its
  // keep-alive) go out as one write: one HTTP chunk and one syscall instead of one per frame.
  // At most WRITE_CHUNK of them wait: once a write returns false the stream queues upstream.
  private pending = '';
  /** The connection closed (or the write path failed): nothing more is written. */
  gone = false;
  /** In `dirty`, to be flushed at the end of the tick. */
  private scheduled = false;
  /** A probe of a paused connection is due (see `probeLater`). */
  private probing = false;
  /** The response waits behind another on its connection, which is watched for it. */
  private readonly queued: boolean;
  /** Listening for the response's `'drain'` (made the first time the client was busy through `res.write`). */
  private resDrainWatched = false;
  /** Listening for the socket's next `'drain'` (the client was busy with chunks written on the socket). */
  private socketDrainWatched = false;
  private drainListener: (() => void) | undefined = undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly socket: Socket,
    /** How long closing frames still in the socket's buffer may wait for the client after the end (`keepAliveInterval`). */
    private readonly keepAliveInterval: number,
  ) {
    super();
    // One listener function for every stream, which finds its writer on the response: no closure
    // per stream. 'on', not 'once' (no wrapper either): connectionClosed is idempotent.
    (res as WrittenResponse)[WRITER] = this;
    res.on('close', onResponseClose);
    this.queued = res.socket !== socket;
    if (this.queued) watch(socket, this);
  }

  // An override rather than an added teardown: no closure per stream.
  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    if (this.drainListener !== undefined) {
      this.res.off('drain', this.drainListener);
      this.socket.off('drain', this.drainListener);
    }
    this.res.off('close', onResponseClose);
    (this.res as WrittenResponse)[WRITER] = undefined;
    if (this.queued) unwatch(this.socket, this);
  }

  /** Tells the stream the client is busy, and listens for the drain that ends it (once per emitter). */
  private busy(onSocket: boolean): void {
    const listener = (this.drainListener ??= () => this.drained());
    if (onSocket && !this.socketDrainWatched) {
      this.socketDrainWatched = true;
      this.socket.once('drain', listener);
    } else if (!onSocket && !this.resDrainWatched) {
      this.resDrainWatched = true;
      this.res.on('drain', listener);
    }
    this.demand.next(false);
  }

  private drained(): void {
    // The socket's listener was a 'once'; the response's stays for the next time.
    this.socketDrainWatched = false;
    try {
      this.demand.next(true);
    } catch (error) {
      this.fail(error);
    }
  }

  /** The client went away (the response or its connection closed): nothing more is written. */
  connectionClosed(): void {
    this.gone = true;
    this.pending = '';
    this.unsubscribe();
  }

  /** Ends this stream because its write path threw: reported, connection dropped, stream released. */
  fail(error: unknown): void {
    reportError('adapter', error);
    this.gone = true;
    this.pending = '';
    try {
      this.res.destroy();
    } catch {
      // Already torn down.
    }
    this.unsubscribe();
  }

  /**
   * node:http stops reading a connection whose client pipelines requests faster than their
   * responses go out (`socket.pause()`), and a paused socket never sees its peer leave: the
   * responses queued behind this one would hold their slots until a write failed. The first
   * write after the peer left only provokes its reset, so after a keep-alive on such a socket a
   * second one follows shortly: if the peer is gone, that write fails, the socket closes and every
   * stream on it is released, within one keep-alive interval (plus PROBE_DELAY_MS) of the peer
   * leaving.
   */
  private probeLater(): void {
    const { socket, res } = this;
    if (this.probing || res.socket !== socket || !socket.isPaused()) return;
    this.probing = true;
    setTimeout(() => {
      this.probing = false;
      if (this.gone || this.closed || socket.destroyed) return;
      try {
        res.write(KEEP_ALIVE_TEXT);
      } catch (error) {
        this.fail(error);
      }
    }, PROBE_DELAY_MS).unref();
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending === '' || this.gone) return;
    const text = this.pending;
    this.pending = '';
    const { res, socket } = this;
    try {
      // One write of the whole HTTP chunk straight on the socket when that is what res.write would
      // send (see socketChunk.ts), else through res.write.
      if (ownsSocket(res, socket)) {
        if (!writeChunk(res, socket, text) && socket.writableLength >= BUSY_BYTES) this.busy(true);
      } else if (!res.write(text) && res.writableLength >= BUSY_BYTES) this.busy(false);
    } catch (error) {
      this.fail(error);
    }
  }

  protected override _next(frame: Frame): void {
    if (this.gone) return;
    try {
      this.pending += encodeFrame(frame);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (frame.type === 'comment') this.probeLater();
    if (this.pending.length >= WRITE_CHUNK) {
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      if (dirty.push(this) === 1) process.nextTick(flushDirty);
    }
  }

  protected override _error(error: unknown): void {
    // The stream failed (say, its client was not reading when it closed): drop the connection.
    if (!(error instanceof StalledStreamError)) reportError('adapter', error);
    try {
      this.res.destroy();
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      const { res } = this;
      this.flush();
      res.end();
      // The closing frames may still sit in the socket's buffer: the client gets one keep-alive
      // interval to take them, then the connection is dropped (the slot is given back already).
      if (!res.writableFinished && !this.socket.destroyed) {
        const timer = setTimeout(() => res.destroy(), this.keepAliveInterval);
        timer.unref();
        const clear = () => clearTimeout(timer);
        res.once('close', clear);
        this.socket.once('close', clear);
      }
    } catch (error) {
      reportError('adapter', error);
      this.res.destroy();
    } finally {
      this.unsubscribe();
    }
  }
}
