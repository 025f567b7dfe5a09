import { Subject, type Subscription } from 'rxjs';
import { encodeFrame } from '../lib/encode.js';
import type { EndpointResponse, McpEndpoint } from '../lib/endpoint.js';
import { reportError } from '../lib/telemetry.js';

/** Connection facts a Fetch-API runtime knows but `Request` does not carry. */
export interface WebConnectionInfo {
  /** The client's address, for the anonymous principal's bucket. */
  readonly remoteAddress?: string;
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
 * @example
 * const handle = webHandler(new McpEndpoint({ hub }));
 * // Hono: app.post('/mcp', (c) => handle(c.req.raw, { remoteAddress: c.env?.remoteAddr }));
 * // Bun:  Bun.serve({ fetch: (request, server) => handle(request, { remoteAddress: server.requestIP(request)?.address }) });
 * @param endpoint the endpoint to serve.
 * @param options `highWaterMark` in bytes; defaults to 65 536.
 * @see nodeHandler
 */
export function webHandler(endpoint: McpEndpoint, options: WebHandlerOptions = {}): (request: Request, info?: WebConnectionInfo) => Promise<Response> {
  const highWaterMark = options.highWaterMark ?? 65_536;
  return async (request, info = {}) => {
    const response = await endpoint.handle({
      method: request.method.toUpperCase(),
      header: (name) => request.headers.get(name) ?? undefined,
      remoteAddress: info.remoteAddress,
      body: request.body === null ? undefined : chunks(request.body),
    });
    switch (response.kind) {
      case 'json':
        return new Response(response.body, { status: response.status, headers: response.headers });
      case 'empty':
        return new Response(null, { status: response.status, headers: response.headers });
      case 'stream':
        if (request.signal.aborted) {
          response.abandon();
          return new Response(null, { status: 499 });
        }
        return new Response(body(response, request.signal, highWaterMark), { status: response.status, headers: response.headers });
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
          // A reader still waiting on the body must not wait forever.
          try {
            controller.error(signal.reason);
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

// Not every runtime's ReadableStream is async-iterable: read it through its reader.
async function* chunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    // Stops an oversized upload instead of leaving it half-read.
    reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
