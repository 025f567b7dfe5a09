// The reference server's `--token-secret` authentication: HS256 JWTs in `Authorization: Bearer`.
import { errors as joseErrors, jwtVerify } from 'jose';
import { AuthError, type AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';

/**
 * The `authenticate` hook of a reference server with a token secret: the request's bearer token
 * must be an HS256 JWT signed with `secret`; its `sub` is the principal (`sub:<sub>`), its `exp`
 * (seconds) ends the streams, its space-separated `scope` names the scopes (`private`).
 * @throws AuthError (HTTP 401) without a bearer token, for an expired or invalid one, or one without `sub`.
 */
export function bearer(secret: Uint8Array): (request: EndpointRequest) => Promise<AuthInfo> {
  return async (request) => {
    const header = request.header('authorization');
    const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw new AuthError('send Authorization: Bearer <token>');
    try {
      const { payload } = await jwtVerify(match[1]!, secret, { algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || payload.sub === '') throw new AuthError('the token has no sub claim');
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
      return {
        principal: `sub:${payload.sub}`,
        scopes: new Set(scopes),
        ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}),
      };
    } catch (error) {
      if (error instanceof AuthError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new AuthError('the token has expired', 'Bearer error="invalid_token"');
      throw new AuthError('the token is invalid', 'Bearer error="invalid_token"');
    }
  };
}
