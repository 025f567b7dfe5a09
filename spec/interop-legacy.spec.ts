// Interop, legacy era: the official 1.x client (@modelcontextprotocol/sdk `Client` +
// `StreamableHTTPClientTransport`) against the reference server over real loopback sockets:
// initialize a session, the standalone GET stream, resources/subscribe, a server-side cut of the
// GET connection, resumption with Last-Event-ID and delivery of the update missed meanwhile, then
// DELETE. What the client sends and expects is written up in docs/legacy-interop-notes.md.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import fs from 'node:fs/promises';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'uvu';
import { startReferenceServer, type ReferenceServer } from '../adapters/reference/server.js';
import { within } from './helpers/wait.js';

/** Bound of every wait in this file: fail instead of hanging. */
const WAIT_MS = 3_000;
const RESOURCE_UPDATED = 'notifications/resources/updated';

/** Polls `predicate` every 5 ms; rejects after `ms`. */
async function until(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A `GET /mcp` as the server saw it: its request headers and every byte written on its response. */
interface SeenGet {
  readonly headers: http.IncomingHttpHeaders;
  readonly socket: import('node:net').Socket;
  written: string;
  closed: boolean;
}

/** The `id:` values of the SSE events in `text`, in order. */
const eventIds = (text: string): number[] => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));

