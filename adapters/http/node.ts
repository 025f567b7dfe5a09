import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { EndpointRequest } from '../../lib/context.js';
import type { McpEndpoint } from './endpoint.js';
import type { EndpointResponse } from './responses.js';
import { reportError } from '../../lib/telemetry.js';
import { endpoint as validEndpoint } from '../../lib/validate.js';
import { SseWriter } from './sseWriter.js';

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
      // Express's originalUrl: the path before a router mounted the handler under a prefix.
      path: pathOf((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'),
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

/** The path of a request target (`/mcp?x=1` → `/mcp`). */
function pathOf(target: string): string {
  const query = target.indexOf('?');
  return query < 0 ? target : target.slice(0, query);
}
