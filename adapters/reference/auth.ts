// Who may call the reference server: nobody in particular (anonymous, by address), holders of HS256
// JWTs signed with a shared secret (`tokenSecret`, development), or holders of access tokens of a
// real authorization server (`issuer`: the MCP authorization spec's resource server, through
// mcp-rx-streams/auth). The options are declared here, once; `serve` has a flag for each.
import type { AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { option, type OptionTable } from '../../lib/optionTable.js';
import { arrayOf, string } from '../../lib/validate.js';
import { introspectionAuthenticator, jwtAuthenticator } from '../auth/index.js';
import { bearer } from './bearer.js';

/** How the reference server identifies its callers beside `tokenSecret`: an OAuth 2.1 authorization server's tokens. */
export interface AuthSettings {
  /**
   * The authorization server's issuer identifier (`https://auth.example.com`): every request then
   * needs one of its access tokens for `resource`; its keys are found through its metadata (RFC
   * 8414, or OpenID Connect Discovery). `http:` only on a loopback host (development).
   */
  readonly issuer?: string;
  /** The resource identifier tokens must be issued for (their `aud`); defaults to the server's own URL (`http://HOST:PORT/mcp`). */
  readonly resource?: string;
  /** Where the issuer's keys are (a JWKS URL), instead of its metadata's `jwks_uri`. */
  readonly jwksUrl?: string;
  /** Scopes every request needs (a token without one of them gets 403 `insufficient_scope`); none by default. */
  readonly requiredScopes?: readonly string[];
  /** The issuer's introspection endpoint (RFC 7662): tokens are then opaque ones, asked about there (and their streams end once revoked). */
  readonly introspectionUrl?: string;
  /** The server's client id at the issuer, to introspect with (`client_secret_basic`). */
  readonly introspectionClientId?: string;
  /** Its client secret. */
  readonly introspectionClientSecret?: string;
}

const URL_RULE = { nonEmpty: true, what: 'a URL (https://…; http:// only on localhost or 127.0.0.1)' };

/** A list of scopes, in code an array, on the command line comma- or space-separated (`mcp,private`). */
function scopes(label: string, value: unknown): readonly string[] {
  return arrayOf(label, value, 'an array of scope names', (entry, scope) => string(entry, scope, { pattern: /^[\x21\x23-\x5b\x5d-\x7e]+$/, what: 'a scope name' }));
}

/**
 * {@link AuthSettings}, declared once: checked by `startReferenceServer`, and `serve` flags.
 * @internal
 */
export const AUTH_SETTINGS: OptionTable<AuthSettings> = {
  issuer: option.text({
    placeholder: 'URL',
    rule: URL_RULE,
    shownDefault: 'none',
    description:
      "accept access tokens of this OAuth authorization server only (the MCP authorization spec): JWTs checked against its keys (found through its RFC 8414 / OpenID metadata), for --resource, with exp; serves the protected resource metadata and 401 challenges naming it. Use it in production; --token-secret is for development",
  }),
  resource: option.text({
    placeholder: 'URL',
    rule: URL_RULE,
    shownDefault: 'the listening URL, http://HOST:PORT/mcp',
    description: 'the canonical URL of this server, which tokens must be issued for (their aud, RFC 8707); set it to the public https URL behind a proxy; only with --issuer',
  }),
  jwksUrl: option.text({ placeholder: 'URL', rule: URL_RULE, shownDefault: "the issuer metadata's jwks_uri", description: "where the issuer's signing keys are; only with --issuer" }),
  requiredScopes: option.custom({
    placeholder: 'LIST',
    shownDefault: 'none',
    description: 'scopes every request needs, comma-separated (a token without one gets 403 insufficient_scope); only with --issuer',
    check: scopes,
    read: (label, text) => {
      const list = text.split(/[,\s]+/).filter((scope) => scope !== '');
      // An empty list would require nothing while saying it requires something: leave the flag out instead.
      if (list.length === 0) throw new InvalidOptionError(label, 'a comma-separated list of at least one scope name', text);
      return scopes(label, list);
    },
  }),
  introspectionUrl: option.text({
    placeholder: 'URL',
    rule: URL_RULE,
    shownDefault: 'none (tokens are JWTs)',
    description:
      "accept opaque tokens, asked about at this introspection endpoint of the issuer (RFC 7662; answers kept until the token's exp, at most a minute; open streams asked again every minute and ended once revoked); needs --introspection-client-id and --introspection-client-secret; only with --issuer",
  }),
  introspectionClientId: option.text({ placeholder: 'ID', rule: { nonEmpty: true }, shownDefault: 'none', description: "this server's client id at the issuer, for --introspection-url" }),
  introspectionClientSecret: option.text({ placeholder: 'SECRET', rule: { nonEmpty: true }, shownDefault: 'none', description: "this server's client secret at the issuer, for --introspection-url" }),
};

/**
 * Refuses settings that do not go together, before anything is opened: every auth option but
 * `issuer` needs `issuer`; `issuer` and `tokenSecret` exclude each other; `introspectionUrl` needs
 * its client id and secret and excludes `jwksUrl`.
 * @throws InvalidOptionError naming the option.
 * @internal
 */
export function checkAuthSettings(settings: AuthSettings, tokenSecret: string | undefined): void {
  const { issuer, jwksUrl, introspectionUrl, introspectionClientId, introspectionClientSecret } = settings;
  if (issuer === undefined) {
    const own = (Object.keys(AUTH_SETTINGS) as (keyof AuthSettings)[]).find((name) => name !== 'issuer' && settings[name] !== undefined);
    if (own !== undefined) throw new InvalidOptionError(own, 'used only together with issuer', own.endsWith('Secret') ? '(hidden)' : settings[own]);
    return;
  }
  if (tokenSecret !== undefined) throw new InvalidOptionError('tokenSecret', 'left out with issuer (tokens come from the authorization server or from the secret, not both)', '(hidden)');
  if (introspectionUrl === undefined) {
    const client = introspectionClientId !== undefined ? 'introspectionClientId' : introspectionClientSecret !== undefined ? 'introspectionClientSecret' : undefined;
    if (client !== undefined) throw new InvalidOptionError(client, 'used only together with introspectionUrl', '(given)');
    return;
  }
  if (jwksUrl !== undefined) throw new InvalidOptionError('jwksUrl', 'left out with introspectionUrl (opaque tokens are introspected, not verified with keys)', jwksUrl);
  if (introspectionClientId === undefined) throw new InvalidOptionError('introspectionClientId', 'given with introspectionUrl (the server introspects as a client of the issuer)', undefined);
  if (introspectionClientSecret === undefined) throw new InvalidOptionError('introspectionClientSecret', 'given with introspectionUrl (the server introspects as a client of the issuer)', undefined);
}

/**
 * The `authenticate` hook the settings (checked by {@link checkAuthSettings}) ask for: none
 * (anonymous callers), the `tokenSecret` one, or an authorization server's (mcp-rx-streams/auth).
 * @param listeningUrl the server's own URL (`http://HOST:PORT/mcp`): the resource unless `resource` says otherwise.
 * @throws InvalidOptionError (a rejection) for a URL the authenticators refuse (an `http:` issuer off loopback).
 * @internal
 */
export async function referenceAuthenticate(
  settings: AuthSettings,
  tokenSecret: string | undefined,
  listeningUrl: string | undefined,
): Promise<((request: EndpointRequest) => Promise<AuthInfo>) | undefined> {
  const { issuer, resource = listeningUrl, jwksUrl, requiredScopes, introspectionUrl, introspectionClientId, introspectionClientSecret } = settings;
  if (issuer === undefined) return tokenSecret === undefined ? undefined : bearer(new TextEncoder().encode(tokenSecret));
  if (resource === undefined) throw new InvalidOptionError('resource', 'given where the server has no URL of its own', undefined);
  const common = { issuer, resource, ...(requiredScopes === undefined ? {} : { requiredScopes }) };
  if (introspectionUrl === undefined) return jwtAuthenticator({ ...common, ...(jwksUrl === undefined ? {} : { jwksUri: jwksUrl }) });
  return introspectionAuthenticator({ ...common, introspectionUrl, clientId: introspectionClientId!, clientSecret: introspectionClientSecret! });
}
