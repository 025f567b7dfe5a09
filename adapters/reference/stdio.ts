import type { Readable, Writable } from 'node:stream';
import type { Hub } from '../../lib/hub.js';
import { type ChannelSession } from '../channel/session.js';
import { serveStdio } from '../channel/stdio.js';
import type { McpEndpoint } from '../http/endpoint.js';
import type { FileResources } from './files.js';
import type { AuthSettings } from './auth.js';
import { openReference, type ReferenceServerOptions } from './server.js';

/** Options of {@link startReferenceStdio}: the reference server's, less what only HTTP has. */
export type ReferenceStdioOptions = Omit<ReferenceServerOptions, 'port' | 'host' | 'tokenSecret' | keyof AuthSettings | 'trustProxy' | 'corsOrigins' | 'redis' | 'nodeId' | 'watchLeaseTtl' | 'redisConnectTimeout'> & {
  /** Where the host's messages arrive; defaults to `process.stdin`. */
  readonly input?: Readable;
  /** Where messages go; defaults to `process.stdout` (which then carries nothing else). */
  readonly output?: Writable;
};

/** A reference server serving one host over stdio. */
export interface ReferenceStdio {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly files: FileResources;
  /** The channel's session: `closed` resolves when the host closed stdin (everything released by then). */
  readonly session: ChannelSession;
  /**
   * Closes every listen gracefully (closing frames, reason `shutdown`, written before the channel
   * ends), then the channel, the folder watch and the hub.
   */
  close(): Promise<void>;
}

/**
 * Starts the reference server (a directory served as MCP resources, see `startReferenceServer`)
 * over stdin and stdout: what `mcp-rx-streams serve --stdio` runs, for a host that launches it as a
 * child process. Both eras on the one pipe; the host is one principal (`stdio`), with no scopes, so
 * `private/` is not served.
 *
 * @example
 * const server = await startReferenceStdio({ dir: './demo-data' });
 * await server.session.closed; // the host closed stdin
 * await server.close();
 * @param options the reference server's options that apply on stdio, and the streams.
 */
export async function startReferenceStdio(options: ReferenceStdioOptions = {}): Promise<ReferenceStdio> {
  const { input, output, ...rest } = options;
  const { hub, endpoint, files, watching } = await openReference(rest);
  const session = serveStdio(endpoint, { ...(input === undefined ? {} : { input }), ...(output === undefined ? {} : { output }) });
  let closing: Promise<void> | undefined;
  return {
    hub,
    endpoint,
    files,
    session,
    close: () =>
      (closing ??= (async () => {
        watching.unsubscribe();
        files.close();
        // The closing frames of every listen go out first (into stdout's buffer), then the channel ends.
        endpoint.close();
        await new Promise((resolve) => setImmediate(resolve));
        session.close();
        hub.close();
      })()),
  };
}
