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
}

/**
 * Thrown by an `authenticate` hook to refuse a request: answered with HTTP 401, its message in
 * the JSON-RPC error (`unauthorized: <message>`) and `challenge` as `WWW-Authenticate`.
 *
 * @example
 * authenticate: (request) => {
 *   if (request.header('authorization') === undefined) throw new AuthError('a bearer token is required');
 *   return verify(request.header('authorization'));
 * }
 */
export class AuthError extends McpRxError {
  override readonly name = 'AuthError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_UNAUTHORIZED';
  /** The `WWW-Authenticate` challenge. */
  override readonly info: { readonly challenge: string };
  /** Value of the `WWW-Authenticate` response header; defaults to `Bearer`. */
  readonly challenge: string;

  constructor(message: string, challenge = 'Bearer') {
    super(message);
    this.challenge = challenge;
    this.info = { challenge };
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
