// This library in front of a server built on the official SDK 2.x (`@modelcontextprotocol/server`):
// `subscriptions/listen` is served by an McpEndpoint, every other request by the SDK's
// `createMcpHandler`, on one path; the SDK's `handler.notify.*` publish on our Hub through a
// `ServerEventBus` backed by it. Typed structurally, so nothing here loads (or needs) the SDK.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { asyncScheduler, Subscription } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { HttpError } from '../http/httpError.js';
import type { Hub } from '../../lib/hub.js';
import { reportError } from '../../lib/telemetry.js';
import { endpoint as validEndpoint, hub as validHub, implementing, options as validOptions, positiveInteger } from '../../lib/validate.js';
import { readJson } from '../http/body.js';
import { hostFieldError } from '../http/hostCheck.js';
import type { McpEndpoint } from '../http/endpoint.js';
import { answerHeaders, nodeHandler, requestHeader, whenParsed } from '../http/node.js';
import { BodyChunks, MissingClientAddressError, webHandler } from '../http/web.js';

/**
 * A change event of the SDK 2.x `ServerEventBus` (`ServerEvent` in `@modelcontextprotocol/server`),
 * restated so that this module needs no SDK at run time: what {@link HubEventBus} hands its listeners.
 */
export type SdkChangeEvent =
  | { readonly kind: 'tools_list_changed' }
  | { readonly kind: 'prompts_list_changed' }
  | { readonly kind: 'resources_list_changed' }
  | { readonly kind: 'resource_updated'; readonly uri: string };

/** What {@link HubEventBus.publish} takes: a change event, with the notification params the SDK may forward. */
export type SdkServerEvent = SdkChangeEvent & {
  /** Forwarded notification params; not carried (a hub notification has none besides the URI). */
  readonly params?: unknown;
};

/**
 * The SDK 2.x `ServerEventBus` backed by a {@link Hub}: give it to `createMcpHandler(factory, { bus })`
 * and the SDK's `handler.notify.toolsChanged()`, `promptsChanged()`, `resourcesChanged()` and
 * `resourceUpdated(uri)` become `hub.notifyToolsChanged()` and its siblings. So they reach every
 * listen stream an {@link McpEndpoint} on that hub serves (see {@link sdkRouter}), with its bounded
 * queues, caps and close triggers, and, with a Redis bus on the hub, every node of the fleet.
 *
 * `subscribe` serves the SDK's own listen router, for a listen that reaches the SDK rather than the
 * endpoint: its listener hears the hub's unscoped list changes (whoever published them, on any node)
 * and the resource updates published through this bus on this node. It cannot hear
 * `hub.notifyResourceUpdated(uri)` called elsewhere: the hub matches URIs exactly and the SDK's
 * listener names none. Serve listens with the endpoint ({@link sdkRouter}) to hear everything.
 *
 * @example
 * import { createMcpHandler } from '@modelcontextprotocol/server';
 * const hub = new Hub();
 * const handler = createMcpHandler(factory, { bus: new HubEventBus(hub) });
 * handler.notify.toolsChanged(); // = hub.notifyToolsChanged()
 * @see sdkRouter
 */
export class HubEventBus {
  /** The hub events are published on. */
  readonly hub: Hub;
  readonly #resourceListeners = new Set<(event: SdkChangeEvent) => void>();

  /**
   * @param hub where `publish` publishes and `subscribe` listens.
   * @throws InvalidOptionError naming `hub` when it is not a Hub (an `McpEndpoint` is told to pass `endpoint.hub`).
   */
  constructor(hub: Hub) {
    this.hub = validHub('hub', hub);
  }

