// Issue "Hostile clients II", item 5: many sessions of one principal do not reconnect in a loop.
// Six official @modelcontextprotocol/sdk 1.x clients of one principal (six tabs of one user: all
// anonymous from one address, so one principal) against the reference server, each with its GET
// stream and a subscription to its own file. Before, a GET stream counted under
// maxListensPerPrincipal (4): each new one superseded the principal's oldest, whose client
// reconnected and superseded the next, 20 reconnects in 10 s for ever. Now a principal's GET
// streams are one per session: the six streams stay put for 10 s and every change reaches its
// client on its open stream.
import { deepStrictEqual, strictEqual } from 'node:assert';
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

const WAIT_MS = 5_000;
/** How long the clients hold their streams while their files change (the 10 s). */
const HOLD_MS = 10_000;
const CLIENTS = 6;

async function until(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test(`${CLIENTS} official 1.x clients of one principal hold their GET streams for ${HOLD_MS / 1000} s with no reconnect, each hearing every change of its file`, async () => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-principal-')));
  let server: ReferenceServer | undefined;
  const clients: Client[] = [];
  const files = Array.from({ length: CLIENTS }, (_, i) => path.join(dir, `tab-${i}.txt`));
  for (const file of files) await fs.writeFile(file, 'version 0\n');
  try {
    // The defaults that made the loop: maxListensPerPrincipal 4 < six sessions of one principal.
    server = await within(startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20, keepAliveInterval: 1000 }), WAIT_MS, 'the server to start');
    const { endpoint } = server;
    let gets = 0;
    server.server.on('request', (req: http.IncomingMessage) => {
      if (req.method === 'GET') gets++;
    });
    const heard: string[][] = [];
    const errors: string[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const file = files[i]!;
      const uris: string[] = [];
      heard.push(uris);
      const client = new Client({ name: `tab-${i}`, version: '0.0.0' });
      client.onerror = (error) => errors.push(`tab-${i}: ${String(error)}`);
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void uris.push(notification.params.uri));
      await within(client.connect(new StreamableHTTPClientTransport(new URL(server.url))), WAIT_MS, `tab ${i} to connect`);
      clients.push(client);
      await until(() => endpoint.stats.streams === i + 1, WAIT_MS, `the GET stream of tab ${i}`);
      deepStrictEqual(await within(client.subscribeResource({ uri: pathToFileURL(file).href }), WAIT_MS, 'resources/subscribe'), {});
    }
    strictEqual(gets, CLIENTS, 'one GET per client so far');
    strictEqual(endpoint.stats.sessions, CLIENTS);
    // Hold for 10 s, changing every file once a second: every change reaches its client.
    const rounds = HOLD_MS / 1000;
    for (let round = 1; round <= rounds; round++) {
      for (const file of files) await fs.writeFile(file, `version ${round}\n`);
      await until(() => heard.every((uris) => uris.length >= round), WAIT_MS, `round ${round} to reach every client`);
      await new Promise((resolve) => setTimeout(resolve, 1000 - 20));
    }
    strictEqual(gets, CLIENTS, `GET requests after ${HOLD_MS} ms: ${gets - CLIENTS} reconnects`);
    strictEqual(endpoint.stats.streams, CLIENTS, 'every GET stream is still open');
    deepStrictEqual(errors, [], 'no client saw its stream end');
    for (const [i, uris] of heard.entries()) deepStrictEqual(uris, Array(rounds).fill(pathToFileURL(files[i]!).href), `tab ${i} heard each change of its file once`);
  } finally {
    for (const client of clients) await client.close().catch(() => {});
    if (server !== undefined) await within(server.close(), WAIT_MS, 'the server to close');
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test.run();
