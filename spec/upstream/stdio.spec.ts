// Upstreams launched as child processes and spoken to over stdio (issue 34): the reference server
// (both eras on its pipe) and the official Python SDK (`mcp`, a 2025 session), behind the gateway,
// the official clients of both eras in front; a process killed mid-stream is started again by policy.
import { deepStrictEqual, notStrictEqual, ok, strictEqual } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { listen } from '../../adapters/client.js';
import { upstreamUri } from '../../adapters/upstream/index.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { acknowledged, legacyClient, modernClient, sleep, startGateway, until, uriOf } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

/** Launching a process (tsx compiling, Python importing `mcp`) takes seconds on a loaded machine. */
const START_MS = 30_000;
const FAST = { initialDelay: 50, maxDelay: 500, jitter: 0 };
const FIXTURES = fileURLToPath(new URL('../fixtures/servers/', import.meta.url));

async function folder(files: Readonly<Record<string, string>>): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-gateway-stdio-')));
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(dir, name), text);
  return dir;
}

/** The reference server over stdio, launched by the gateway: its command, and where it writes its pid. */
function referenceCommand(dir: string): { command: string[]; pidFile: string } {
  const pidFile = path.join(dir, '..', `${path.basename(dir)}.pid`);
  return { command: [process.execPath, '--import', 'tsx', path.join(FIXTURES, 'reference-stdio.ts'), dir, pidFile], pidFile };
}

const readPid = (file: string) => fs.readFile(file, 'utf8').then(Number, () => undefined);

test('the reference server over stdio (era auto: 2026-07-28 on its pipe): a listen and a legacy session through the gateway share its one process; killed mid-stream, it is started again and its subscribers told', async () => {
  const dir = await folder({ 'a.txt': 'a' });
  const { command, pidFile } = referenceCommand(dir);
  const front = await startGateway({ ackTimeout: START_MS, upstreams: [{ name: 'ref', command: { command, stderr: 'ignore' }, reconnect: FAST }] });
  const a = upstreamUri('ref', pathToFileURL(path.join(dir, 'a.txt')).href);
  const messages: JsonRpcMessage[] = [];
  const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [a], resourcesListChanged: true } }).subscribe((message) => messages.push(message));
  const legacy = await legacyClient(front.url);
  try {
    await until(() => messages.length === 1, 'the acknowledgment', START_MS);
    deepStrictEqual(acknowledged(messages[0]), { resourcesListChanged: true, resourceSubscriptions: [a] });
    strictEqual(front.gateway.stats[0]!.era, 'modern');
    await until(() => front.endpoint.stats.streams === 2, 'the legacy GET stream');
    deepStrictEqual(await within(legacy.client.subscribeResource({ uri: a }), START_MS, 'resources/subscribe'), {});
    await fs.writeFile(path.join(dir, 'a.txt'), 'a2');
    await until(() => messages.some((message) => uriOf(message) === a) && legacy.updated.length === 1, 'the update in both eras', START_MS);
    deepStrictEqual([messages.filter((message) => uriOf(message) === a).length, legacy.updated], [1, [a]]);
    const first = await readPid(pidFile);
    ok(first !== undefined, 'one process');

    process.kill(first!, 'SIGKILL');
    await until(() => messages.slice(2).some((message) => (message as { method?: string }).method === 'notifications/resources/list_changed'), 'the failure told');
    await until(() => front.gateway.stats[0]!.state === 'open', 'a new process serving', START_MS);
    const second = await readPid(pidFile);
    notStrictEqual(second, first, 'another process');
    // The rule: one update for the URI after the gap, in each era.
    await until(() => messages.filter((message) => uriOf(message) === a).length === 2 && legacy.updated.length === 2, 'the update after the gap', START_MS);
    await fs.writeFile(path.join(dir, 'a.txt'), 'a3');
    await until(() => messages.filter((message) => uriOf(message) === a).length === 3 && legacy.updated.length === 3, 'the next update', START_MS);
    await sleep(100);
    strictEqual(legacy.updated.length, 3);
  } finally {
    subscription.unsubscribe();
    await legacy.client.close();
    await front.close();
  }
  // The last holder gone (the gateway closed), the process is stopped.
  const pid = await readPid(pidFile);
  await within(until(() => !alive(pid!), 'the process to exit'), 5_000, 'the process to exit');
});

test('the reference server over stdio spoken to as a 2025 session (era legacy): a 2026-07-28 client listens through the gateway', async () => {
  const dir = await folder({ 'b.txt': 'b' });
  const { command } = referenceCommand(dir);
  const front = await startGateway({ ackTimeout: START_MS, upstreams: [{ name: 'ref', command: { command, stderr: 'ignore' }, era: 'legacy', reconnect: FAST }] });
  const b = upstreamUri('ref', pathToFileURL(path.join(dir, 'b.txt')).href);
  const { client, updated } = await modernClient(front.url);
  try {
    const subscription = await within(client.listen({ resourceSubscriptions: [b, upstreamUri('ref', 'file:///nowhere')] }), START_MS, 'listen()');
    deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [b] });
    await fs.writeFile(path.join(dir, 'b.txt'), 'b2');
    await until(() => updated.length === 1, 'the update');
    deepStrictEqual(updated, [b]);
  } finally {
    await client.close();
    await front.close();
  }
});

/** True while process `pid` runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test.run();
