import type { AuthInfo } from './auth.js';

/**
 * The transport-neutral view of an HTTP request that adapters build and the endpoint reads.
 * It lives in the core because resource providers and hooks receive it (in {@link RequestContext}).
 */
export interface EndpointRequest {
  /** HTTP method, upper case. */
  readonly method: string;
  /** Reads a request header by lower-case name; several values joined with `, `. */
  readonly header: (name: string) => string | undefined;
  /**
   * The client's address (for the anonymous principal's bucket): the connection's peer, as the
   * adapter sees it. Behind reverse proxies the endpoint's `trustProxy` option replaces it with the
   * client's address from the trusted hops of `X-Forwarded-For`, before the endpoint or a hook reads it.
   */
  readonly remoteAddress: string | undefined;
  /** The raw body, or a value a framework already parsed (e.g. Express `req.body`). */
  readonly body: AsyncIterable<Uint8Array> | string | Uint8Array | ParsedBody | undefined;
  /**
   * The request's path, without the query (`/mcp`, `/.well-known/oauth-protected-resource/mcp`),
   * as the client sent it. The endpoint reads it only to serve the protected resource metadata
   * (RFC 9728) at its well-known paths; `nodeHandler` and `webHandler` set it.
   */
  readonly path?: string;
}

/** A body a framework has already parsed as JSON. */
export interface ParsedBody {
  /** The JSON value of the body; the endpoint checks it is one JSON-RPC request. */
  readonly parsed: unknown;
}

/** Context handed to method handlers and hooks. */
export interface RequestContext {
  /** Who is calling, as the endpoint's `authenticate` hook (or the anonymous default) says. */
  readonly auth: AuthInfo;
  /** The request being answered. */
  readonly request: EndpointRequest;
  /** The legacy session the request belongs to; absent on the modern path (2026-07-28). */
  readonly session?: { readonly id: string; readonly protocolVersion: string };
}

/** A non-streaming JSON-RPC method: returns the `result` object, or throws a {@link JsonRpcError}. */
export type MethodHandler = (params: Readonly<Record<string, unknown>> | undefined, context: RequestContext) => unknown;
