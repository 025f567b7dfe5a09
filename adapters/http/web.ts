import { Subject, type Subscription } from 'rxjs';
import { encodeFrame } from '../../lib/encode.js';
import { McpRxError } from '../../lib/errors.js';
import type { McpEndpoint } from './endpoint.js';
import type { EndpointResponse } from './responses.js';
import { reportError } from '../../lib/telemetry.js';
import { endpoint as validEndpoint, options as validOptions, positiveInteger } from '../../lib/validate.js';

/** Connection facts a Fetch-API runtime knows but `Request` does not carry. */
export interface WebConnectionInfo {
  /**
   * The client's address, for the anonymous principal's bucket. Required unless the endpoint has an
   * `authenticate` hook (see {@link MissingClientAddressError}).
   */
  readonly remoteAddress?: string;
}

/**
 * The error a {@link webHandler} call rejects with when it is given no client address
 * (`info.remoteAddress` missing or empty) and the endpoint has no `authenticate` hook.
 *
 * Without either, every client would be the same anonymous principal: their streams would share
 * one per-principal cap and supersede each other. So the handler refuses to serve instead of
 * silently doing that, from the first request on. The fix is in the message: pass the runtime's
 * connection info, or identify callers with `authenticate`.
 *
 * @example
 * try {
 *   await handle(request);
 * } catch (error) {
 *   if (error instanceof MissingClientAddressError) console.error(error.code); // 'ERR_MCP_RX_NO_CLIENT_ADDRESS'
 * }
 * @see webHandler
 */
export class MissingClientAddressError extends McpRxError {
  override readonly name = 'MissingClientAddressError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_NO_CLIENT_ADDRESS';
  /** The URL of the request that came without an address (where the handler is mounted). */
  override readonly info: { readonly url: string };

  constructor(url: string) {
    super(
      "webHandler needs each client's address to tell anonymous clients apart: call it as handle(request, { remoteAddress }) " +
        '(Hono on Node: getConnInfo(c).remote.address from @hono/node-server/conninfo; Bun: server.requestIP(request)?.address; ' +
        'Deno: info.remoteAddr.hostname), or give the McpEndpoint an authenticate hook that identifies callers',
    );
    this.info = { url };
  }
}

/** Options of {@link webHandler}. */
export interface WebHandlerOptions {
  /** Bytes the response stream buffers before it reports the client busy; defaults to 65 536. */
  readonly highWaterMark?: number;
}

/**
 * Serves an {@link McpEndpoint} over the Fetch API: `Request` in, `Response` out (Hono, Bun, Deno,
 * edge runtimes, or Node's own `fetch`-style servers).
 *
 * The SSE body is a pull-based `ReadableStream`: when its queue is full (`desiredSize <= 0`) the
 * stream is told the client is busy, and each `pull` tells it the client can take more. Cancelling
 * the body or aborting the request unsubscribes the stream and releases everything.
 *
 * An answer given before the request's body was read to its end (a refusal that did not need it:
 * 401, 403, 404, 405, 413…) cancels the rest of the body and says `Connection: close`.
 * `@hono/node-server` (node:http) and `Bun.serve` then end the connection once the answer is out;
 * `Deno.serve` (Deno 2.x) sends the header but goes on reading a trickled body, so bound the
 * request's time in front of it there (a proxy's request or body timeout).
 *
 * A `Request` does not say who sent it, so each call passes the client's address as
 * `info.remoteAddress`; an endpoint with an `authenticate` hook (which names principals itself)
 * needs none. A call with neither rejects with {@link MissingClientAddressError} before anything is
 * served. This is checked when the handler runs rather than required by the types because an
 * `authenticate` endpoint has no use for the address, and because the runtimes' own lookups are
 * typed `string | undefined` (Hono's `getConnInfo(c).remote.address`, Bun's `requestIP`): a
 * required field would be satisfied by `undefined` and catch nothing.
 *
 * @example
 * const handle = webHandler(new McpEndpoint({ hub }));
 * // Hono on Node (getConnInfo from '@hono/node-server/conninfo'; see examples/hono.ts):
 * app.all('/mcp', (c) => handle(c.req.raw, { remoteAddress: getConnInfo(c).remote.address }));
 * // Bun (idleTimeout 0: its default of 10 s would cut a stream between keep-alives):
 * Bun.serve({ idleTimeout: 0, fetch: (request, server) => handle(request, { remoteAddress: server.requestIP(request)?.address }) });
 * // Deno: Deno.serve((request, info) => handle(request, { remoteAddress: info.remoteAddr.hostname }));
 * @param endpoint the endpoint to serve.
 * @param options `highWaterMark` in bytes; defaults to 65 536.
 * @returns `(request, info) => Promise<Response>`; rejects with {@link MissingClientAddressError}
 *   when `info.remoteAddress` is missing or empty and `endpoint.authenticates` is false.
 * @throws InvalidOptionError naming `webHandler endpoint` when `endpoint` is not an McpEndpoint (a
 *   Hub given instead is told to pass `new McpEndpoint({ hub })`), `webHandler options` when
 *   `options` is not an object, or the option that is unknown or not a positive integer (`highWaterMark`).
 * @see nodeHandler
 */
