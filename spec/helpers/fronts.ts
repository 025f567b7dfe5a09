import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import type { McpEndpoint } from '../../adapters/http/endpoint.js';
import { HubEventBus, sdkRouter, type SdkRouter } from '../../adapters/sdk/index.js';
import { mcpApp } from '../../examples/hono.js';

/** A server in front of an endpoint on 127.0.0.1 and a free port; `close` ends its connections and stops it (not the endpoint). */
export interface Front {
  readonly port: number;
  readonly server: http.Server;
  close(): Promise<void>;
}

async function listening(server: http.Server, port: Promise<number>, stop: () => Promise<void> = async () => {}): Promise<Front> {
  const bound = await port;
  return {
    port: bound,
    server,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await stop();
    },
  };
}

/** `examples/hono.ts` (webHandler in a Hono app) for `endpoint`, served by @hono/node-server with `requestTimeout` 0. */
export function serveHono(endpoint: McpEndpoint): Promise<Front> {
  let resolvePort!: (port: number) => void;
  const port = new Promise<number>((resolve) => (resolvePort = resolve));
  const server = serve({ fetch: mcpApp(endpoint).fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolvePort(info.port)) as http.Server;
  // node's own limit on receiving a request must not be what ends a connection under test.
  server.requestTimeout = 0;
  return listening(server, port);
}

/**
 * An {@link sdkRouter} in front of `endpoint` and a bare SDK 2.x server (no tools) on the endpoint's
 * hub, its node face on an http.Server with `requestTimeout` 0; `close` also closes the SDK handler.
 */
export function serveSdkRouter(endpoint: McpEndpoint, maxBodyBytes?: number): Promise<Front & { readonly router: SdkRouter }> {
  const sdk = createMcpHandler(() => new McpServer({ name: 'front', version: '0.0.0' }), { bus: new HubEventBus(endpoint.hub) });
  const router = sdkRouter({ endpoint, sdk, ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }) });
  const server = http.createServer({ requestTimeout: 0 }, (req, res) => router.node(req, res));
  const port = new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return listening(server, port, () => sdk.close()).then((front) => ({ ...front, router }));
}
