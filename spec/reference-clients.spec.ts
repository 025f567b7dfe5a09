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
import { listen } from '../adapters/client.js';
import { startReferenceServer, type ReferenceServer } from '../adapters/reference/server.js';
import type { JsonRpcMessage } from '../lib/jsonrpc.js';
import { post } from './helpers/http.js';
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

/** The JSON-RPC code a client call was refused with (1.x `McpError` and 2.x `ProtocolError` both carry `code`). */
async function refusal(call: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  const error = await within(call.then(() => undefined, (e: unknown) => e), WAIT_MS, 'the refusal');
  assert.ok(error instanceof Error, `expected a refusal, got a result`);
  return { code: (error as { code?: unknown }).code, message: error.message };
}

for (const era of ['modern', 'legacy'] as const) {
  test(`${era}: callTool runs the listed tools: echo returns its text, add the sum; bad arguments are a tool error, an unknown tool -32602`, async () => {
    await withClient(era, async ({ client }) => {
      const { tools } = await within(client.listTools(), WAIT_MS, 'tools/list');
      assert.deepEqual(tools.map((tool) => tool.name), ['echo', 'add']);
      const echoed = (await within(client.callTool({ name: 'echo', arguments: { text: 'hello, Inspector' } }), WAIT_MS, 'echo')) as Record<string, unknown>;
      assert.deepEqual(echoed.content, [{ type: 'text', text: 'hello, Inspector' }]);
      assert.notEqual(echoed.isError, true);
      const sum = (await within(client.callTool({ name: 'add', arguments: { a: 2, b: 40.5 } }), WAIT_MS, 'add')) as Record<string, unknown>;
      assert.deepEqual(sum.content, [{ type: 'text', text: '42.5' }]);
      // MCP 2025-11-25 (tools): input validation errors are tool execution errors, for the model to correct.
      const wrong = (await within(client.callTool({ name: 'add', arguments: { a: '2', b: 40 } }), WAIT_MS, 'add with a string')) as Record<string, unknown>;
      assert.equal(wrong.isError, true);
      assert.deepEqual(wrong.content, [{ type: 'text', text: 'add needs arguments a and b, both numbers; got a: "2"' }]);
      const missing = (await within(client.callTool({ name: 'echo', arguments: {} }), WAIT_MS, 'echo without text')) as Record<string, unknown>;
      assert.equal(missing.isError, true);
      assert.deepEqual(missing.content, [{ type: 'text', text: 'echo needs the argument text, a string; got none' }]);
      const unknown = await refusal(client.callTool({ name: 'shout', arguments: {} }));
      assert.equal(unknown.code, -32602);
      assert.match(unknown.message, /unknown tool: shout; tools\/list names the tools of this server/);
    });
  });

  test(`${era}: getPrompt serves summarize with the resource embedded; a missing argument, an unknown resource or prompt are -32602`, async () => {
    await withClient(era, async ({ client, dir }) => {
      const { prompts } = await within(client.listPrompts(), WAIT_MS, 'prompts/list');
      assert.deepEqual(prompts.map((prompt) => prompt.name), ['summarize']);
      const uri = pathToFileURL(path.join(dir, 'notes', 'todo.txt')).href;
      const got = (await within(client.getPrompt({ name: 'summarize', arguments: { uri } }), WAIT_MS, 'prompts/get')) as Record<string, unknown>;
      assert.equal(got.description, 'Summarize a resource of this server in three sentences.');
      assert.deepEqual(got.messages, [
        {
          role: 'user',
          content: { type: 'resource', resource: { uri, mimeType: 'text/plain', text: '- subscribe to this file\n- edit it and watch the notification\n' } },
        },
        { role: 'user', content: { type: 'text', text: `Summarize the resource ${uri} above in three sentences.` } },
      ]);
      const noUri = await refusal(client.getPrompt({ name: 'summarize', arguments: {} }));
      assert.equal(noUri.code, -32602);
      assert.match(noUri.message, /prompt summarize needs the argument uri/);
      const absent = pathToFileURL(path.join(dir, 'nothing.txt')).href;
      const notFound = await refusal(client.getPrompt({ name: 'summarize', arguments: { uri: absent } }));
      assert.equal(notFound.code, -32602);
      assert.match(notFound.message, new RegExp(`resource not found: ${absent}`));
      // A private file is not found either, for a caller without the scope.
      const secret = pathToFileURL(path.join(dir, 'private', 'secret.txt')).href;
      assert.equal((await refusal(client.getPrompt({ name: 'summarize', arguments: { uri: secret } }))).code, -32602);
      const unknown = await refusal(client.getPrompt({ name: 'nope' }));
      assert.equal(unknown.code, -32602);
      assert.match(unknown.message, /unknown prompt: nope; prompts\/list names the prompts of this server/);
    });
  });
}