  /**
   * Publishes `event` on the hub (params other than the URI are not carried).
   * @throws TypeError for an unknown kind or a `resource_updated` without a string URI.
   */
  publish(event: SdkServerEvent): void {
    switch (event?.kind) {
      case 'tools_list_changed':
        return this.hub.notifyToolsChanged();
      case 'prompts_list_changed':
        return this.hub.notifyPromptsChanged();
      case 'resources_list_changed':
        return this.hub.notifyResourcesChanged();
      case 'resource_updated': {
        this.hub.notifyResourceUpdated(event.uri);
        for (const listener of Array.from(this.#resourceListeners)) {
          try {
            listener({ kind: 'resource_updated', uri: event.uri });
          } catch (error) {
            reportError('hub', error);
          }
        }
        return;
      }
      default:
        throw new TypeError(`unknown ServerEventBus event kind: ${JSON.stringify((event as { kind?: unknown } | null)?.kind)}`);
    }
  }

  /**
   * Registers an SDK listener (see the class comment for what it hears).
   * @returns an idempotent unsubscribe function.
   */
  subscribe(listener: (event: SdkChangeEvent) => void): () => void {
    const subscription = new Subscription();
    for (const [topic, kind] of [
      ['tools', 'tools_list_changed'],
      ['prompts', 'prompts_list_changed'],
      ['resources', 'resources_list_changed'],
    ] as const) {
      const event: SdkChangeEvent = Object.freeze({ kind });
      // A scoped publish names readers the SDK's streams cannot be matched against: not delivered.
      subscription.add(this.hub.topic({ topic }).subscribe((frame) => frame.scope === undefined && listener(event)));
    }
    this.#resourceListeners.add(listener);
    return () => {
      subscription.unsubscribe();
      this.#resourceListeners.delete(listener);
    };
  }
}

/** What {@link sdkRouter} needs of the SDK's handler: `createMcpHandler(...)` returns one. */
export interface SdkFetchHandler<A = unknown> {
  fetch(request: Request, options?: { authInfo?: A; parsedBody?: unknown }): Promise<Response>;
  /** The handler's `ServerEventBus`; checked to be a {@link HubEventBus} of the endpoint's hub. */
  readonly bus?: unknown;
}

/** Options of {@link sdkRouter}. */
export interface SdkRouterOptions<A = unknown> {
  /** Serves `subscriptions/listen`: an endpoint on the hub the SDK handler's bus publishes on. */
  readonly endpoint: McpEndpoint;
  /** Serves every other request: what `createMcpHandler(factory, { bus: new HubEventBus(hub) })` returns. */
  readonly sdk: SdkFetchHandler<A>;
  /**
   * The largest POST body read to find its method, in bytes; larger ones are answered 413
   * (`-32600`) unread. Defaults to 4 194 304, the SDK's own `maxRequestBodySize`: give both the same.
   */
  readonly maxBodyBytes?: number;
  /** Bytes a listen response buffers before the stream is told its client is busy (Fetch API face); defaults to 65 536. */
  readonly highWaterMark?: number;
}

/** Per-request facts for {@link SdkRouter.fetch}. */
export interface SdkRouterRequestInfo<A = unknown> {
  /** The client's address: required unless the endpoint has an `authenticate` hook (see `webHandler`). */
  readonly remoteAddress?: string;
  /** Validated auth info, passed to the SDK handler as is (the endpoint authenticates with its own hook). */
  readonly authInfo?: A;
}

/** The two faces of one router; both route the same way. */
export interface SdkRouter<A = unknown> {
  /**
   * The Fetch API face (Hono, Bun, Deno, Workers).
   * @throws MissingClientAddressError (as a rejection) when `info.remoteAddress` is missing and the endpoint does not authenticate.
   */
  fetch(request: Request, info?: SdkRouterRequestInfo<A>): Promise<Response>;
  /**
   * The node:http face (`http.createServer(router.node)`, Express, Fastify raw). A body a
   * framework parsed is taken from `parsedBody` or `req.body`; the SDK gets `req.auth` as `authInfo`
   * (where the SDK's Express bearer middleware puts it).
   */
  node(req: IncomingMessage, res: ServerResponse, parsedBody?: unknown): void;
}

const DEFAULT_MAX_BODY_BYTES = 4_194_304;

/**
 * One MCP endpoint path served by two handlers: `subscriptions/listen` by this library's
 * {@link McpEndpoint} (bounded queues, coalescing, per-principal and server-wide caps, lifetime,
 * idle and token-expiry closes, the Redis fleet), every other request (`server/discover`, tools,
 * resources, prompts, the SDK's stateless legacy serving, GET and DELETE) by the official SDK
 * 2.x handler from `createMcpHandler`.
 *
 * A POST's body is read once to find its method (within `maxBodyBytes` and the endpoint's
 * `bodyTimeout`) and handed on: parsed, to the SDK (`parsedBody`) and to the node adapter. Give the
 * SDK handler `bus: new HubEventBus(endpoint.hub)` so that `handler.notify.*` reaches the listen
 * streams: the router refuses a handler whose bus publishes elsewhere. Give the endpoint the same
 * `capabilities` the SDK server advertises in `server/discover` (a client asks for what discover
 * offers; the endpoint acknowledges what it serves) and an `authenticate` hook that identifies
 * callers as the SDK's auth does.
 *
 * A request with more than one `Host` line (or a `Host` that lists several) gets the endpoint's
 * HTTP 400 whatever its method, as RFC 9112 §3.2 requires. On node:http, an answer given before
 * the request's body has arrived (the router's 413, the SDK's refusal of a body it was not given)
 * says `Connection: close` and ends the connection, as `nodeHandler`'s do.
 *
 * @example
 * import http from 'node:http';
 * import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
 * const hub = new Hub();
 * const handler = createMcpHandler(() => new McpServer({ name: 'demo', version: '1.0.0' }), { bus: new HubEventBus(hub) });
 * const router = sdkRouter({ endpoint: new McpEndpoint({ hub, capabilities: { tools: true } }), sdk: handler });
 * http.createServer(router.node).listen(3000);
 * // Hono: app.all('/mcp', (c) => router.fetch(c.req.raw, { remoteAddress: getConnInfo(c).remote.address }));
 * @param options see {@link SdkRouterOptions}.
 * @throws InvalidOptionError naming `sdkRouter options` when `options` is not an object, else the
 *   option that is unknown, missing or unusable: `endpoint` not an McpEndpoint (a Hub given instead
 *   is told to pass `new McpEndpoint({ hub })`), `sdk` not the SDK's handler or one whose bus is not
 *   the endpoint hub's {@link HubEventBus}, `maxBodyBytes` or `highWaterMark` not a positive integer.
 * @see HubEventBus
 */
export function sdkRouter<A = unknown>(options: SdkRouterOptions<A>): SdkRouter<A> {
  validOptions<keyof SdkRouterOptions>('sdkRouter options', options, ['endpoint', 'sdk', 'maxBodyBytes', 'highWaterMark'], { like: '{ endpoint, sdk }' });
  const endpoint = validEndpoint<McpEndpoint>('endpoint', options.endpoint);
  const sdk = implementing<SdkFetchHandler<A>>('sdk', options.sdk, ['fetch'], "the SDK's handler (what createMcpHandler returns)");
  if (sdk.bus !== undefined && !(sdk.bus instanceof HubEventBus && sdk.bus.hub === endpoint.hub)) {
    throw new InvalidOptionError(
      'sdk',
      "a handler created with { bus: new HubEventBus(endpoint.hub) }, so that handler.notify.* reaches the endpoint's listen streams",
      '(a handler with another bus)',
    );
  }
  const maxBodyBytes = options.maxBodyBytes === undefined ? DEFAULT_MAX_BODY_BYTES : positiveInteger('maxBodyBytes', options.maxBodyBytes, 'bytes');
  const web = webHandler(endpoint, options.highWaterMark === undefined ? {} : { highWaterMark: options.highWaterMark });
  const node = nodeHandler(endpoint);
  const sdkOptions = (authInfo: A | undefined, parsedBody: unknown) =>
    authInfo === undefined && parsedBody === undefined ? undefined : { ...(authInfo === undefined ? {} : { authInfo }), ...(parsedBody === undefined ? {} : { parsedBody }) };

  return {
    async fetch(request, info = {}) {
      // Checked on every request, not only on listens: a misconfiguration shows on the first one.
      if ((info.remoteAddress === undefined || info.remoteAddress === '') && !endpoint.authenticates) throw new MissingClientAddressError(request.url);
      // Two Host lines (RFC 9112 §3.2): the endpoint's 400, whichever handler the request was for.
      if (hostFieldError({ header: (name) => request.headers.get(name) ?? undefined }) !== undefined) return web(request, { remoteAddress: info.remoteAddress! });
      if (request.method.toUpperCase() !== 'POST' || request.body === null || !isJson(request.headers.get('content-type'))) {
        return sdk.fetch(request, sdkOptions(info.authInfo, undefined));
      }
      // The clone is read; the request itself stays unread for whichever handler gets it.
      let parsed: unknown;
      try {
        parsed = await readBody(new BodyChunks(request.clone().body!), request.headers.get('content-length'), maxBodyBytes, endpoint);
      } catch (error) {
        return refusal(error);
      }
      if (isListen(parsed)) return web(request, { remoteAddress: info.remoteAddress! });
      return sdk.fetch(request, sdkOptions(info.authInfo, parsed));
    },

    node(req, res, parsedBody) {
      const preParsed = typeof parsedBody === 'function' ? (req as { body?: unknown }).body : (parsedBody ?? (req as { body?: unknown }).body);
      const authInfo = (req as { auth?: A }).auth;
      const route = async (): Promise<void> => {
        // Two Host lines (RFC 9112 §3.2): the endpoint's 400, whichever handler the request was for
        // (the SDK's request URL could not even be built from them).
        if (hostFieldError({ header: (name) => requestHeader(req, name) }) !== undefined) return node(req, res);
        if (req.method !== 'POST' || !isJson(requestHeader(req, 'content-type'))) return toSdk(sdk, req, res, undefined, sdkOptions(authInfo, undefined));
        if (preParsed !== undefined) {
          if (isListen(preParsed)) return node(req, res, preParsed);
          return toSdk(sdk, req, res, JSON.stringify(preParsed), sdkOptions(authInfo, preParsed));
        }
        let parsed: unknown;
        try {
          parsed = await readBody(req, requestHeader(req, 'content-length'), maxBodyBytes, endpoint);
        } catch (error) {
          return writeResponse(refusal(error), req, res);
        }
        if (isListen(parsed)) return node(req, res, parsed);
        return toSdk(sdk, req, res, JSON.stringify(parsed), sdkOptions(authInfo, parsed));
      };
      // Nothing thrown while routing may reach the process (an unhandled rejection ends it).
      route().catch((error: unknown) => {
        reportError('adapter', error);
        res.destroy();
      });
    },
  };
}

function isListen(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { method?: unknown }).method === 'subscriptions/listen';
}

