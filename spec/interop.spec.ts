// Interop: the official TypeScript MCP client (@modelcontextprotocol/client 2.4.0) against the
// reference server, over real loopback sockets. What the client sends and expects is written up
// in docs/interop-notes.md.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport, type ClientOptions } from '@modelcontextprotocol/client';
import { test } from 'uvu';
import { startReferenceServer, type ReferenceServer, type ReferenceServerOptions } from '../adapters/reference/server.js';
import { within } from './helpers/wait.js';

const PROTOCOL_VERSION = '2026-07-28';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** Bound of every wait in this file: fail instead of hanging. */
const WAIT_MS = 4_000;


/** Polls `predicate` every 10 ms; rejects after `ms`. */
async function until(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Updated {
  readonly uri: string;
  readonly meta: Record<string, unknown> | undefined;
}

interface Fixture {
  readonly server: ReferenceServer;
  readonly client: Client;
  /** The served temp directory (real path). */
  readonly dir: string;
  /** A file under `dir` and its resource URI. */
  readonly file: string;
  readonly uri: string;
  /** A second file under `dir` that nobody subscribes to. */
  readonly otherFile: string;
  /** Every `notifications/resources/updated` the client's handler received. */
  readonly updated: Updated[];
  /** Every error the client reported through `onerror`. */
  readonly errors: Error[];
}

/**
 * Serves a fresh temp directory with the reference server, connects the official client to it
 * (modern era, pinned unless `clientOptions` says otherwise), runs `fn`, and always closes the
 * client, the server and the directory afterwards.
 */
async function withReference(
  fn: (fixture: Fixture) => Promise<void>,
  { serverOptions = {}, clientOptions = {} }: { serverOptions?: Partial<ReferenceServerOptions>; clientOptions?: ClientOptions } = {},
): Promise<void> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-interop-')));
  const file = path.join(dir, 'watched.txt');
  const otherFile = path.join(dir, 'other.txt');
  await fs.writeFile(file, 'version 1\n');
  await fs.writeFile(otherFile, 'untouched\n');
  let server: ReferenceServer | undefined;
  let client: Client | undefined;
  try {
    server = await within(startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20, ...serverOptions }), WAIT_MS, 'the server to start');
    const updated: Updated[] = [];
    const errors: Error[] = [];
    client = new Client(
      { name: 'mcp-rx-streams-interop', version: '0.0.0' },
      { versionNegotiation: { mode: { pin: PROTOCOL_VERSION } }, ...clientOptions },
    );
    client.onerror = (error) => errors.push(error);
    client.setNotificationHandler('notifications/resources/updated', (notification) => {
      updated.push({ uri: notification.params.uri, meta: notification.params._meta as Record<string, unknown> | undefined });
    });
    await within(client.connect(new StreamableHTTPClientTransport(new URL(server.url)), { timeout: WAIT_MS }), WAIT_MS + 500, 'connect()');
    await fn({ server, client, dir, file, uri: pathToFileURL(file).href, otherFile, updated, errors });
  } finally {
    await client?.close().catch(() => {});
    if (server !== undefined) await within(server.close(), WAIT_MS, 'the server to close');
    await fs.rm(dir, { recursive: true, force: true });
  }
}

test('the official client discovers the reference server and selects 2026-07-28', async () => {
  await withReference(async ({ client }) => {
    strictEqual(client.getProtocolEra(), 'modern');
    strictEqual(client.getNegotiatedProtocolVersion(), PROTOCOL_VERSION);
    const discover = client.getDiscoverResult();
    ok(discover !== undefined, 'the client kept the server/discover result');
    ok(discover.supportedVersions.includes(PROTOCOL_VERSION), `supportedVersions: ${JSON.stringify(discover.supportedVersions)}`);
    strictEqual(client.getServerCapabilities()?.resources?.subscribe, true);
    strictEqual(client.getServerCapabilities()?.resources?.listChanged, true);
    // The server identifies itself in _meta["io.modelcontextprotocol/serverInfo"].
    strictEqual(typeof client.getServerVersion()?.name, 'string');
  });
});

test("mode 'auto' also settles on the modern era (no fallback to initialize)", async () => {
  await withReference(
    async ({ client }) => {
      strictEqual(client.getProtocolEra(), 'modern');
      strictEqual(client.getNegotiatedProtocolVersion(), PROTOCOL_VERSION);
    },
    { clientOptions: { versionNegotiation: { mode: 'auto' } } },
  );
});

