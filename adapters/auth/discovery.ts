import { InvalidOptionError, McpRxError } from '../../lib/errors.js';
import { secureUrl } from '../../lib/protectedResource.js';
import { positiveInteger } from '../../lib/validate.js';
import { FetchFailure, fetchJson } from './fetchJson.js';

/** What an authorization server says of itself (RFC 8414 §2; OpenID Connect Discovery 1.0 §3), the members this entry reads. */
export interface AuthorizationServerMetadata {
  /** Its issuer identifier: the `iss` of its tokens. */
  readonly issuer: string;
  /** Where its signing keys are (a JWKS). */
  readonly jwks_uri?: string;
  /** Its token introspection endpoint (RFC 7662). */
  readonly introspection_endpoint?: string;
  /** Every other member, as the server sent it. */
  readonly [member: string]: unknown;
}

/**
 * No metadata of an authorization server could be read: each of its well-known URLs failed (no
 * answer in time, not 200, not JSON, another issuer named, an endpoint that is not https).
 */
export class DiscoveryError extends McpRxError {
  override readonly name = 'DiscoveryError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_DISCOVERY';
  /** The issuer, and what each URL tried answered. */
  override readonly info: { readonly issuer: string; readonly failures: readonly string[] };

  constructor(issuer: string, failures: readonly string[]) {
    super(`no metadata of the authorization server ${issuer} could be read: ${failures.join('; ')}`);
    this.info = { issuer, failures };
  }
}

/** Default time an authorization server gets to answer one request: 1 000 milliseconds. */
export const DEFAULT_FETCH_TIMEOUT = 1_000;

/**
 * The URLs of an issuer's metadata, in the order the MCP authorization spec (2025-11-25) has a
 * client try them: for an issuer with a path, OAuth 2.0 metadata with the well-known suffix
 * inserted before the path (RFC 8414 §3.1), OpenID Connect the same way, then OpenID Connect
 * appended to the path; for an issuer without one, OAuth 2.0 then OpenID Connect.
 * @internal
 */
export function metadataUrls(issuer: string): readonly string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  if (path === '') return [`${url.origin}/.well-known/oauth-authorization-server`, `${url.origin}/.well-known/openid-configuration`];
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * Fetches an authorization server's metadata (RFC 8414, or OpenID Connect Discovery): the first of
 * its well-known URLs that answers a JSON object, whose `issuer` must be `issuer` exactly (RFC 8414
 * §3.3: a document naming another issuer is not used).
 *
 * @example
 * const { jwks_uri } = await discoverAuthorizationServer('https://auth.example.com');
 * @param issuer the issuer identifier (`https://auth.example.com`; `http:` only on loopback).
 * @param options `timeout`: milliseconds the lookup may take, all URLs together (defaults to 1 000).
 * @returns the metadata.
 * @throws InvalidOptionError (a rejection) for an issuer that is not an https URL.
 * @throws DiscoveryError (a rejection) when no URL answered a usable document of that issuer.
 */
export async function discoverAuthorizationServer(issuer: string, options: { readonly timeout?: number } = {}): Promise<AuthorizationServerMetadata> {
  const checked = issuerUrl('issuer', issuer);
  const timeout = options.timeout === undefined ? DEFAULT_FETCH_TIMEOUT : positiveInteger('timeout', options.timeout, 'milliseconds');
  const failures: string[] = [];
  // One timeout for all the URLs tried: a server that hangs costs `timeout`, not one per URL.
  const deadline = AbortSignal.timeout(timeout);
  for (const url of metadataUrls(checked)) {
    if (deadline.aborted) break;
    let document: Record<string, unknown>;
    try {
      document = await fetchJson(url, timeout, { deadline });
    } catch (error) {
      if (!(error instanceof FetchFailure)) throw error;
      failures.push(error.message);
      continue;
    }
    const refused = refusedMetadata(document, issuer);
    if (refused === undefined) return document as AuthorizationServerMetadata;
    failures.push(`${url} ${refused}`);
  }
  throw new DiscoveryError(issuer, failures);
}

/** An issuer identifier: an https URL (http on loopback) without query or fragment (RFC 8414 §2). @internal */
export function issuerUrl(label: string, value: unknown): string {
  const url = secureUrl(label, value);
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(value as string)) throw new InvalidOptionError(label, 'an issuer URL without query or fragment', value);
  return value as string;
}

/** Why a metadata document cannot be used: another issuer, or an endpoint this entry calls that is not https (http on loopback). */
function refusedMetadata(document: Record<string, unknown>, issuer: string): string | undefined {
  if (document.issuer !== issuer) return `names the issuer ${JSON.stringify(document.issuer)}, not ${JSON.stringify(issuer)}`;
  for (const member of ['jwks_uri', 'introspection_endpoint'] as const) {
    const value = document[member];
    if (value === undefined) continue;
    try {
      secureUrl(member, value);
    } catch {
      return `gives a ${member} that is not an https URL`;
    }
  }
  return undefined;
}
