// `mcp-rx-streams serve --upstream NAME=URL` (issue 34): the reference server serving the union of its
// own folder and other MCP servers (an HTTP upstream, a stdio upstream), through the official client
// and a raw read; the flag and the gateway's own flags checked and shown in --help.
import { deepStrictEqual, match, ok, strictEqual } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { upstreamUri } from '../../adapters/upstream/index.js';
import { cli, serving } from '../helpers/cli.js';
import { modernClient, referenceUpstream, until } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

/** A stdio upstream's process starts with tsx compiling it: seconds on a loaded machine. */
const START_MS = 30_000;
const FIXTURE = fileURLToPath(new URL('../fixtures/servers/reference-stdio.ts', import.meta.url));

test('serve --upstream: the folder and two upstreams (HTTP, stdio) on one endpoint: one listen acknowledged with the union, each heard, reads and the resource list of the union', async () => {
  const http = await referenceUpstream({ 'a.txt': 'a' });
  const stdioDir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-serve-upstream-')));
  await fs.writeFile(path.join(stdioDir, 'b.txt'), 'b');
  const a = upstreamUri('notes', http.uri('a.txt'));
  const b = upstreamUri('local', pathToFileURL(path.join(stdioDir, 'b.txt')).href);
  // The server's own folder, with its file there before it starts.
  const ownDir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-serve-own-')));
  await fs.writeFile(path.join(ownDir, 'notes.md'), '# notes');
  const own = pathToFileURL(path.join(ownDir, 'notes.md')).href;
  try {
    await serving(['--upstream', `notes=${http.server.url}`, '--upstream', `local=stdio:${process.execPath} --import tsx ${FIXTURE} ${stdioDir}`, '--ack-timeout', String(START_MS)], async ({ url }) => {
      const { client, updated } = await modernClient(new URL(url));
      try {
        const subscription = await within(client.listen({ resourceSubscriptions: [own, a, b] }, { timeout: START_MS }), START_MS + 1_000, 'listen()');
        deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [own, a, b] });
        http.server.hub.notifyResourceUpdated(http.uri('a.txt'));
        await until(() => updated.includes(a), 'the HTTP upstream\'s update');
        await fs.writeFile(path.join(stdioDir, 'b.txt'), 'b2');
        await until(() => updated.includes(b), 'the stdio upstream\'s update', START_MS);
        await fs.writeFile(path.join(ownDir, 'notes.md'), '# notes, again');
        await until(() => updated.includes(own), 'the folder\'s own update');
        const read = await client.readResource({ uri: b });
        deepStrictEqual(read.contents.map((entry) => [entry.uri, 'text' in entry ? entry.text : undefined]), [[b, 'b2']]);
        const listed = (await client.listResources()).resources.map((resource) => resource.uri);
        for (const uri of [own, a, b]) ok(listed.includes(uri), `${uri} in ${JSON.stringify(listed)}`);
      } finally {
        await client.close();
      }
    }, ownDir);
  } finally {
    await http.server.close();
    await fs.rm(ownDir, { recursive: true, force: true });
  }
});

test('serve --upstream with a value that is not NAME=URL: exit code 2 and a line that says what to write; --help shows the gateway\'s flags', async () => {
  const run = cli(['serve', '--upstream', 'notes', '--dir', os.tmpdir()]);
  strictEqual(await run.exited, 2);
  match(run.err(), /^mcp-rx-streams: --upstream must be NAME=URL: a name \(lower-case letters, digits, '-'\), then an http\(s\) URL or stdio:COMMAND, e\.g\. notes=http:\/\/127\.0\.0\.1:4000\/mcp, got "notes"\n$/);
  const help = cli(['serve', '--help']);
  strictEqual(await help.exited, 0);
  for (const flag of [/--upstream NAME=URL +serve another MCP server's resources as upstream:\/\/NAME\//, /--ack-timeout MS +how long/, /--fail-mode MODE +a URI its upstream/, /--request-timeout MS +how long/]) match(help.out(), flag);
});

test.run();
