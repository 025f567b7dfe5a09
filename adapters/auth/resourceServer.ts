import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { AuthError, type AuthInfo, type CredentialRecheck } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { type ProtectedResource, resourceMetadata } from '../../lib/protectedResource.js';
import { arrayOf, milliseconds, nonNegativeInteger, scheduler as validScheduler, string } from '../../lib/validate.js';

/**
 * An endpoint's `authenticate` hook that names the resource it protects: given to `McpEndpoint`,
 * it makes the endpoint an OAuth 2.1 protected resource (the metadata document at
 * `/.well-known/oauth-protected-resource…`, challenges that point to it).
 */
export interface Authenticator {
  (request: EndpointRequest): Promise<AuthInfo>;
  /** The resource it protects, as its metadata document (RFC 9728) says it. */
  readonly protectedResource: ProtectedResource;
}

/** What every authenticator of this entry takes: the resource it protects, and how a token's claims become an `AuthInfo`. */
export interface ResourceServerOptions {
  /**
   * The resource identifier: the canonical URL of your MCP endpoint (`https://mcp.example.com/mcp`),
   * as clients name it in their token requests (RFC 8707 `resource`) and tokens name it in `aud`.
   * `http:` only on a loopback host (development).
   */
  readonly resource: string;
  /** The `aud` values a token may carry (any one of them); defaults to `[resource]`. */
  readonly audience?: string | readonly string[];
  /** Scopes every request needs: a token without one of them gets HTTP 403 `insufficient_scope`. None by default. */
  readonly requiredScopes?: readonly string[];
  /** The scopes clients may ask for, as the metadata says them (`scopes_supported`); defaults to `requiredScopes`. */
  readonly scopesSupported?: readonly string[];
  /** A name for people, in the metadata (`resource_name`). */
  readonly resourceName?: string;
  /**
   * The claim that names the caller; defaults to `sub`. The principal is `<claim>:<value>`
   * (`sub:alice`): the per-principal caps count it, `McpEndpoint.revoke` takes it. A token without
   * `sub` but with `client_id` (a client-credentials token of some servers) is `client:<client_id>`.
   */
  readonly principalClaim?: string;
  /** How far `exp` and `nbf` may be off, in milliseconds; defaults to 5 000. */
  readonly clockTolerance?: number;
  /** Where the time comes from (`now()`); defaults to `asyncScheduler` (the system clock). Give the endpoint's to test in virtual time. */
  readonly scheduler?: SchedulerLike;
}

/** The keys of {@link ResourceServerOptions}, for the option checks of each authenticator. @internal */
export const RESOURCE_SERVER_OPTIONS: readonly (keyof ResourceServerOptions)[] = [
  'resource', 'audience', 'requiredScopes', 'scopesSupported', 'resourceName', 'principalClaim', 'clockTolerance', 'scheduler',
];

/** Default of {@link ResourceServerOptions.clockTolerance}: 5 000 milliseconds. */
export const DEFAULT_CLOCK_TOLERANCE = 5_000;

/** {@link ResourceServerOptions}, checked, with their defaults. @internal */
export interface ResourceServer {
  readonly protectedResource: ProtectedResource;
  readonly audiences: readonly string[];
  readonly requiredScopes: readonly string[];
  readonly principalClaim: string;
  /** In milliseconds. */
  readonly clockTolerance: number;
  readonly scheduler: SchedulerLike;
}

/**
 * Checks the options every authenticator shares.
 * @param label the authenticator's options, for the messages (`jwtAuthenticator options`).
 * @param issuers the authorization servers (the metadata's `authorization_servers`), checked already.
 * @throws InvalidOptionError naming the option.
 * @internal
 */
