// Issue 24, item 3: what an Inspector user tries first on the reference server, through the official
// clients of both eras (`@modelcontextprotocol/client` 2.x on 2026-07-28, `@modelcontextprotocol/sdk`
// 1.x in a legacy session): the resource templates it advertises, and calling the tools and getting
// the prompt it lists (the demo data's `tools.json` and `prompts.json`).
import { strict as assert } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { test } from 'uvu';
import { startReferenceServer, type ReferenceServer } from '../adapters/reference/server.js';
import { within } from './helpers/wait.js';

const WAIT_MS = 4_000;

/** What both clients are asked the same questions through. */
interface AnyClient {
  listResourceTemplates(): Promise<{ resourceTemplates: unknown[] }>;
  listTools(): Promise<{ tools: { name: string }[] }>;
  listPrompts(): Promise<{ prompts: { name: string }[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  getPrompt(params: { name: string; arguments?: Record<string, string> }): Promise<unknown>;
}

interface Fixture {
  readonly server: ReferenceServer;
  /** The served directory (real path, demo data). */
  readonly dir: string;
  readonly client: AnyClient;
}

type Era = 'modern' | 'legacy';

/** Serves fresh demo data with the reference server, connects the official client of `era`, runs `fn`, closes everything. */
async function withClient(era: Era, fn: (fixture: Fixture) => Promise<void>): Promise<void> {
  const parent = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-ref-clients-')));
  const dir = path.join(parent, 'data');
  let server: ReferenceServer | undefined;
  let close: (() => Promise<void>) | undefined;
  try {
    server = await within(startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20 }), WAIT_MS, 'the server to start');
    const url = new URL(server.url);
    if (era === 'modern') {
      const client = new ModernClient({ name: 'reference-clients', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      close = () => client.close();
      await within(client.connect(new ModernTransport(url)), WAIT_MS, 'connect()');
      await fn({ server, dir: await fs.realpath(dir), client: client as unknown as AnyClient });
    } else {
      const client = new LegacyClient({ name: 'reference-clients', version: '0.0.0' });
      close = () => client.close();
      await within(client.connect(new LegacyTransport(url)), WAIT_MS, 'connect()');
      await fn({ server, dir: await fs.realpath(dir), client: client as unknown as AnyClient });
    }
  } finally {
    await close?.().catch(() => {});
    if (server !== undefined) await within(server.close(), WAIT_MS, 'the server to close');
    await fs.rm(parent, { recursive: true, force: true });
  }
}

for (const era of ['modern', 'legacy'] as const) {
  test(`${era}: listResourceTemplates() gives the served directory's file template`, async () => {
    await withClient(era, async ({ client, dir }) => {
      const { resourceTemplates } = await within(client.listResourceTemplates(), WAIT_MS, 'resources/templates/list');
      assert.deepEqual(resourceTemplates, [
        {
          uriTemplate: `${pathToFileURL(dir).href}/{+path}`,
          name: 'file',
          title: 'File',
          description: 'A file of the served directory, by its path under it (a folder: the path with a trailing /)',
        },
      ]);
    });
  });
}

test.run();
