// A gateway (mcp-rx-streams/upstream) behind a real node:http server on a loopback port, the
// reference server as an upstream, and the official clients of both eras downstream: what the
// gateway specs share (issue 34).
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { nodeHandler } from '../../adapters/http/node.js';
import { startReferenceServer, type ReferenceServer } from '../../adapters/reference/server.js';
import { upstreamGateway, type UpstreamGateway, type UpstreamGatewayOptions } from '../../adapters/upstream/index.js';
import { Hub } from '../../lib/hub.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import type { ResourceProvider } from '../../lib/resources.js';
import { within } from './wait.js';

/** Bound of every wait in the gateway specs: fail instead of hanging. */
export const WAIT_MS = 5_000;

/** Polls `predicate` every 5 ms; rejects after `ms`. */
export async function until(predicate: () => boolean, what: string, ms = WAIT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves after `ms` of real time. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gateway endpoint served on 127.0.0.1. */
export interface GatewayFront {
  readonly url: URL;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly gateway: UpstreamGateway;
  readonly server: http.Server;
  close(): Promise<void>;
}

/**
 * Starts a gateway over `options.upstreams` (its own `hub`), an endpoint serving its resources
 * (and `own` providers after them) with its methods, on a node:http server on port 0.
 */
export async function startGateway(
  options: Omit<UpstreamGatewayOptions, 'hub'> & { readonly endpoint?: Partial<McpEndpointOptions>; readonly own?: readonly ResourceProvider[] },
): Promise<GatewayFront> {
  const { endpoint: endpointOptions, own = [], ...gatewayOptions } = options;
  const hub = new Hub();
  const gateway = upstreamGateway({ ...gatewayOptions, hub });
  const endpoint = new McpEndpoint({
    hub,
    capabilities: { tools: true, prompts: true, resources: true },
    resourceProviders: [gateway.resources, ...own],
    methods: gateway.methods(),
    ...endpointOptions,
  });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    hub,
    endpoint,
    gateway,
    server,
    close: async () => {
      endpoint.close();
      gateway.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      hub.close();
    },
  };
}

/** A reference server over a fresh folder holding `files`, with their URIs. */
export interface ReferenceUpstream {
  readonly server: ReferenceServer;
  readonly dir: string;
  /** The `file://` URI of a file of the folder. */
  uri(name: string): string;
  /** Starts it again on the same port and folder (after `server.close()`). */
  restart(): Promise<ReferenceUpstream>;
}

/** The reference server (both eras) on 127.0.0.1 over a new folder holding `files` (name → text). */
export async function referenceUpstream(files: Readonly<Record<string, string>>, port = 0, dir?: string): Promise<ReferenceUpstream> {
  const folder = dir ?? (await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-gateway-'))));
  if (dir === undefined) for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(folder, name), text);
  const server = await within(startReferenceServer({ dir: folder, port, host: '127.0.0.1', debounceMs: 20 }), WAIT_MS, 'the reference server to start');
  const uri = (name: string) => pathToFileURL(path.join(folder, name)).href;
  return { server, dir: folder, uri, restart: () => referenceUpstream(files, Number(new URL(server.url).port), folder) };
}

/** The official 2.x client (2026-07-28), connected, collecting what it hears. */
export async function modernClient(url: URL) {
  const client = new ModernClient({ name: 'gateway-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const updated: string[] = [];
  let toolsChanged = 0;
  let resourcesChanged = 0;
  client.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
  client.setNotificationHandler('notifications/tools/list_changed', () => void toolsChanged++);
  client.setNotificationHandler('notifications/resources/list_changed', () => void resourcesChanged++);
  await within(client.connect(new ModernTransport(url), { timeout: WAIT_MS }), WAIT_MS + 500, 'connect()');
  return { client, updated, toolsChanged: () => toolsChanged, resourcesChanged: () => resourcesChanged };
}

/** The official 1.x client (a 2025 session), connected, collecting what it hears on its GET stream. */
export async function legacyClient(url: URL) {
  const client = new LegacyClient({ name: 'gateway-spec-legacy', version: '0.0.0' });
  const updated: string[] = [];
  let toolsChanged = 0;
  let resourcesChanged = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void resourcesChanged++);
  const transport = new LegacyTransport(url);
  await within(client.connect(transport), WAIT_MS, 'the 1.x client to connect');
  return { client, transport, updated, toolsChanged: () => toolsChanged, resourcesChanged: () => resourcesChanged };
}

/** The filter an acknowledgment honours (`params.notifications`). */
export function acknowledged(message: JsonRpcMessage | undefined): unknown {
  return (message as { params?: { notifications?: unknown } } | undefined)?.params?.notifications;
}

/** The `params.uri` of a notification, if it has one. */
export function uriOf(message: JsonRpcMessage | undefined): string | undefined {
  return (message as { params?: { uri?: string } } | undefined)?.params?.uri;
}
