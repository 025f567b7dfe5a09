import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyOptions, type KeyObject, type CryptoKey } from 'jose';
import { AuthError, type AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { secureUrl } from '../../lib/protectedResource.js';
import { arrayOf, options as validOptions, string } from '../../lib/validate.js';
import { bearerToken } from './bearerToken.js';
import { DEFAULT_FETCH_TIMEOUT, discoverAuthorizationServer, issuerUrl } from './discovery.js';
import { RemoteKeys } from './remoteKeys.js';
import { authenticator, type Authenticator, authInfoOf, duration, RESOURCE_SERVER_OPTIONS, resourceServer, type ResourceServer, type ResourceServerOptions } from './resourceServer.js';

/** Options of {@link jwtAuthenticator}. */
export interface JwtAuthenticatorOptions extends ResourceServerOptions {
  /** The authorization server's issuer identifier (`https://auth.example.com`): tokens' `iss` must be it exactly. `http:` only on loopback. */
  readonly issuer: string;
  /** Where its keys are (a JWKS URL); defaults to the `jwks_uri` of its metadata (RFC 8414, or OpenID Connect Discovery), fetched on first use. */
  readonly jwksUri?: string;
  /** The signing algorithms accepted; defaults to the asymmetric ones (RS, PS, ES 256/384/512, EdDSA, Ed25519). Symmetric ones (HS…) and `none` are never accepted. */
  readonly algorithms?: readonly string[];
  /** Milliseconds the authorization server gets to answer one request (its metadata, its keys); defaults to 1 000, so that a client is answered within about a second while it hangs. */
  readonly fetchTimeout?: number;
  /** Milliseconds after a key fetch before a token with an unknown `kid` may cause another; defaults to 30 000. */
  readonly jwksCooldown?: number;
  /** Milliseconds after which keys are fetched again (the ones held are kept if that fails); defaults to 600 000. */
  readonly jwksMaxAge?: number;
}

/** The asymmetric JWS algorithms: what a JWKS of public keys can verify. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

const KNOWN: readonly (keyof JwtAuthenticatorOptions)[] = [...RESOURCE_SERVER_OPTIONS, 'issuer', 'jwksUri', 'algorithms', 'fetchTimeout', 'jwksCooldown', 'jwksMaxAge'];

/** Seconds a client refused for want of keys is told to wait, in milliseconds. */
const RETRY_AFTER = 5_000;

/**
 * An `authenticate` hook that accepts JWT access tokens (RFC 9068) of one authorization server,
 * for one resource: the MCP authorization spec's resource server, on `jose`.
 *
 * Each request's `Authorization: Bearer` token must be a JWT signed by one of the issuer's keys
 * (fetched from its JWKS and kept; see the fetch options), with the key's own algorithm, and carry
 * `iss` = `issuer`, an `aud` naming `resource` (RFC 8707: a token issued for another server is
 * refused), an `exp` not past and an `nbf` not ahead (within `clockTolerance`), and every
 * `requiredScopes`. The caller is then `sub:<sub>` (or the claim `principalClaim` names), with the
 * token's scopes (`scope`, `scp`), until its `exp`: a stream it opens closes then (`token_expired`).
 *
 * Refused, the client gets HTTP 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
 * (`error="invalid_token"` when it sent a token), or 403 `insufficient_scope` for a good token
 * without a required scope; when the keys cannot be fetched at all (the authorization server does
 * not answer within `fetchTimeout`), 503 with a retry time. The endpoint serves the protected
 * resource metadata this hook names.
 *
 * @example
 * import { jwtAuthenticator } from 'mcp-rx-streams/auth';
 * const endpoint = new McpEndpoint({
 *   hub,
 *   authenticate: jwtAuthenticator({ issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp', requiredScopes: ['mcp'] }),
 * });
 * @param options see {@link JwtAuthenticatorOptions}; `issuer` and `resource` are required.
 * @returns the hook, with its `protectedResource`.
 * @throws InvalidOptionError naming the option that cannot be used.
 * @see introspectionAuthenticator
 * @see tokenVerifierAuthenticator
 */
export function jwtAuthenticator(options: JwtAuthenticatorOptions): Authenticator {
  const given = validOptions('jwtAuthenticator options', options, KNOWN, { like: "{ issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp' }" });
  const issuer = issuerUrl('issuer', given.issuer);
  const server = resourceServer('jwtAuthenticator options', options, [issuer]);
  const jwksUri = given.jwksUri === undefined ? undefined : secureUrl('jwksUri', given.jwksUri).href;
  const algorithms = given.algorithms === undefined ? ASYMMETRIC : arrayOf('algorithms', given.algorithms, 'an array of asymmetric JWS algorithms (RS256, ES256, …)', algorithm);
  if (algorithms.length === 0) throw new InvalidOptionError('algorithms', 'a non-empty array of asymmetric JWS algorithms', given.algorithms);
  const timeout = duration('fetchTimeout', given.fetchTimeout, DEFAULT_FETCH_TIMEOUT);
  let discovered: Promise<string> | undefined;
  const keys = new RemoteKeys({
    // Looked up once it answers; a failed lookup is tried again at the next fetch.
    jwksUri:
      jwksUri !== undefined
        ? () => Promise.resolve(jwksUri)
        : () =>
            (discovered ??= discoverAuthorizationServer(issuer, { timeout }).then((metadata) => {
              if (typeof metadata.jwks_uri !== 'string') throw new Error(`the metadata of ${issuer} has no jwks_uri`);
              return metadata.jwks_uri;
            })).catch((error: unknown) => {
              discovered = undefined;
              throw error;
            }),
    timeout,
    cooldown: duration('jwksCooldown', given.jwksCooldown, 30_000),
    maxAge: duration('jwksMaxAge', given.jwksMaxAge, 600_000),
    retryAfter: RETRY_AFTER,
    scheduler: server.scheduler,
  });
  const verify: Omit<JWTVerifyOptions, 'currentDate'> = {
    issuer,
    audience: [...server.audiences],
    algorithms: [...algorithms],
    clockTolerance: server.clockTolerance / 1000,
    requiredClaims: ['exp'],
  };
  const authenticate = async (request: EndpointRequest): Promise<AuthInfo> => {
    const token = bearerToken(request, server.requiredScopes);
    return authInfoOf(await verified(token, keys, verify, server), server);
  };
  return authenticator(authenticate, server.protectedResource);
}

/** The payload of `token`, verified; else the AuthError that refuses it. */
async function verified(token: string, keys: RemoteKeys, verify: Omit<JWTVerifyOptions, 'currentDate'>, server: ResourceServer): Promise<JWTPayload> {
  const options: JWTVerifyOptions = { ...verify, currentDate: new Date(server.scheduler.now()) };
  try {
    return (await jwtVerify(token, keys.getKey, options)).payload;
  } catch (error) {
    // A token without `kid`, and several keys of its algorithm: each is tried (jose leaves it to the caller).
    if (error instanceof joseErrors.JWKSMultipleMatchingKeys) return tryEach(token, error as unknown as AsyncIterable<KeyObject | CryptoKey>, options);
    throw refusal(error);
  }
}

async function tryEach(token: string, candidates: AsyncIterable<KeyObject | CryptoKey>, options: JWTVerifyOptions): Promise<JWTPayload> {
  let last: unknown = new joseErrors.JWSSignatureVerificationFailed();
  for await (const key of candidates) {
    try {
      return (await jwtVerify(token, key, options)).payload;
    } catch (error) {
      last = error;
      if (!(error instanceof joseErrors.JWSSignatureVerificationFailed)) break;
    }
  }
  throw refusal(last);
}

/** What a client is told of a token jose refused (never the token, nor what the token claims). */
function refusal(error: unknown): unknown {
  const invalid = (message: string) => new AuthError(message, { error: 'invalid_token' });
  if (error instanceof joseErrors.JWTExpired) return invalid('the token has expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'iss':
        return invalid('the token was issued by another authorization server');
      case 'aud':
        return invalid('the token was issued for another resource (its aud does not name this server)');
      case 'nbf':
        return invalid('the token is not valid yet (nbf)');
      case 'exp':
        return invalid(error.reason === 'missing' ? 'the token has no exp claim' : 'the token has expired');
      default:
        return invalid(`the token's ${error.claim} claim is invalid`);
    }
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) return invalid('the token is signed with an algorithm this server does not accept');
  if (error instanceof joseErrors.JWKSNoMatchingKey) return invalid('the token is signed with a key the authorization server does not publish');
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return invalid('the token signature is invalid');
  if (error instanceof joseErrors.JOSEError) return invalid('the token is not a valid signed JWT');
  // AuthError, AuthUnavailableError (no keys to be had), or a bug: as it is.
  return error;
}

/** An accepted algorithm: an asymmetric one. */
function algorithm(label: string, value: unknown): string {
  return string(label, value, { pattern: /^(?:RS|PS|ES)(?:256|384|512)$|^EdDSA$|^Ed25519$/, what: 'an asymmetric JWS algorithm (RS256, PS256, ES256, EdDSA, …; never HS… or none)' });
}
