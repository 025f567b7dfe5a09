import { isIPv4, isIPv6 } from 'node:net';
import { McpRxError } from './errors.js';

/** Who is calling, as an endpoint's `authenticate` hook reports it. */
export interface AuthInfo {
  /** The principal's key: streams of one principal share the per-principal cap. */
  readonly principal: string;
  /** Scopes granted to the caller (e.g. `private`), checked by the server's `canRead`. */
  readonly scopes: ReadonlySet<string>;
  /** When the credential expires, in milliseconds since the epoch; a listen stream closes then (`token_expired`). */
  readonly expiresAt?: number;
  /**
   * How a stream opened with this credential learns that it was revoked before it expires (an
   * opaque token asked about by introspection, RFC 7662). Leave it out for a credential that is
   * good until `expiresAt` (a signed JWT). Give the same object for every request that carries
   * the same credential: its streams are then checked together, once per interval.
   */
  readonly recheck?: CredentialRecheck;
}

/**
 * Asks again, while streams opened with a credential are open, whether it is still good: every
 * `interval` milliseconds on the endpoint's clock (its `scheduler`), from the first such stream
 * on, the endpoint calls `active()`. `false` ends the credential's streams with their closing
 * frames, reason `revoked` (`token_expired` once past its `expiresAt`), in both eras and on every
 * transport; a rejection keeps them (the authorization server did not answer: reported on
 * `channels.error`, asked again at the next interval).
 *
 * @example
 * // What `introspection` (mcp-rx-streams/auth) gives each opaque token.
 * const recheck: CredentialRecheck = { interval: 60_000, active: async () => (await introspect(token)).active === true };
 * @see AuthInfo
 */
export interface CredentialRecheck {
  /** Milliseconds between two checks; a positive integer. */
  readonly interval: number;
  /** Whether the credential is still active (not revoked). */
  active(): Promise<boolean>;
}

/**
 * What a refused bearer token is told in the `WWW-Authenticate` challenge (RFC 6750 §3, MCP
 * authorization): the error code when a token was sent, and the scopes the request needs.
 */
export interface BearerChallenge {
  /**
   * `invalid_token`: a token was sent, and it is expired, revoked, for another audience, from
   * another issuer, or badly signed (HTTP 401); `insufficient_scope`: a good token that lacks a
   * scope the request needs (HTTP 403, the client may step up); `invalid_request`: the request
   * itself is malformed (HTTP 401). Leave it out when no token was sent (RFC 6750 §3.1: "the
   * resource server SHOULD NOT include an error code").
   */
  readonly error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  /** The scopes the request needs (the challenge's `scope`); defaults to the protected resource's `requiredScopes`. */
  readonly scope?: readonly string[];
}

/**
 * Thrown by an `authenticate` hook to refuse a request: answered with HTTP 401 (403 for
 * `insufficient_scope`), its message in the JSON-RPC error (`unauthorized: <message>`) and a
 * `WWW-Authenticate` challenge.
 *
 * Give the challenge as a {@link BearerChallenge} (the default, `{}`) and the endpoint writes it:
 * `Bearer`, then, when the hook names the resource it protects (`protectedResource`, as the
 * authenticators of `mcp-rx-streams/auth` do), `resource_metadata="<its RFC 9728 metadata URL>"`,
 * the `error` with the message as `error_description`, and the `scope` the request needs. Give it
 * as a string and that string is sent as it is.
 *
 * @example
 * authenticate: (request) => {
 *   if (request.header('authorization') === undefined) throw new AuthError('a bearer token is required');
 *   if (!isValid(request.header('authorization'))) throw new AuthError('the token has expired', { error: 'invalid_token' });
 *   return verify(request.header('authorization'));
 * }
 * @param message what is wrong, a sentence the client reads (no token, no principal in it).
 * @param challenge a {@link BearerChallenge}, or the whole `WWW-Authenticate` value; defaults to `{}` (`Bearer`).
 */
export class AuthError extends McpRxError {
  override readonly name = 'AuthError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_UNAUTHORIZED';
  /** The `WWW-Authenticate` challenge, and the bearer error it reports (when given as one). */
  override readonly info: { readonly challenge: string; readonly bearer?: BearerChallenge };
  /** Value of the `WWW-Authenticate` response header without the endpoint's additions: `Bearer`, `Bearer error="invalid_token"`, or the string given. */
  readonly challenge: string;
  /** The challenge as given, when it was a {@link BearerChallenge}: the endpoint completes it (`resource_metadata`, `scope`). */
  readonly bearer: BearerChallenge | undefined;

  constructor(message: string, challenge: string | BearerChallenge = {}) {
    super(message);
    if (typeof challenge === 'string') {
      this.challenge = challenge;
      this.bearer = undefined;
      this.info = { challenge };
    } else {
      this.bearer = challenge;
      this.challenge = challenge.error === undefined ? 'Bearer' : `Bearer error="${challenge.error}"`;
      this.info = { challenge: this.challenge, bearer: challenge };
    }
  }
}

/**
 * Thrown by an `authenticate` hook that cannot check a credential now (its authorization server
 * does not answer in time, its keys cannot be fetched): answered like a full server, HTTP 503 with
 * JSON-RPC `-32000`, `Retry-After` and `error.data.retryAfterMs`, so that the client tries again
 * later instead of asking its authorization server for a new token.
 *
 * @example
 * throw new AuthUnavailableError('the authorization server did not answer within 1000 ms', 5_000);
 * @param message what failed (no token in it).
 * @param retryAfterMs when to try again, in milliseconds; defaults to 5 000.
 */
export class AuthUnavailableError extends McpRxError {
  override readonly name = 'AuthUnavailableError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_AUTH_UNAVAILABLE';
  /** When the client may try again, in milliseconds. */
  override readonly info: { readonly retryAfterMs: number };

  constructor(message: string, retryAfterMs = 5_000, options?: ErrorOptions) {
    super(message, options);
    this.info = { retryAfterMs };
  }
}

/**
 * The principal of an unauthenticated caller: its address bucket (DESIGN M8).
 *
 * IPv4 callers are bucketed by address, IPv6 callers by their /64 prefix (one host usually holds a
 * whole /64), IPv4-mapped IPv6 addresses as IPv4. Unknown addresses share one bucket.
 *
 * @example
 * addressBucket('::ffff:127.0.0.1') // 'addr:127.0.0.1'
 * addressBucket('2001:db8::1')      // 'addr:2001:db8:0:0::/64'
 * @param address the socket's remote address.
 */
export function addressBucket(address: string | undefined): string {
  if (address === undefined || address === '') return 'addr:unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return `addr:${mapped[1]}`;
  if (isIPv4(address)) return `addr:${address}`;
  if (isIPv6(address)) return `addr:${expandIPv6(address).slice(0, 4).join(':')}::/64`;
  return `addr:${address}`;
}

function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - left.length - right.length;
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(missing, 0)).fill('0'), ...right];
  return groups.map((group) => (group.includes('.') ? group : String(parseInt(group, 16).toString(16))));
}

/**
 * The empty scope set, one for everyone: what a long-lived registration (a subscription, a legacy
 * session) keeps for a caller without scopes, the common case (anonymous callers), instead of the
 * request's own empty set. Never modified.
 * @internal
 */
export const NO_SCOPES: ReadonlySet<string> = new Set();

/** The default `authenticate`: anonymous callers bucketed by address, no scopes, no expiry. */
export function anonymous(remoteAddress: string | undefined): AuthInfo {
  return { principal: addressBucket(remoteAddress), scopes: new Set() };
}