/** A raw 2026-07-28 request to the reference server; the parsed response. */
async function rpc(url: string, id: number, method: string, params: unknown): Promise<any> {
  return JSON.parse((await post(url, JSON.stringify({ jsonrpc: '2.0', id, method, params }))).body);
}

test('what tools.json and prompts.json list is served: a listed tool without an implementation is a tool error, a listed prompt answers its description; an unlisted one is unknown', async () => {
  await withClient('modern', async ({ server, dir }) => {
    await fs.writeFile(path.join(dir, 'tools.json'), JSON.stringify([{ name: 'shout', description: 'Shouts.', inputSchema: { type: 'object' } }]));
    await fs.writeFile(
      path.join(dir, 'prompts.json'),
      JSON.stringify([{ name: 'greet', description: 'Greet someone warmly.', arguments: [{ name: 'who', required: true }, { name: 'tone' }] }]),
    );
    assert.deepEqual(await rpc(server.url, 1, 'tools/call', { name: 'shout', arguments: {} }), {
      jsonrpc: '2.0',
      id: 1,
      result: { resultType: 'complete', content: [{ type: 'text', text: 'tool shout is listed in tools.json, but the reference server implements only echo and add' }], isError: true },
    });
    // echo is no longer listed: no longer served.
    assert.deepEqual((await rpc(server.url, 2, 'tools/call', { name: 'echo', arguments: { text: 'x' } })).error, {
      code: -32602,
      message: 'unknown tool: echo; tools/list names the tools of this server',
    });
    assert.deepEqual(await rpc(server.url, 3, 'prompts/get', { name: 'greet', arguments: { who: 'Ada' } }), {
      jsonrpc: '2.0',
      id: 3,
      result: { resultType: 'complete', description: 'Greet someone warmly.', messages: [{ role: 'user', content: { type: 'text', text: 'Greet someone warmly.\n\nwho: Ada' } }] },
    });
    assert.deepEqual((await rpc(server.url, 4, 'prompts/get', { name: 'greet', arguments: { tone: 'dry' } })).error, {
      code: -32602,
      message: 'prompt greet needs the argument who',
    });
    assert.deepEqual((await rpc(server.url, 5, 'prompts/get', { name: 'greet', arguments: { who: 7 } })).error, {
      code: -32602,
      message: 'prompts/get params.arguments must be an object of strings',
    });
    assert.deepEqual((await rpc(server.url, 6, 'tools/call', { name: 'shout', arguments: 'loud' })).error, {
      code: -32602,
      message: 'tools/call params.arguments must be an object',
    });
    assert.deepEqual((await rpc(server.url, 7, 'tools/call', {})).error, { code: -32602, message: 'tools/call requires params.name, a string' });
  });
});

test('tools/list_changed and prompts/list_changed are sent only when what is listed changed (not for a rewrite of the same definitions)', async () => {
  await withClient('modern', async ({ server, dir }) => {
    const messages: JsonRpcMessage[] = [];
    const listening = listen({ url: server.url, notifications: { toolsListChanged: true, promptsListChanged: true } }).subscribe((m) => messages.push(m));
    const methods = () => messages.map((m) => ('method' in m ? m.method : 'result'));
    try {
      await until(() => messages.length === 1, 'the acknowledgment');
      const tools = JSON.parse(await fs.readFile(path.join(dir, 'tools.json'), 'utf8')) as unknown[];
      const prompts = await fs.readFile(path.join(dir, 'prompts.json'), 'utf8');
      // The same definitions, written again: compact instead of indented, and byte for byte.
      await fs.writeFile(path.join(dir, 'tools.json'), JSON.stringify(tools));
      await fs.writeFile(path.join(dir, 'prompts.json'), prompts);
      await sleep(300);
      // A real change: add is gone.
      await fs.writeFile(path.join(dir, 'tools.json'), JSON.stringify(tools.slice(0, 1)));
      await until(() => methods().includes('notifications/tools/list_changed'), 'tools/list_changed');
      await sleep(300);
      assert.deepEqual(methods(), ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed']);
      assert.deepEqual((await rpc(server.url, 1, 'tools/list', {})).result.tools.map((t: { name: string }) => t.name), ['echo']);
    } finally {
      listening.unsubscribe();
    }
  });
});

async function until(predicate: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test.run();
