import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { namesOf, option, readOptions, type OptionTable } from '../../lib/optionTable.js';
import { PROTOCOL_OPTIONS, type ProtocolOptions, resolveProtocolOptions, type ResolvedProtocolOptions } from '../../protocol/options.js';
import { clientAddress, type ClientAddress, type TrustProxy } from './clientAddress.js';
import { corsPolicy, originsWithCors, type CorsOrigins, type CorsPolicy } from './cors.js';
import { hostCheck, type localhostHosts } from './hostCheck.js';

/**
 * Options of {@link McpEndpoint}: the protocol core's ({@link ProtocolOptions}: the hub, caps,
 * timeouts, sessions, providers, hooks) and what only HTTP has (the body's arrival time, the
 * `Host` and `Origin` checks, CORS, trusted proxies). Every number is validated at construction
 * (DESIGN M13).
 */
export interface McpEndpointOptions extends ProtocolOptions, Partial<HttpSettings> {
  /**
   * DNS-rebinding protection (for servers bound to localhost): the accepted `Host` header values.
   * An entry without a port (`localhost`) accepts any port. Any other Host gets HTTP 403 before
   * anything else is looked at. Default: no check (see {@link localhostHosts}). With or without it,
   * a request with more than one `Host` line gets HTTP 400 (RFC 9112 §3.2).
   */
  readonly allowedHosts?: readonly string[];
  /**
   * The accepted `Origin` header values: an entry with a scheme (`https://app.example`) matches
   * exactly, one without (`localhost`) matches that host name on any scheme and port. A request
   * with another Origin gets HTTP 403; one without Origin (not a browser) passes. The `corsOrigins`
   * entries are accepted too. Default: no check.
   */
  readonly allowedOrigins?: readonly string[];
}

/**
 * The options only HTTP has that are values (the `serve` command has a flag for each), beside the
 * `Host` and `Origin` checks: the body's arrival time, CORS, trusted proxies.
 */
export interface HttpSettings {
  /**
   * Milliseconds a client gets to send a whole request body; slower ones get HTTP 408 and the
   * connection is closed, so a client that trickles bytes cannot hold the server. Defaults to 10 000.
   */
  readonly bodyTimeout: number;
  /**
   * CORS: the origins of the browser pages that may call the endpoint from another origin,
   * matched as `allowedOrigins` entries (`https://app.example` exactly; `localhost` that host on any
   * scheme and port), or `'*'` for every page (refused with `authenticate`: a server that tells
   * callers apart names the pages it serves). An `OPTIONS` preflight is answered 204 with the
   * methods, every MCP request header and `Access-Control-Max-Age: 7200`; every answer (JSON,
   * SSE, errors) to an allowed origin carries `Access-Control-Allow-Origin` (the origin itself,
   * or `*`) and exposes `Mcp-Session-Id` and `WWW-Authenticate`; every answer says `Vary: Origin`.
   * Another origin gets no CORS headers, so its page cannot read the answer. With `allowedOrigins`
   * too, the listed origins pass the DNS-rebinding check, and `'*'` answers only the origins it
   * accepts (the others keep their 403). No cookies (`Access-Control-Allow-Credentials` is never
   * sent): a page sends its credentials in `Authorization`. Default: none (no CORS; `OPTIONS` gets
   * 405).
   */
  readonly corsOrigins?: CorsOrigins;
  /**
   * The reverse proxies in front of the server whose `X-Forwarded-For` says who the client is: a
   * number of hops (`1`: exactly one proxy, and the server cannot be reached past it), or the
   * proxies' addresses and CIDR ranges (`['loopback', '10.0.0.0/8']`, or one comma-separated
   * string; also `linklocal`, `uniquelocal`), or a function `(address, hop) => boolean` (see
   * {@link TrustProxy}). The client's address, what anonymous principals are bucketed by and what
   * hooks see as `request.remoteAddress`, is then the nearest address along the path that is not a
   * trusted proxy; an entry ahead of the trusted hops (one the client wrote itself) is never used.
   * `X-Forwarded-For` only: RFC 7239 `Forwarded` is not read. `true` (trust every hop) is refused:
   * it would let each client choose its own principal. Default: none (the client is the
   * connection's peer and `X-Forwarded-For` is ignored).
   */
  readonly trustProxy?: TrustProxy;
}

/** Default of {@link HttpSettings.bodyTimeout}: 10 000 milliseconds. */
export const DEFAULT_BODY_TIMEOUT = 10_000;

/**
 * {@link HttpSettings}, declared once (see `LISTEN_OPTIONS`): checked here, accepted by the reference
 * server, and `serve` flags (whose text a list is written in: `--trust-proxy 10.0.0.0/8,loopback`).
 * @internal
 */
