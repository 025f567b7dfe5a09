import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { originListed } from './hostCheck.js';
import type { EndpointResponse } from './responses.js';

/**
 * The endpoint's `corsOrigins` option: the origins of the browser pages that may call it from
 * another origin, matched as `allowedOrigins` entries are (`https://app.example` exactly;
 * `localhost` or `app.example:8443` that host on any scheme), or `'*'` for every page.
 */
export type CorsOrigins = '*' | readonly string[];

/**
 * The request headers a preflight allows: every header an MCP client sends (2025-06-18 to
 * 2026-07-28) besides the CORS-safelisted `accept`.
 */
export const CORS_ALLOW_HEADERS = 'content-type, authorization, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id';

/** The response headers a page may read: the legacy session id and the 401 challenge. */
export const CORS_EXPOSE_HEADERS = 'mcp-session-id, www-authenticate';

/**
 * Seconds a browser may keep a preflight's answer: 7200, the most Chromium keeps (Firefox keeps
 * up to a day). A long cache grants nothing after the list shrinks: every actual response is
 * checked for its own `Access-Control-Allow-Origin`.
 */
export const CORS_MAX_AGE = 7200;

/** What CORS adds to the endpoint's answers. @internal */
export interface CorsPolicy {
  /** The answer to an `OPTIONS` request: 204 with `Allow`, and for a preflight of an allowed origin what it may send. */
  preflight(request: EndpointRequest): EndpointResponse;
  /** `response` with `Vary: Origin`, and for an allowed origin `Access-Control-Allow-Origin` and `-Expose-Headers`. */
  apply(request: EndpointRequest, response: EndpointResponse): EndpointResponse;
}

const EXPECTED = "'*' or a non-empty array of origins (https://app.example) or host names (localhost, app.example:8443)";

/** What {@link corsPolicy} needs of the rest of the endpoint's options. @internal */
export interface CorsContext {
  /** Whether the endpoint has `authenticate` (then `'*'` is refused). */
  readonly authenticates: boolean;
  /** The HTTP methods the endpoint serves, as its `Allow` header says them. */
  readonly methods: string;
  /** The endpoint's `allowedOrigins`: with `'*'`, only these origins get CORS headers (the others get 403). */
  readonly allowedOrigins?: readonly string[] | undefined;
}

/**
 * Compiles the `corsOrigins` option, `undefined` when it is not given (no CORS: an `OPTIONS`
 * request keeps its 405 and no response carries CORS headers).
 * @param corsOrigins see {@link CorsOrigins}.
 * @throws InvalidOptionError naming `corsOrigins` for a value it cannot use.
 * @internal
 */
export function corsPolicy(corsOrigins: CorsOrigins | undefined, { authenticates, methods, allowedOrigins }: CorsContext): CorsPolicy | undefined {
  if (corsOrigins === undefined) return undefined;
  const any = corsOrigins === '*';
  if (any && authenticates) {
    throw new InvalidOptionError(
      'corsOrigins',
      "a list of origins when authenticate is set ('*' is for servers without authentication: one that tells callers apart names the pages it serves, so that nothing ambient a browser carries, such as the network it sits in, answers for every page its user opens)",
      corsOrigins,
    );
  }
  if (!any && !validOrigins(corsOrigins)) {
    const star = Array.isArray(corsOrigins) && (corsOrigins as readonly unknown[]).includes('*');
    throw new InvalidOptionError('corsOrigins', star ? `${EXPECTED}; for every origin pass '*' itself, not inside an array` : EXPECTED, corsOrigins);
  }
  // '*' next to allowedOrigins means every origin the rebinding check lets in.
  const checked = Array.isArray(allowedOrigins) && allowedOrigins.every((entry) => typeof entry === 'string') ? allowedOrigins : undefined;
  const listed = any ? checked : corsOrigins;
  const entries = listed?.map((entry) => entry.toLowerCase());
  const allowedOrigin = (request: EndpointRequest): string | undefined => {
    const origin = request.header('origin');
    if (origin === undefined || (entries !== undefined && !originListed(entries, origin.toLowerCase()))) return undefined;
    return any ? '*' : origin;
  };
  const preflightHeaders = Object.freeze({
    Allow: methods,
    'Access-Control-Allow-Methods': methods,
    'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS,
    'Access-Control-Max-Age': String(CORS_MAX_AGE),
  });
  return {
    preflight: (request) => {
      const isPreflight = request.header('access-control-request-method') !== undefined && allowedOrigin(request) !== undefined;
      return { kind: 'empty', status: 204, headers: isPreflight ? preflightHeaders : { Allow: methods } };
    },
    apply: (request, response) => {
      const origin = allowedOrigin(request);
      // Vary on every answer, allowed or not: a cache must not hand one origin's answer to another.
      const headers =
        origin === undefined
          ? { ...response.headers, Vary: 'Origin' }
          : { ...response.headers, 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS, Vary: 'Origin' };
      return { ...response, headers };
    },
  };
}

/**
 * The Origin list the DNS-rebinding check accepts: `allowedOrigins` and the `corsOrigins` entries,
 * since a page allowed to call the endpoint across origins must not be refused as a rebinding.
 * `'*'` adds nothing: every CORS answer then still goes only to origins `allowedOrigins` accepts.
 * @internal
 */
export function originsWithCors(allowedOrigins: readonly string[] | undefined, corsOrigins: CorsOrigins | undefined): readonly string[] | undefined {
  if (!Array.isArray(allowedOrigins) || !Array.isArray(corsOrigins)) return allowedOrigins;
  return [...allowedOrigins, ...corsOrigins];
}

function validOrigins(value: unknown): value is readonly string[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((entry) => typeof entry === 'string' && (/^[a-z][a-z0-9+.-]*:\/\/[^/?#\s*]+$/i.test(entry) || /^[^:/?#\s*][^/?#\s*]*$/.test(entry)))
  );
}