export function webHandler(endpoint: McpEndpoint, options: WebHandlerOptions = {}): (request: Request, info?: WebConnectionInfo) => Promise<Response> {
  validEndpoint('webHandler endpoint', endpoint);
  const given = validOptions<keyof WebHandlerOptions>('webHandler options', options, ['highWaterMark']);
  const highWaterMark = given.highWaterMark === undefined ? 65_536 : positiveInteger('highWaterMark', given.highWaterMark, 'bytes');
  return async (request, info = {}) => {
    if ((info.remoteAddress === undefined || info.remoteAddress === '') && !endpoint.authenticates) {
      throw new MissingClientAddressError(request.url);
    }
    const upload = request.body === null ? undefined : new BodyChunks(request.body);
    const response = await endpoint.handle({
      method: request.method.toUpperCase(),
      header: (name) => request.headers.get(name) ?? undefined,
      remoteAddress: info.remoteAddress,
      body: upload,
      // Parsed only if the endpoint reads it (a protected resource's well-known paths).
      get path() {
        return new URL(request.url).pathname;
      },
    });
    // Answered before its body was read to the end: the rest is not wanted, nor the connection it
    // would keep busy (the runtime could otherwise go on reading it for as long as it trickles).
    const headers = upload === undefined || !upload.discard() ? response.headers : { ...response.headers, Connection: 'close' };
    switch (response.kind) {
      case 'json':
        return new Response(response.body, { status: response.status, headers });
      case 'empty':
        return new Response(null, { status: response.status, headers });
      case 'stream':
        if (request.signal.aborted) {
          response.abandon();
          return new Response(null, { status: 499 });
        }
        return new Response(body(response, request.signal, highWaterMark), { status: response.status, headers });
    }
  };
}

function body(response: Extract<EndpointResponse, { kind: 'stream' }>, signal: AbortSignal, highWaterMark: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const demand$ = new Subject<boolean>();
  let subscription: Subscription | undefined;
  const stop = () => subscription?.unsubscribe();
  let cleanup = () => {};
  let failed: (error: unknown) => void = () => {};
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const abort = () => {
          stop();
          // A reader still waiting on the body must not wait forever. Closed rather than errored:
          // the client is gone either way, and Deno logs a body that errors (twice per disconnect).
          try {
            controller.close();
          } catch {
            // already closed
          }
        };
        signal.addEventListener('abort', abort, { once: true });
        cleanup = () => signal.removeEventListener('abort', abort);
        // Whatever throws on the write path (a frame that cannot be encoded, a closed controller)
        // ends this stream alone: reported, the body errored, the stream unsubscribed (which gives
        // back its slot and principal entry). Nothing reaches the runtime's callbacks.
        const fail = (error: unknown) => {
          reportError('adapter', error);
          cleanup();
          stop();
          try {
            controller.error(error);
          } catch {
            // already closed
          }
        };
        failed = fail;
        try {
          subscription = response.open(demand$).subscribe({
            next: (frame) => {
              try {
                // One chunk per frame: the body never holds one unbounded string.
                controller.enqueue(encoder.encode(encodeFrame(frame)));
                if ((controller.desiredSize ?? 1) <= 0) demand$.next(false);
              } catch (error) {
                fail(error);
              }
            },
            error: (error) => {
              cleanup();
              try {
                controller.error(error);
              } catch {
                // already closed
              }
            },
            complete: () => {
              cleanup();
              try {
                controller.close();
              } catch {
                // already cancelled
              }
            },
          });
        } catch (error) {
          fail(error);
        }
        // The stream may have ended while it was being opened (`stop` found no subscription yet).
        if (signal.aborted) stop();
      },
      pull() {
        try {
          demand$.next(true);
        } catch (error) {
          failed(error);
        }
      },
      cancel() {
        cleanup();
        stop();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark }),
  );
}

/**
 * A request body as the endpoint reads it, in chunks, that knows whether it was read to its end.
 * Read through the stream's reader: not every runtime's `ReadableStream` is async-iterable.
 * @internal also for the SDK router, which reads a listen's body the same way.
 */
export class BodyChunks implements AsyncIterable<Uint8Array> {
  readonly #stream: ReadableStream<Uint8Array>;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #ended = false;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#stream = stream;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    const reader = (this.#reader = this.#stream.getReader());
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          this.#ended = true;
          return;
        }
        yield value;
      }
    } finally {
      // Stops an oversized upload instead of leaving it half-read.
      reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }

  /**
   * Cancels what is left of the body, whether its reading never started or stopped part way (a
   * read still pending ends with it).
   * @returns true when something was left (the body was not read to its end).
   */
  discard(): boolean {
    if (this.#ended) return false;
    const cancelled = this.#reader === undefined ? (this.#stream.locked ? undefined : this.#stream.cancel()) : this.#reader.cancel();
    cancelled?.catch(() => {});
    return true;
  }
}