test('listen for one resource: ack, resources/updated after the file changes, clean local close', async () => {
  await withReference(
    async ({ server, client, dir, file, uri, otherFile, updated, errors }) => {
      const notServed = pathToFileURL(path.join(path.dirname(dir), `${path.basename(dir)}-not-served.txt`)).href;
      const subscription = await within(
        client.listen({ resourceSubscriptions: [uri, notServed] }, { timeout: WAIT_MS }),
        WAIT_MS + 500,
        'the listen acknowledgment',
      );
      // M2/M4: only what was asked for and may be read is honoured; the URI outside the served
      // directory is dropped silently.
      deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [uri] });
      await until(() => server.endpoint.stats.streams === 1, WAIT_MS, 'the server to count the stream');

      // A change to a file nobody subscribed to must not reach this stream (M6); change it first,
      // so a wrongly delivered notification would arrive before the expected one.
      await fs.writeFile(otherFile, 'changed\n');
      await sleep(100);
      await fs.writeFile(file, 'version 2\n');
      await until(() => updated.some((n) => n.uri === uri), WAIT_MS, `notifications/resources/updated for ${uri}`);

      deepStrictEqual(
        updated.map((n) => n.uri).filter((u) => u !== uri),
        [],
        'no notification for a resource that was not subscribed to',
      );
      for (const notification of updated) {
        // M5: every message carries the listen id verbatim (the client's ids are strings "listen:N").
        strictEqual(notification.meta?.[SUBSCRIPTION_ID], 'listen:0');
      }

      await within(subscription.close(), WAIT_MS, 'subscription.close()');
      strictEqual(await within(subscription.closed, WAIT_MS, 'subscription.closed'), 'local');
      // M14: the client aborting its POST releases the stream on the server.
      await until(() => server.endpoint.stats.streams === 0 && server.endpoint.stats.slots === 0, WAIT_MS, 'the server to release the stream');
      deepStrictEqual(errors.map(String), [], 'the client reported no error (notifications/cancelled was accepted)');
    },
    { serverOptions: { keepAliveInterval: 25 } },
  );
});

test('the official client lists and reads the served resource (results carry resultType, ttlMs, cacheScope)', async () => {
  await withReference(async ({ client, uri }) => {
    const listed = await within(client.listResources(), WAIT_MS, 'resources/list');
    ok(
      listed.resources.some((resource) => resource.uri === uri),
      `resources/list has ${uri}: ${JSON.stringify(listed.resources.map((r) => r.uri))}`,
    );
    const read = await within(client.readResource({ uri }), WAIT_MS, 'resources/read');
    strictEqual(read.contents[0]?.uri, uri);
    strictEqual((read.contents[0] as { text?: unknown } | undefined)?.text, 'version 1\n');
  });
});

test("server shutdown with closeNotice 'result-only' ends the client's listen as 'graceful'", async () => {
  await withReference(
    async ({ server, client, uri, errors }) => {
      const subscription = await within(client.listen({ resourceSubscriptions: [uri] }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
      const closing = server.close();
      strictEqual(await within(subscription.closed, WAIT_MS, 'subscription.closed'), 'graceful');
      await within(closing, WAIT_MS, 'the server to close');
      deepStrictEqual(errors.map(String), []);
    },
    { serverOptions: { closeNotice: 'result-only' } },
  );
});

test("server shutdown with the default closeNotice: the 2.4.0 client ends the listen as 'remote' on notifications/cancelled", async () => {
  // Characterizes the official client: it settles the listen on `notifications/cancelled` and then
  // reports the following listen result as a response for an unknown id (see docs/interop-notes.md).
  await withReference(async ({ server, client, uri, errors }) => {
    const subscription = await within(client.listen({ resourceSubscriptions: [uri] }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
    const closing = server.close();
    strictEqual(await within(subscription.closed, WAIT_MS, 'subscription.closed'), 'remote');
    await within(closing, WAIT_MS, 'the server to close');
    await until(() => errors.length > 0, WAIT_MS, 'the client to report the trailing listen result');
    ok(/unknown message ID.*"listen:0"/.test(String(errors[0])), String(errors[0]));
  });
});

test.run();
