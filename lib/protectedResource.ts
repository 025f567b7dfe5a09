import type { BearerChallenge } from './auth.js';
import { InvalidOptionError } from './errors.js';
import { arrayOf, options as validOptions, string } from './validate.js';

/**
 * The OAuth 2.1 protected resource an endpoint is (MCP authorization, revisions 2025-06-18 on;
 * RFC 9728): what its metadata document says and its 401 challenges point to. An `authenticate`
 * hook names it in its `protectedResource` property (the authenticators of `mcp-rx-streams/auth`
 * do; `protectResource` adds it to a hook of your own); the endpoint then serves the document at
 * `/.well-known/oauth-protected-resource` (and at the form with the resource's path appended) and
 * writes `resource_metadata`, `error` and `scope` into every challenge.
 *
 * @example
 * const resource: ProtectedResource = {
 *   resource: 'https://mcp.example.com/mcp',
 *   authorizationServers: ['https://auth.example.com'],
 *   requiredScopes: ['mcp'],
 *   scopesSupported: ['mcp', 'private'],
 * };
 */
export interface ProtectedResource {
  /**
   * The resource identifier: the canonical URL of the MCP endpoint (`https://mcp.example.com/mcp`),
   * which tokens must be issued for (their `aud`, RFC 8707). `https:`, or `http:` on a loopback
   * host (development); no query, no fragment.
   */
  readonly resource: string;
  /** The issuers of the authorization servers whose tokens the resource accepts (`authorization_servers`); at least one. */
  readonly authorizationServers: readonly string[];
  /** The scopes a client may ask for (`scopes_supported`); defaults to `requiredScopes` when that is not empty. */
  readonly scopesSupported?: readonly string[];
  /** The scopes every request needs: named in the challenges' `scope`; none by default. */
  readonly requiredScopes?: readonly string[];
  /** A name for people (`resource_name`). */
  readonly resourceName?: string;
  /** A page about the resource for developers (`resource_documentation`). */
  readonly resourceDocumentation?: string;
}

/** A {@link ProtectedResource} checked once, with what an endpoint serves and writes from it. @internal */
export interface ResourceMetadata {
  readonly resource: ProtectedResource;
  /** The metadata document's URL: the one the challenges name (`resource_metadata`). */
  readonly url: string;
  /** The request paths the document is served at: the path-suffixed form first (RFC 9728 §3.1), then the root form. */
  readonly paths: readonly string[];
  /** The document, as JSON. */
  readonly body: string;
  /** `requiredScopes`, or none. */
  readonly requiredScopes: readonly string[];
}

/** RFC 9728 §3: the well-known URI suffix. */
export const WELL_KNOWN_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

const KEYS: readonly (keyof ProtectedResource)[] = ['resource', 'authorizationServers', 'scopesSupported', 'requiredScopes', 'resourceName', 'resourceDocumentation'];

/** A scope token (RFC 6749 §3.3: `%x21 / %x23-5B / %x5D-7E`). */
const SCOPE_TOKEN = { pattern: /^[\x21\x23-\x5b\x5d-\x7e]+$/, what: 'a scope token (printable ASCII, no space, quote or backslash)' };

/**
 * An `authenticate` hook that names the resource it protects: the endpoint becomes an OAuth 2.1
 * protected resource (see {@link ProtectedResource}). The hook is unchanged; the result is a new
 * function calling it.
 *
 * @example
 * const endpoint = new McpEndpoint({
 *   hub,
 *   authenticate: protectResource(myAuthenticate, { resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://auth.example.com'] }),
 * });
 * @param authenticate your hook; throw `AuthError` with a {@link BearerChallenge} from it.
 * @param resource the resource it protects.
 * @throws InvalidOptionError naming the field of `resource` that cannot be used.
 */
export function protectResource<F extends (...args: never[]) => unknown>(authenticate: F, resource: ProtectedResource): F & { readonly protectedResource: ProtectedResource } {
  if (typeof authenticate !== 'function') throw new InvalidOptionError('protectResource authenticate', 'a function (the authenticate hook)', authenticate);
  resourceMetadata(resource, 'protectResource resource');
  const hook = ((...args: Parameters<F>) => authenticate(...args)) as unknown as F;
  return Object.assign(hook, { protectedResource: resource });
}

/**
 * The {@link ResourceMetadata} of the `protectedResource` an `authenticate` hook carries, checked;
 * `undefined` for a hook without one.
 * @throws InvalidOptionError naming `authenticate.protectedResource.<field>`.
 * @internal
 */
