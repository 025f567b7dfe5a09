import { AuthError, type AuthInfo, AuthUnavailableError } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { arrayOf, callback, implementing, options as validOptions } from '../../lib/validate.js';
import { bearerToken } from './bearerToken.js';
import { issuerUrl } from './discovery.js';
import { authenticator, type Authenticator, RESOURCE_SERVER_OPTIONS, resourceServer, type ResourceServerOptions } from './resourceServer.js';

/**
 * What the official TypeScript SDK's `OAuthTokenVerifier` gives for a token
 * (`@modelcontextprotocol/sdk/server/auth/types.js` `AuthInfo`): the members read here.
 */
export interface VerifiedToken {
  readonly token: string;
  readonly clientId: string;
  readonly scopes: readonly string[];
  /** Seconds since the epoch. */
  readonly expiresAt?: number;
  /** The resource the token was issued for (RFC 8707). */
  readonly resource?: URL;
  readonly extra?: Record<string, unknown>;
}

/** An object shaped like the SDK's `OAuthTokenVerifier` (`requireBearerAuth({ verifier })`): yours, unchanged. */
export interface TokenVerifier {
  verifyAccessToken(token: string): Promise<VerifiedToken>;
}

/** Options of {@link tokenVerifierAuthenticator}. */
export interface TokenVerifierOptions extends Omit<ResourceServerOptions, 'principalClaim' | 'clockTolerance' | 'audience'> {
  /** The issuers of the authorization servers the verifier trusts (the metadata's `authorization_servers`); at least one. */
  readonly authorizationServers: readonly string[];
  /** The principal of a verified token; defaults to `sub:<extra.sub>` when the verifier gives a string `extra.sub`, else `client:<clientId>`. */
  readonly principal?: (token: VerifiedToken) => string;
}

const KNOWN: readonly (keyof TokenVerifierOptions)[] = [
  ...RESOURCE_SERVER_OPTIONS.filter((name) => name !== 'principalClaim' && name !== 'clockTolerance' && name !== 'audience'),
  'authorizationServers',
  'principal',
] as (keyof TokenVerifierOptions)[];

/**
 * An `authenticate` hook over a token verifier you already have, shaped like the official SDK's
 * `OAuthTokenVerifier` (what `requireBearerAuth` and `mcpAuthMetadataRouter` take): a server that
 * checks its tokens that way streams with the same check, unchanged.
 *
 * The verifier checks the token (signature or introspection, issuer, and the audience: the MCP
 * authorization spec requires that a token issued for another server is refused). Here: a token
 * without `expiresAt`, or past it, is refused; when the verifier reports the token's `resource`,
 * it must be this `resource` (without its fragment); the `requiredScopes` must all be granted
 * (403 `insufficient_scope` otherwise). A verifier that throws an error with `errorCode`
 * `invalid_token` (the SDK's `InvalidTokenError`) or `insufficient_scope` refuses with that error;
 * `server_error` or `temporarily_unavailable` gets the client a 503 with a retry time; any other
 * throw reaches the endpoint (a JSON-RPC internal error, reported on `channels.error`).
 *
 * @example
 * import { tokenVerifierAuthenticator } from 'mcp-rx-streams/auth';
 * const authenticate = tokenVerifierAuthenticator(verifier, {
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com'],
 *   requiredScopes: ['mcp'],
 * });
 * @param verifier your verifier.
 * @param options see {@link TokenVerifierOptions}.
 * @returns the hook, with its `protectedResource`.
 * @throws InvalidOptionError naming the argument or option that cannot be used.
 */
export function tokenVerifierAuthenticator(verifier: TokenVerifier, options: TokenVerifierOptions): Authenticator {
  implementing<TokenVerifier>('tokenVerifierAuthenticator verifier', verifier, ['verifyAccessToken'], 'an object with verifyAccessToken(token) (an SDK OAuthTokenVerifier)');
  const given = validOptions('tokenVerifierAuthenticator options', options, KNOWN, {
    like: "{ resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://auth.example.com'] }",
  });
  const issuers = arrayOf('authorizationServers', given.authorizationServers, 'a non-empty array of issuer URLs', issuerUrl);
  if (issuers.length === 0) throw new InvalidOptionError('authorizationServers', 'a non-empty array of issuer URLs', given.authorizationServers);
  const server = resourceServer('tokenVerifierAuthenticator options', options, issuers);
  const principalOf = given.principal === undefined ? defaultPrincipal : callback<(token: VerifiedToken) => string>('principal', given.principal);
  const resource = new URL(server.protectedResource.resource).href;
  const authenticate = async (request: EndpointRequest): Promise<AuthInfo> => {
    const token = bearerToken(request, server.requiredScopes);
    let verified: VerifiedToken;
    try {
      verified = await verifier.verifyAccessToken(token);
    } catch (error) {
      throw translated(error, server.requiredScopes);
    }
    const invalid = (message: string) => new AuthError(message, { error: 'invalid_token' });
    const { expiresAt } = verified;
    if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt)) throw invalid('the token has no expiration time');
    if (expiresAt * 1000 <= server.scheduler.now()) throw invalid('the token has expired');
    if (verified.resource !== undefined && withoutFragment(verified.resource) !== resource) throw invalid('the token was issued for another resource');
    const scopes = new Set(Array.isArray(verified.scopes) ? verified.scopes.filter((scope): scope is string => typeof scope === 'string') : []);
    const missing = server.requiredScopes.filter((scope) => !scopes.has(scope));
    if (missing.length > 0) throw new AuthError(`the token lacks the scope ${missing.join(' ')}`, { error: 'insufficient_scope', scope: server.requiredScopes });
    const principal = principalOf(verified);
    if (typeof principal !== 'string' || principal === '') throw new AuthError('the token names no principal', { error: 'invalid_token' });
    return { principal, scopes, expiresAt: expiresAt * 1000 };
  };
  return authenticator(authenticate, server.protectedResource);
}

function defaultPrincipal(token: VerifiedToken): string {
  const sub = token.extra?.sub;
  return typeof sub === 'string' && sub !== '' ? `sub:${sub}` : `client:${token.clientId}`;
}

function withoutFragment(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = '';
  return copy.href;
}

/** The refusal of a verifier's throw, by its OAuth `errorCode` (the SDK's `OAuthError` subclasses); anything else as it is. */
function translated(error: unknown, scope: readonly string[]): unknown {
  if (error instanceof AuthError || error instanceof AuthUnavailableError) return error;
  const code = (error as { errorCode?: unknown } | null)?.errorCode;
  const message = error instanceof Error && error.message !== '' ? error.message : 'the token was refused';
  switch (code) {
    case 'invalid_token':
      return new AuthError(message, { error: 'invalid_token' });
    case 'insufficient_scope':
      return new AuthError(message, { error: 'insufficient_scope', scope });
    case 'server_error':
    case 'temporarily_unavailable':
      return new AuthUnavailableError(message);
    default:
      return error;
  }
}
