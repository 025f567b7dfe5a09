// Interop over stdio (issue 23): the official clients launch `mcp-rx-streams serve --stdio` as a
// real child process and speak newline-delimited JSON-RPC on its stdin/stdout, as a host does:
// @modelcontextprotocol/client 2.x (StdioClientTransport) for listens, @modelcontextprotocol/sdk 1.x
// for the legacy era, and the official Python `mcp` package for a listen.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, type McpSubscription } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'uvu';
import { until } from './helpers/channel.js';
import { within } from './helpers/wait.js';

const CLI = fileURLToPath(new URL('../dist/adapters/cli.js', import.meta.url));
const WAIT_MS = 8_000;
const SUB = 'io.modelcontextprotocol/subscriptionId';

async function tempDir(): Promise<{ dir: string; uri: (name: string) => string; write: (name: string, text: string) => Promise<void>; remove: () => Promise<void> }> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-stdio-')));
  await fs.writeFile(path.join(dir, 'a.txt'), 'a1\n');
  await fs.writeFile(path.join(dir, 'b.txt'), 'b1\n');
  return {
    dir,
    uri: (name) => pathToFileURL(path.join(dir, name)).href,
    write: (name, text) => fs.writeFile(path.join(dir, name), text),
    remove: () => fs.rm(dir, { recursive: true, force: true }),
  };
}

test('official 2.x client over a real child process: discover, two concurrent listens, a change reaching only the right one, a client cancel, a server-side lifetime close seen as that subscription closing', async () => {
  const files = await tempDir();
  const stderr: string[] = [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve', '--stdio', '--dir', files.dir, '--close-notice', 'result-only', '--max-stream-lifetime', '2500'],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const client = new Client({ name: 'stdio-interop', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const errors: unknown[] = [];
  client.onerror = (error) => errors.push(error);
  const updated: { uri: string; subscription: unknown }[] = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push({ uri: n.params.uri, subscription: (n.params._meta as Record<string, unknown> | undefined)?.[SUB] }));
  const subscriptions: McpSubscription[] = [];
  try {
    await within(client.connect(transport, { timeout: WAIT_MS }), WAIT_MS, 'connect() over stdio');
    strictEqual(client.getNegotiatedProtocolVersion(), '2026-07-28');
    strictEqual(client.getServerVersion()?.name, 'mcp-rx-streams-reference');
    const a = await within(client.listen({ resourceSubscriptions: [files.uri('a.txt')] }, { timeout: WAIT_MS }), WAIT_MS, 'listen a');
    const b = await within(client.listen({ resourceSubscriptions: [files.uri('b.txt')] }, { timeout: WAIT_MS }), WAIT_MS, 'listen b');
    subscriptions.push(a, b);
    deepStrictEqual(a.honoredFilter, { resourceSubscriptions: [files.uri('a.txt')] });
    await files.write('b.txt', 'b2\n');
    await until(() => updated.length >= 1, 'the update of b.txt', WAIT_MS);
    deepStrictEqual(updated, [{ uri: files.uri('b.txt'), subscription: 'listen:1' }]);
    // The client cancels a: its close is local, b keeps receiving.
    await a.close();
    strictEqual(await a.closed, 'local');
    await files.write('a.txt', 'a2\n');
    await files.write('b.txt', 'b3\n');
    await until(() => updated.length >= 2, 'the second update of b.txt', WAIT_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    deepStrictEqual(updated.map((u) => u.uri), [files.uri('b.txt'), files.uri('b.txt')], 'nothing for the cancelled listen');
    // The lifetime (2.5 s) closes b from the server side: the client sees that subscription close, gracefully.
    strictEqual(await within(b.closed, WAIT_MS, 'b closed by its lifetime'), 'graceful');
    // The connection is not lost: requests go on, and a new listen opens.
    ok((await client.listResources()).resources.some((resource) => resource.uri === files.uri('a.txt')));
    const c = await within(client.listen({ resourcesListChanged: true }, { timeout: WAIT_MS }), WAIT_MS, 'listen c');
    subscriptions.push(c);
    deepStrictEqual(c.honoredFilter, { resourcesListChanged: true });
    deepStrictEqual(errors.map(String), []);
  } finally {
    for (const subscription of subscriptions) await subscription.close().catch(() => {});
    await client.close();
    await files.remove();
  }
  ok(stderr.join('').includes('on stdio'), stderr.join(''));
});

test('official 1.x client (@modelcontextprotocol/sdk) over a real child process: initialize, resources/subscribe, updates on the pipe, unsubscribe', async () => {
  const files = await tempDir();
  const transport = new LegacyStdioTransport({ command: process.execPath, args: [CLI, 'serve', '--stdio', '--dir', files.dir], stderr: 'ignore' });
  const client = new LegacyClient({ name: 'stdio-legacy', version: '0.0.0' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  try {
    await within(client.connect(transport), WAIT_MS, 'connect()');
    strictEqual(client.getServerVersion()?.name, 'mcp-rx-streams-reference');
    deepStrictEqual(client.getServerCapabilities()?.resources, { subscribe: true, listChanged: true });
    deepStrictEqual(await client.subscribeResource({ uri: files.uri('a.txt') }), {});
    await files.write('b.txt', 'b2\n');
    await files.write('a.txt', 'a2\n');
    await until(() => updated.length >= 1, 'the update of a.txt', WAIT_MS);
    deepStrictEqual([...new Set(updated)], [files.uri('a.txt')]);
    deepStrictEqual(await client.unsubscribeResource({ uri: files.uri('a.txt') }), {});
    const before = updated.length;
    await files.write('a.txt', 'a3\n');
    await new Promise((resolve) => setTimeout(resolve, 400));
    strictEqual(updated.length, before, 'nothing after the unsubscribe');
    // Legacy results are the 2025 shapes (no resultType): the reference server's methods see the channel's session.
    const read = await client.readResource({ uri: files.uri('a.txt') });
    strictEqual((read.contents[0] as { text?: string }).text, 'a3\n');
  } finally {
    await client.close();
    await files.remove();
  }
});

test('the host closing stdin ends the server with exit code 0', async () => {
  const files = await tempDir();
  try {
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, [CLI, 'serve', '--stdio', '--dir', files.dir], (error, out) => resolve({ code: error === null ? 0 : (error.code as number), stdout: out }));
      child.stdin!.write('{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}\n');
      setTimeout(() => child.stdin!.end(), 300);
    });
    strictEqual(code, 0);
    strictEqual(stdout, '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}\n');
  } finally {
    await files.remove();
  }
});

