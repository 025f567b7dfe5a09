// What `mcp-rx-streams serve` logs as it starts: where it listens, what it serves, who may call it,
// which protocol revisions, and what --demo created.
import path from 'node:path';
import { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION } from '../../lib/protocol.js';
import type { Logger } from '../logTo.js';
import { DEMO_FILES } from '../reference/demoData.js';
import type { ReferenceServer } from '../reference/server.js';

/**
 * Logs the start of the reference server (`info`): its URL, the directory it serves (and what
 * `--demo` created in it), its authentication, the protocol revisions of both eras.
 * @param dir the served directory, absolute.
 * @param tokens whether tokens are required: `--token-secret`, or the issuer `--issuer` names.
 * @internal
 */
export function logStart(logger: Logger, server: ReferenceServer, { dir, tokens, issuer }: { readonly dir: string; readonly tokens: boolean; readonly issuer?: string | undefined }): void {
  logger.info({ event: 'listening', url: server.url }, `listening on ${server.url}`);
  logger.info({ event: 'serving', dir }, `serving ${dir} as MCP resources (files under private/ need the private scope)`);
  if (server.createdDemoData) {
    const files = DEMO_FILES.map((file) => file.split('/').join(path.sep));
    logger.info({ event: 'demo_created', dir, files }, `--demo created ${dir} with sample files: ${files.join(', ')}`);
  }
  logger.info(
    { event: 'auth', tokens },
    issuer !== undefined
      ? `authentication: every request needs an access token of ${issuer} for ${server.endpoint.core.resourceMetadata?.resource.resource ?? server.url}; metadata at ${server.endpoint.core.resourceMetadata?.url ?? '(none)'}`
      : tokens
        ? 'authentication: every request needs Authorization: Bearer <HS256 JWT> (--token-secret); its sub is the principal'
        : 'authentication: none, callers are anonymous and told apart by their address (--issuer or --token-secret to require tokens)',
  );
  const legacy = [...LEGACY_PROTOCOL_VERSIONS].reverse();
  logger.info(
    { event: 'eras', modern: [MODERN_PROTOCOL_VERSION], legacy },
    `protocol revisions: ${MODERN_PROTOCOL_VERSION} (subscriptions/listen) and ${legacy.join(', ')} (legacy sessions: initialize, GET stream, resources/subscribe)`,
  );
}
