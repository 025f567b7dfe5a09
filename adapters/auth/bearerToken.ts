import { AuthError, type BearerChallenge } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';

/** RFC 6750 §2.1: `Bearer` and one b68token (letters, digits, `-._~+/`, then `=` padding). */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The bearer token of a request's `Authorization` header (RFC 6750 §2.1; MCP authorization: "MUST
 * use the Authorization request header field"; never a query parameter).
 *
 * @example
 * bearerToken(request, ['mcp']) // 'eyJhbGciOi…' for `Authorization: Bearer eyJhbGciOi…`
 * @param request the request.
 * @param scope the scopes the request needs, for the challenge.
 * @returns the token.
 * @throws AuthError without a bearer token (no `error`: RFC 6750 §3.1), and with `invalid_request`
 *   for an `Authorization: Bearer …` that is not one token.
 */
export function bearerToken(request: EndpointRequest, scope: readonly string[]): string {
  const header = request.header('authorization');
  const challenge: BearerChallenge = scope.length === 0 ? {} : { scope };
  if (header === undefined || !/^Bearer(?: |$)/i.test(header)) throw new AuthError('send Authorization: Bearer <access token>', challenge);
  const match = BEARER.exec(header);
  if (match === null) throw new AuthError('Authorization: Bearer must be followed by exactly one access token', { ...challenge, error: 'invalid_request' });
  return match[1]!;
}