export function resourceServer(label: string, options: ResourceServerOptions, issuers: readonly string[]): ResourceServer {
  const requiredScopes = options.requiredScopes ?? [];
  const protectedResource: ProtectedResource = {
    resource: options.resource,
    authorizationServers: issuers,
    ...(options.requiredScopes === undefined ? {} : { requiredScopes }),
    ...(options.scopesSupported === undefined ? {} : { scopesSupported: options.scopesSupported }),
    ...(options.resourceName === undefined ? {} : { resourceName: options.resourceName }),
  };
  // The checks an endpoint makes of a hook's protectedResource (the issuers are checked by the caller, under their own names).
  resourceMetadata(protectedResource, label);
  const given = options.audience ?? [options.resource];
  const audiences = typeof given === 'string' ? [given] : arrayOf('audience', given, 'a string or a non-empty array of strings', (entry, value) => string(entry, value, { nonEmpty: true }));
  if (audiences.length === 0) throw new InvalidOptionError('audience', 'a string or a non-empty array of strings', given);
  return {
    protectedResource: Object.freeze(protectedResource),
    audiences: Object.freeze([...audiences]),
    requiredScopes: Object.freeze([...requiredScopes]),
    principalClaim: options.principalClaim === undefined ? 'sub' : string('principalClaim', options.principalClaim, { nonEmpty: true }),
    clockTolerance: options.clockTolerance === undefined ? DEFAULT_CLOCK_TOLERANCE : nonNegativeInteger('clockTolerance', options.clockTolerance, 'milliseconds'),
    scheduler: options.scheduler === undefined ? asyncScheduler : validScheduler('scheduler', options.scheduler),
  };
}

/** A duration option of an authenticator: `fallback` when not given. @internal */
export function duration(label: string, value: unknown, fallback: number): number {
  return value === undefined ? fallback : milliseconds(label, value);
}

/** The claims of a verified token (a JWT's payload, an introspection response). @internal */
export type Claims = Readonly<Record<string, unknown>>;

/** The scopes of `claims`: `scope` (space-separated, RFC 9068 and RFC 7662) and `scp` (an array or a string: Entra ID, Okta). @internal */
export function scopesOf(claims: Claims): Set<string> {
  const scopes = new Set<string>();
  for (const claim of [claims.scope, claims.scp]) {
    if (typeof claim === 'string') for (const scope of claim.split(' ')) if (scope !== '') scopes.add(scope);
    if (Array.isArray(claim)) for (const scope of claim) if (typeof scope === 'string' && scope !== '') scopes.add(scope);
  }
  return scopes;
}

/**
 * The `AuthInfo` of a token whose signature or activity, issuer, audience and times are checked:
 * its principal, scopes and expiry; the required scopes are checked here.
 * @throws AuthError `invalid_token` when it names no principal; `insufficient_scope` (HTTP 403)
 *   when it lacks a required scope.
 * @internal
 */
export function authInfoOf(claims: Claims, server: ResourceServer, recheck?: CredentialRecheck): AuthInfo {
  const { principalClaim, requiredScopes } = server;
  const named = claims[principalClaim];
  const clientId = claims.client_id;
  let principal: string;
  if (typeof named === 'string' && named !== '') principal = `${principalClaim}:${named}`;
  else if (principalClaim === 'sub' && typeof clientId === 'string' && clientId !== '') principal = `client:${clientId}`;
  else throw new AuthError(`the token has no ${principalClaim} claim`, { error: 'invalid_token' });
  const scopes = scopesOf(claims);
  const missing = requiredScopes.filter((scope) => !scopes.has(scope));
  if (missing.length > 0) throw new AuthError(`the token lacks the scope ${missing.join(' ')}`, { error: 'insufficient_scope', scope: requiredScopes });
  const exp = claims.exp;
  return {
    principal,
    scopes,
    ...(typeof exp === 'number' && Number.isFinite(exp) ? { expiresAt: exp * 1000 } : {}),
    ...(recheck === undefined ? {} : { recheck }),
  };
}

/**
 * Whether a token's `aud` (a string or an array) names one of `audiences` (RFC 7519 §4.1.3, RFC 8707).
 * @internal
 */
export function namesAudience(aud: unknown, audiences: readonly string[]): boolean {
  if (typeof aud === 'string') return audiences.includes(aud);
  return Array.isArray(aud) && aud.some((entry) => typeof entry === 'string' && audiences.includes(entry));
}

/** The hook `authenticate`, naming `protectedResource`. @internal */
export function authenticator(authenticate: (request: EndpointRequest) => Promise<AuthInfo>, protectedResource: ProtectedResource): Authenticator {
  return Object.assign(authenticate, { protectedResource });
}
