// The `mcp-rx-streams/auth` entry: the endpoint as an OAuth 2.1 protected resource, as the MCP
// authorization spec asks (issue 32). It loads `jose`; the main entry does not.

/* Authenticators */
export { jwtAuthenticator } from './jwt.js';
export type { JwtAuthenticatorOptions } from './jwt.js';
export { introspectionAuthenticator } from './introspection.js';
export type { IntrospectionAuthenticatorOptions } from './introspection.js';
export { tokenVerifierAuthenticator } from './tokenVerifier.js';
export type { TokenVerifier, TokenVerifierOptions, VerifiedToken } from './tokenVerifier.js';
export type { Authenticator, ResourceServerOptions } from './resourceServer.js';

/* Authorization server metadata */
export { discoverAuthorizationServer, DiscoveryError } from './discovery.js';
export type { AuthorizationServerMetadata } from './discovery.js';
