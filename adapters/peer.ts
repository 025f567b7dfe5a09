// Optional peer dependencies (ioredis, prom-client) are loaded here, so that a missing one is
// reported by name with the command that installs it instead of as a bare module-not-found.
import { createRequire } from 'node:module';
import { McpRxError } from '../lib/errors.js';

const load = createRequire(import.meta.url);

/** Thrown when an entry that needs an optional peer dependency is used without it installed. */
export class MissingPeerDependencyError extends McpRxError {
  override readonly name = 'MissingPeerDependencyError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_MISSING_PEER_DEPENDENCY';
  /** The missing package and the entry that needs it. */
  override readonly info: { readonly packageName: string; readonly entry: string };

  constructor(packageName: string, entry: string, cause: unknown) {
    super(`${entry} needs the ${packageName} package, an optional peer dependency that is not installed: run npm install ${packageName}`, { cause });
    this.info = { packageName, entry };
  }
}

/**
 * Loads the CommonJS package `packageName` for `entry` (e.g. `mcp-rx-streams/redis`).
 * @throws MissingPeerDependencyError when the package cannot be found.
 */
export function requirePeer<T>(packageName: string, entry: string): T {
  try {
    return load(packageName) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${packageName}'`)) {
      throw new MissingPeerDependencyError(packageName, entry, error);
    }
    throw error;
  }
}