/** The SSE events of `text` whose data is a `notifications/resources/updated` for `uri`, with their ids. */
function updatedEvents(text: string, uri: string): number[] {
  const ids: number[] = [];
  for (const block of text.split('\n\n')) {
    const id = /^id: (\d+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (id === undefined || data === undefined) continue;
    const message = JSON.parse(data) as { method?: string; params?: { uri?: string } };
    if (message.method === RESOURCE_UPDATED && message.params?.uri === uri) ids.push(Number(id));
  }
  return ids;
}

test('SDK 1.x client: subscribe, update, server-side cut, Last-Event-ID resume delivers the missed update, DELETE releases all', async () => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-interop-legacy-')));
  const file = path.join(dir, 'watched.txt');
  await fs.writeFile(file, 'version 1\n');
  const uri = pathToFileURL(file).href;
  let server: ReferenceServer | undefined;
  let client: Client | undefined;
  try {
    server = await within(startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20 }), WAIT_MS, 'the server to start');
    const { endpoint } = server;

    // Every GET the server receives, with what it writes back (the second 'request' listener runs
    // after the endpoint's handler, before that handler's first asynchronous write).
    const gets: SeenGet[] = [];
    const deletes: http.IncomingHttpHeaders[] = [];
    server.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.method === 'DELETE') deletes.push(req.headers);
      if (req.method !== 'GET') return;
      const seen: SeenGet = { headers: req.headers, socket: req.socket, written: '', closed: false };
      gets.push(seen);
      const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        seen.written += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
        return write(chunk, ...rest);
      }) as typeof res.write;
      res.once('close', () => (seen.closed = true));
    });

    // The client's GETs after the first (its reconnects) wait for `releaseReconnect`, so the file
    // can change while the session provably has no stream.
    let releaseReconnect!: () => void;
    const reconnectGate = new Promise<void>((resolve) => (releaseReconnect = resolve));
    let clientGets = 0;
    // Once the session is being deleted, the SDK's retry of the ended GET (it would go out without
    // a session id, SDK 1.x) is held until close() aborts it, so it cannot race the assertions.
    let terminating = false;
    const aborted = (signal: AbortSignal | null | undefined) =>
      new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const gatedFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET') === 'GET') {
        if (terminating) await aborted(init?.signal);
        if (++clientGets > 1) await reconnectGate;
      }
      return fetch(input, init);
    };

    const updated: string[] = [];
    const errors: string[] = [];
    client = new Client({ name: 'mcp-rx-streams-interop-legacy', version: '0.0.0' });
    client.onerror = (error) => errors.push(String(error));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      updated.push(notification.params.uri);
    });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: gatedFetch,
      // All four fields: the object replaces the SDK's defaults (1 s, ×1.5, 2 retries).
      reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 10, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
    });
    await within(client.connect(transport), WAIT_MS, 'connect()');

    // L1: a session at the client's (latest) revision, resources.subscribe advertised.
    strictEqual(transport.protocolVersion, '2025-11-25');
    ok(typeof transport.sessionId === 'string' && transport.sessionId.length >= 32, `session id: ${transport.sessionId}`);
    deepStrictEqual(client.getServerCapabilities()?.resources, { subscribe: true, listChanged: true });
    strictEqual(client.getServerVersion()?.name, 'mcp-rx-streams-reference');

    // The SDK opens the GET without awaiting it: wait until the server has it, then subscribe.
    await until(() => endpoint.stats.streams === 1, WAIT_MS, 'the GET stream to open');
    strictEqual(gets.length, 1);
    strictEqual(gets[0]!.headers['mcp-session-id'], transport.sessionId);
    strictEqual(gets[0]!.headers.accept, 'text/event-stream');
    strictEqual(gets[0]!.headers['last-event-id'], undefined, 'the first GET carries no Last-Event-ID');

    deepStrictEqual(await within(client.subscribeResource({ uri }), WAIT_MS, 'resources/subscribe'), {});
    strictEqual(endpoint.stats.sessionSubscriptions, 2, 'the file, and the session-wide list-changed feed');

    // A change while connected arrives as notifications/resources/updated with an event id.
    await fs.writeFile(file, 'version 2\n');
    await until(() => updated.length >= 1, WAIT_MS, `${RESOURCE_UPDATED} for ${uri}`);
    deepStrictEqual([...new Set(updated)], [uri], 'only the subscribed URI is notified');
    // DESIGN L7: the stream opened with its priming event (id 0, the session's newest id), then the update.
    const [primed, ...firstStreamIds] = eventIds(gets[0]!.written);
    strictEqual(primed, 0, `the priming id: ${JSON.stringify(gets[0]!.written[0])}`);
    ok(firstStreamIds.length >= 1, `the first stream's events carry ids: ${JSON.stringify(gets[0]!.written)}`);
    deepStrictEqual(updatedEvents(gets[0]!.written, uri), firstStreamIds, 'every event so far is the update of the file');
    const beforeCut = updated.length;

    // Cut the GET connection from the server side and wait until the server has noticed.
    gets[0]!.socket.destroy();
    await until(() => endpoint.stats.streams === 0 && gets[0]!.closed, WAIT_MS, 'the server to notice the cut');
    strictEqual(endpoint.stats.sessions, 1, 'the session outlives its stream (grace period)');
    strictEqual(endpoint.stats.sessionSubscriptions, 2, 'its subscriptions keep feeding the replay buffer');

    // Change the file while disconnected; the hub's own topic tells when the change was published
    // (the session's subscription is on the same topic, so its replay buffer has the frame by then).
    let published = 0;
    const watcher = server.hub.topic({ topic: 'resource', uri }).subscribe(() => published++);
    try {
      await fs.writeFile(file, 'version 3\n');
      await until(() => published >= 1, WAIT_MS, 'the change to be published while disconnected');
    } finally {
      watcher.unsubscribe();
    }
    strictEqual(gets.length, 1, 'no reconnect reached the server while the file changed');
    strictEqual(updated.length, beforeCut, 'nothing was delivered while disconnected');

    // Let the client reconnect: its GET carries Last-Event-ID = the last id it saw on the cut stream.
    releaseReconnect();
    await until(() => updated.length > beforeCut, WAIT_MS, 'the missed update after the reconnect');
    strictEqual(gets.length, 2, 'exactly one reconnect');
    const resumed = gets[1]!;
    strictEqual(resumed.headers['last-event-id'], String(firstStreamIds.at(-1)), 'the reconnect resumes after the last id seen');
    strictEqual(resumed.headers['mcp-session-id'], transport.sessionId);
    deepStrictEqual(updated.slice(beforeCut), [uri], 'the update made while disconnected, once');
    // On the wire: the replay starts right after the seam, no gap and no duplicate.
    const resumedIds = updatedEvents(resumed.written, uri);
    deepStrictEqual(resumedIds, [firstStreamIds.at(-1)! + 1], `the replayed frame: ${JSON.stringify(resumed.written)}`);
    // The resumed stream is primed with the client's own Last-Event-ID, then replays after it.
    deepStrictEqual(eventIds(resumed.written), [firstStreamIds.at(-1)!, ...resumedIds]);
    await until(() => endpoint.stats.streams === 1, WAIT_MS, 'the server to count the resumed stream');

    // The client noticed the cut (and only that).
    ok(errors.length >= 1 && errors.every((e) => /SSE stream disconnected/.test(e)), `client errors: ${JSON.stringify(errors)}`);
    const errorsBeforeDelete = errors.length;

    // DELETE ends the session, its stream and its subscriptions.
    terminating = true;
    await within(transport.terminateSession(), WAIT_MS, 'terminateSession()');
    await client.close();
    strictEqual(deletes.length, 1);
    strictEqual(deletes[0]!['mcp-session-id'], gets[0]!.headers['mcp-session-id']);
    strictEqual(transport.sessionId, undefined);
    await until(() => endpoint.stats.streams === 0, WAIT_MS, 'the stream to end after DELETE');
    deepStrictEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    strictEqual(gets.length, 2, 'no GET reached the server after the DELETE');
    ok(
      errors.slice(errorsBeforeDelete).every((e) => /AbortError|aborted/i.test(e)),
      `client errors after DELETE (only the held retry's abort is expected): ${JSON.stringify(errors.slice(errorsBeforeDelete))}`,
    );
  } finally {
    await client?.close().catch(() => {});
    if (server !== undefined) await within(server.close(), WAIT_MS, 'the server to close');
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('SDK 1.x client: a subscribe sent before its GET reaches the server waits for the stream (subscribeStreamWait) and succeeds', async () => {
  // The SDK fires the GET without awaiting it, so a subscribe right after connect() can overtake
  // it; here the GET is held back 150 ms to make that overtaking certain.
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-interop-legacy-')));
  const file = path.join(dir, 'watched.txt');
  await fs.writeFile(file, 'version 1\n');
  const uri = pathToFileURL(file).href;
  let server: ReferenceServer | undefined;
  let client: Client | undefined;
  try {
    server = await within(startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20 }), WAIT_MS, 'the server to start');
    const { endpoint } = server;
    let serverGets = 0;
    let serverGetsWhenSubscribeSent: number | undefined;
    server.server.on('request', (req: http.IncomingMessage) => {
      if (req.method === 'GET') serverGets++;
    });
    const delayedFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET') === 'GET') await new Promise((resolve) => setTimeout(resolve, 150));
      if (typeof init?.body === 'string' && init.body.includes('"resources/subscribe"')) serverGetsWhenSubscribeSent ??= serverGets;
      return fetch(input, init);
    };
    const updated: string[] = [];
    client = new Client({ name: 'mcp-rx-streams-interop-legacy', version: '0.0.0' });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      updated.push(notification.params.uri);
    });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: delayedFetch });
    await within(client.connect(transport), WAIT_MS, 'connect()');
    strictEqual(endpoint.stats.streams, 0, 'no GET stream yet when connect() resolves');

    deepStrictEqual(await within(client.subscribeResource({ uri }), WAIT_MS, 'resources/subscribe'), {});
    strictEqual(serverGetsWhenSubscribeSent, 0, 'the subscribe was sent before the GET reached the server');
    strictEqual(endpoint.stats.streams, 1);

    await fs.writeFile(file, 'version 2\n');
    await until(() => updated.length >= 1, WAIT_MS, `${RESOURCE_UPDATED} for ${uri}`);
    deepStrictEqual([...new Set(updated)], [uri]);
  } finally {
    await client?.close().catch(() => {});
    if (server !== undefined) await within(server.close(), WAIT_MS, 'the server to close');
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test.run();