test('the official Python mcp 2.x stdio client: a listen acknowledged, a change delivered as its event', async () => {
  const files = await tempDir();
  const script = `
import anyio, sys, pathlib
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.session import ClientSession
from mcp.client.subscriptions import listen

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=[sys.argv[2], "serve", "--stdio", "--dir", sys.argv[3]])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.discover()
            print("version", session.protocol_version, flush=True)
            async with listen(session, resource_subscriptions=[sys.argv[4]]) as sub:
                print("honored", list(sub.honored.resource_subscriptions or []), flush=True)
                pathlib.Path(sys.argv[5]).write_text("a2\\n")
                with anyio.fail_after(6):
                    event = await sub.__anext__()
                print("event", type(event).__name__, getattr(event, "uri", None), flush=True)

anyio.run(main)
`;
  const file = path.join(files.dir, 'client.py');
  await fs.writeFile(file, script);
  try {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile('python3', [file, process.execPath, CLI, files.dir, files.uri('a.txt'), path.join(files.dir, 'a.txt')], { timeout: 20_000 }, (error, out, err) =>
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout: out, stderr: err }),
      ),
    );
    strictEqual(code, 0, `python3 failed:\n${stdout}\n${stderr}`);
    deepStrictEqual(stdout.trim().split('\n'), ['version 2026-07-28', `honored ['${files.uri('a.txt')}']`, `event ResourceUpdated ${files.uri('a.txt')}`]);
  } finally {
    await files.remove();
  }
});

test.run();