function isJson(contentType: string | null | undefined): boolean {
  const type = contentType?.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && type.startsWith('application/') && type.endsWith('+json'));
}

/** A POST's JSON body, read within the router's byte limit and the endpoint's `bodyTimeout`. */
function readBody(body: AsyncIterable<Uint8Array>, contentLength: string | null | undefined, limit: number, endpoint: McpEndpoint): Promise<unknown> {
  return readJson(body, contentLength ?? undefined, limit, endpoint.bodyTimeout, asyncScheduler);
}

/** The answer to a body that could not be read (413, 408, 400 `-32700`), as the endpoint gives it; rethrows anything else. */
function refusal(error: unknown): Response {
  if (!(error instanceof HttpError)) throw error;
  const body = JSON.stringify(error.rpc.toResponse(error.id));
  return new Response(body, { status: error.status, headers: { 'Content-Type': 'application/json', ...error.headers } });
}

/** Hands a node:http request to the SDK's Fetch API handler and writes its answer back. */
async function toSdk<A>(
  sdk: SdkFetchHandler<A>,
  req: IncomingMessage,
  res: ServerResponse,
  body: string | undefined,
  options: { authInfo?: A; parsedBody?: unknown } | undefined,
): Promise<void> {
  // The SDK ends its streams (and cancels a request in flight) when the request's signal aborts.
  const aborted = new AbortController();
  res.once('close', () => aborted.abort());
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (name.startsWith(':')) continue; // HTTP/2 pseudo-headers
    headers.append(name, req.rawHeaders[i + 1]!);
  }
  // The body is a string now: a streamed request's framing no longer applies.
  headers.delete('transfer-encoding');
  if (body !== undefined) headers.set('content-length', String(Buffer.byteLength(body)));
  const host = headers.get('host') ?? 'localhost';
  const request = new Request(new URL(req.url ?? '/', `http://${host}`), {
    method: req.method ?? 'GET',
    headers,
    // Only a body the router read is passed on: the SDK refuses the others (405, 415) unread.
    body,
    signal: aborted.signal,
  });
  const response = await sdk.fetch(request, options);
  await writeResponse(response, req, res);
}

/**
 * Writes a Fetch API `Response` on a node:http response, as fast as the client reads it; with
 * `Connection: close` when it answers `req` before its body has arrived (see `whenParsed` and
 * `answerHeaders`).
 */
async function writeResponse(response: Response, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableEnded) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  await new Promise<void>((resolve) => whenParsed(req, resolve));
  if (res.destroyed) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  // A Response made without a statusText has '': node then sends the status code's own phrase.
  res.writeHead(response.status, response.statusText === '' ? undefined : response.statusText, answerHeaders(req, headers));
  if (response.body === null) {
    res.end();
    return;
  }
  // A stream's client learns it is open now, not at its first frame.
  res.flushHeaders();
  const reader = response.body.getReader();
  const gone = () => void reader.cancel().catch(() => {});
  res.once('close', gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await drainedOrClosed(res);
      if (res.destroyed) break;
    }
    if (!res.destroyed) res.end();
  } catch (error) {
    // The handler's stream failed mid-answer: the client sees the connection end.
    if (!res.destroyed) reportError('adapter', error);
    res.destroy();
  } finally {
    res.off('close', gone);
  }
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
