// sdkStdio (issue 23, item 4): this library in front of an official SDK 2.x server on one
// stdin/stdout pair, launched as a real child process by the official 2.x client.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { test } from 'uvu';
import { until } from '../helpers/channel.js';
import { within } from '../helpers/wait.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/servers/sdk-stdio.mjs', import.meta.url));
const WAIT_MS = 8_000;

test('official 2.x client → sdkStdio: the SDK answers discover and tools, the endpoint serves the listens, a tool telling the hub reaches them, a cancel ends one', async () => {
  const stderr: string[] = [];
  const transport = new StdioClientTransport({ command: process.execPath, args: [FIXTURE], stderr: 'pipe' });
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const client = new Client({ name: 'sdk-stdio-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const errors: unknown[] = [];
  client.onerror = (error) => errors.push(error);
  let toolsChanged = 0;
  const updated: string[] = [];
  client.setNotificationHandler('notifications/tools/list_changed', () => void toolsChanged++);
  client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
  try {
    await within(client.connect(transport, { timeout: WAIT_MS }), WAIT_MS, 'connect()');
    // server/discover came from the SDK's McpServer.
    deepStrictEqual(client.getServerVersion(), { name: 'notes', version: '3.1.0' });
    const tools = await within(client.listen({ toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS, 'listen tools');
    const memo = await within(client.listen({ resourceSubscriptions: ['memo://today'] }, { timeout: WAIT_MS }), WAIT_MS, 'listen memo');
    deepStrictEqual(tools.honoredFilter, { toolsListChanged: true });
    deepStrictEqual(memo.honoredFilter, { resourceSubscriptions: ['memo://today'] });
    const result = await client.callTool({ name: 'add-tool', arguments: {} });
    deepStrictEqual(result.content, [{ type: 'text', text: 'added extra-1' }]);
    await until(() => toolsChanged === 1, 'tools/list_changed on the listen', WAIT_MS);
    // Tools come from the SDK server (serveStdio pins one instance per connection).
    deepStrictEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), ['add-tool', 'touch']);
    await client.callTool({ name: 'touch', arguments: {} });
    await until(() => updated.length === 1, 'resources/updated', WAIT_MS);
    await memo.close();
    strictEqual(await memo.closed, 'local');
    await client.callTool({ name: 'touch', arguments: {} });
    await client.callTool({ name: 'add-tool', arguments: {} });
    await until(() => toolsChanged === 2, 'the second tools/list_changed', WAIT_MS);
    deepStrictEqual(updated, ['memo://today'], 'the cancelled listen hears nothing more');
    await tools.close();
    deepStrictEqual(errors.map(String), []);
  } finally {
    await client.close();
  }
  await until(() => stderr.join('').includes('closed:'), 'the fixture to report', WAIT_MS);
  ok(stderr.join('').includes('"slots":0'), stderr.join(''));
});

test.run();