export const HTTP_SETTINGS: OptionTable<HttpSettings> = {
  bodyTimeout: option.milliseconds({ default: DEFAULT_BODY_TIMEOUT, description: 'time a request body may take to arrive; slower ones get HTTP 408' }),
  trustProxy: option.custom<TrustProxy>({
    placeholder: 'PROXIES',
    unit: 'proxy hops, or addresses',
    shownDefault: "none (X-Forwarded-For is ignored; the client is the connection's peer)",
    description:
      'the reverse proxies in front whose X-Forwarded-For names the client (its address is the anonymous principal): a hop count (1 = one proxy, the only way in), or a comma-separated list of their addresses, CIDR ranges, loopback, linklocal, uniquelocal',
    check: (_label, value) => (clientAddress(value as TrustProxy), value as TrustProxy),
    read: (label, text) => {
      const value = /^\d+$/.test(text) ? Number(text) : text.split(',').map((entry) => entry.trim());
      return writtenAs(label, text, () => clientAddress(value), 'a number of proxy hops or a comma-separated list of proxy addresses, CIDR ranges, loopback, linklocal or uniquelocal', value);
    },
  }),
  corsOrigins: option.custom<CorsOrigins>({
    placeholder: 'ORIGINS',
    shownDefault: 'none (no CORS: pages on other origins cannot call the server)',
    description:
      'browser pages that may call the server from another origin: a comma-separated list of origins (https://app.example) or host names (localhost), or * for any page (not with --token-secret)',
    check: (_label, value) => (corsPolicy(value as CorsOrigins, { authenticates: false, methods: 'POST' }), value as CorsOrigins),
    read: (label, text) => {
      const value = text === '*' ? '*' : text.split(',').map((entry) => entry.trim());
      return writtenAs(label, text, () => corsPolicy(value, { authenticates: false, methods: 'POST' }), '* or a comma-separated list of origins (https://app.example) or host names (localhost)', value);
    },
  }),
};

/** `value`, read from `text`, once `check` accepts it; else an InvalidOptionError naming `label` that says how to write it. */
function writtenAs<T>(label: string, text: string, check: () => unknown, how: string, value: T): T {
  try {
    check();
  } catch (error) {
    if (!(error instanceof InvalidOptionError)) throw error;
    throw new InvalidOptionError(label, how, text);
  }
  return value;
}

/** The options only HTTP has, beside {@link PROTOCOL_OPTIONS}. */
const HTTP_OPTIONS: readonly (keyof McpEndpointOptions)[] = [...namesOf(HTTP_SETTINGS), 'allowedHosts', 'allowedOrigins'];
const KNOWN_OPTIONS: readonly string[] = [...PROTOCOL_OPTIONS, ...HTTP_OPTIONS];

/** {@link McpEndpointOptions} with every default filled in and every value checked. @internal */
export interface ResolvedEndpointOptions extends ResolvedProtocolOptions {
  /** In milliseconds; defaults to 10 000. */
  readonly bodyTimeout: number;
  /** The DNS-rebinding check (`allowedHosts`, `allowedOrigins`), absent when neither is given. */
  readonly hostCheck: ((request: EndpointRequest) => string | undefined) | undefined;
  /** The `corsOrigins` policy, absent without it. */
  readonly cors: CorsPolicy | undefined;
  /** The client address from trusted proxies (`trustProxy`), absent when none is trusted. */
  readonly clientAddress: ClientAddress | undefined;
}

/**
 * Checks an endpoint's options and fills in the defaults (DESIGN M13): the core's, then HTTP's.
 * @throws InvalidOptionError naming `McpEndpoint options` when `options` is not an object (a Hub
 *   given instead is told to pass `{ hub }`), else the first option that is unknown or has a value
 *   the library cannot use.
 * @internal
 */
export function resolveEndpointOptions(options: McpEndpointOptions): ResolvedEndpointOptions {
  const core = resolveProtocolOptions(options, 'McpEndpoint options', KNOWN_OPTIONS);
  const { bodyTimeout } = readOptions(HTTP_SETTINGS, options);
  const methods = options.legacy === false ? 'POST' : core.sessionOptions.allowClientSessionDelete ? 'POST, GET, DELETE' : 'POST, GET';
  const cors = corsPolicy(options.corsOrigins, { authenticates: options.authenticate !== undefined, methods, allowedOrigins: options.allowedOrigins });
  const check = hostCheck(options.allowedHosts, originsWithCors(options.allowedOrigins, options.corsOrigins));
  return { ...core, bodyTimeout, hostCheck: check, cors, clientAddress: clientAddress(options.trustProxy) };
}