export function resourceMetadataOf(authenticate: unknown): ResourceMetadata | undefined {
  if (typeof authenticate !== 'function') return undefined;
  const given = (authenticate as { protectedResource?: unknown }).protectedResource;
  return given === undefined ? undefined : resourceMetadata(given, 'authenticate.protectedResource');
}

/**
 * Checks `given` and makes the document (RFC 9728 §2) and its paths and URL (§3.1).
 * @internal
 */
export function resourceMetadata(given: unknown, label: string): ResourceMetadata {
  const value = validOptions(label, given, KEYS, { like: "{ resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://auth.example.com'] }", keyLabel: `${label}.` });
  const url = secureUrl(`${label}.resource`, value.resource);
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(value.resource as string)) {
    throw new InvalidOptionError(`${label}.resource`, 'an absolute URL without query or fragment', value.resource);
  }
  const servers = arrayOf(`${label}.authorizationServers`, value.authorizationServers, 'a non-empty array of issuer URLs', secureUrl);
  if (servers.length === 0) throw new InvalidOptionError(`${label}.authorizationServers`, 'a non-empty array of issuer URLs', value.authorizationServers);
  const scopes = (name: 'scopesSupported' | 'requiredScopes') =>
    value[name] === undefined ? undefined : arrayOf(`${label}.${name}`, value[name], 'an array of scope names', (entry, scope) => string(entry, scope, SCOPE_TOKEN));
  const requiredScopes = scopes('requiredScopes') ?? [];
  const scopesSupported = scopes('scopesSupported') ?? (requiredScopes.length > 0 ? requiredScopes : undefined);
  for (const name of ['resourceName', 'resourceDocumentation'] as const) if (value[name] !== undefined) string(`${label}.${name}`, value[name], { nonEmpty: true });
  if (value.resourceDocumentation !== undefined) secureUrl(`${label}.resourceDocumentation`, value.resourceDocumentation);
  const resource = given as ProtectedResource;
  // RFC 9728 §3.1: the well-known suffix goes between the host and the path; a path of only "/" is none.
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const paths = path === '' ? [WELL_KNOWN_RESOURCE_PATH] : [WELL_KNOWN_RESOURCE_PATH + path, WELL_KNOWN_RESOURCE_PATH];
  const document = {
    resource: resource.resource,
    authorization_servers: resource.authorizationServers,
    ...(scopesSupported === undefined ? {} : { scopes_supported: scopesSupported }),
    bearer_methods_supported: ['header'],
    ...(resource.resourceName === undefined ? {} : { resource_name: resource.resourceName }),
    ...(resource.resourceDocumentation === undefined ? {} : { resource_documentation: resource.resourceDocumentation }),
  };
  return Object.freeze({ resource, url: url.origin + paths[0]!, paths: Object.freeze(paths), body: JSON.stringify(document), requiredScopes });
}

/** An `https:` URL, or `http:` on a loopback host (development): where tokens and keys may come from. @internal */
export function secureUrl(label: string, value: unknown): URL {
  const what = 'an https:// URL (http:// only on localhost, 127.0.0.1 or [::1])';
  let url: URL | undefined;
  try {
    url = new URL(string(label, value, { nonEmpty: true, what }));
  } catch (error) {
    if (error instanceof InvalidOptionError) throw error;
  }
  if (url !== undefined && (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname)))) return url;
  throw new InvalidOptionError(label, what, value);
}

/** `localhost`, `127.x.x.x` or `[::1]`: where plain `http:` is allowed (development). @internal */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * The `WWW-Authenticate` value of a refused bearer token (RFC 6750 §3, RFC 9728 §5.1): `Bearer`,
 * then `resource_metadata` when the endpoint is a protected resource, `error` and its description
 * when a token was sent, and the scopes the request needs.
 * @param metadata the endpoint's resource metadata, if any.
 * @param challenge what the hook said.
 * @param description the error's description (the `AuthError` message); only sent with an `error`.
 * @internal
 */
export function bearerChallenge(metadata: ResourceMetadata | undefined, challenge: BearerChallenge, description: string): string {
  const parameters: string[] = [];
  if (metadata !== undefined) parameters.push(`resource_metadata="${metadata.url}"`);
  if (challenge.error !== undefined) {
    parameters.push(`error="${challenge.error}"`);
    // RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E.
    const text = description.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "'");
    if (text !== '') parameters.push(`error_description="${text}"`);
  }
  const scope = challenge.scope ?? metadata?.requiredScopes ?? [];
  const tokens = scope.filter((token) => SCOPE_TOKEN.pattern.test(token));
  if (tokens.length > 0) parameters.push(`scope="${tokens.join(' ')}"`);
  return parameters.length === 0 ? 'Bearer' : `Bearer ${parameters.join(', ')}`;
}
