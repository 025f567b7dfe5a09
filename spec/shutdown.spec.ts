// Process-level shutdown (issue 7): the real CLI (`dist/adapters/cli.js serve`, built by
// `npm test` before the specs) in a child process holds 1000 open listen streams; SIGTERM must
// give every one of them its closing frames (notifications/cancelled with reason `shutdown`, then
// the listen result — the default closeNotice) and the process must exit 0 within 5 s.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import { within } from './helpers/wait.js';

const CLI = fileURLToPath(new URL('../dist/adapters/cli.js', import.meta.url));
const STREAMS = 1000;
const SUB = 'io.modelcontextprotocol/subscriptionId';

/** The closing frames of listen `id` on shutdown, byte for byte (DESIGN M5, M7). */
const closingBytes = (id: number) =>
  `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id},"reason":"shutdown","_meta":{"${SUB}":${id}}}}\n\n` +
  `event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete","_meta":{"${SUB}":${id}}}}\n\n`;

/** One listen stream read as text; `ended` when the server finished the response. */
function openStream(agent: http.Agent, url: string, id: number) {
  const state = { text: '', ended: false, acked: false, error: undefined as Error | undefined };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
  const ready = new Promise<void>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`listen ${id}: HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        state.text += chunk;
        if (!state.acked && state.text.includes('\n\n')) {
          state.acked = true;
          resolve();
        }
      });
      res.on('end', () => (state.ended = true));
      res.on('error', (error) => (state.error = error));
    });
    req.on('error', (error) => {
      state.error = error;
      reject(error);
    });
    req.end(body);
  });
  return { state, ready };
}

test(`SIGTERM with ${STREAMS} open listen streams: each gets its closing frames, the process exits 0 within 5 s`, async () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-shutdown-'));
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--port', '0', '--dir', path.join(root, 'data'), '--demo', '--max-streams', String(STREAMS), '--max-listens-per-principal', String(STREAMS)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  // Every stream on its own connection, opened a few hundred at a time.
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  try {
    const url = await within(
      new Promise<string>((resolve, reject) => {
        child.stdout.on('data', () => {
          const match = /listening on (\S+)/.exec(stdout);
          if (match) resolve(match[1]!);
        });
        child.on('exit', () => reject(new Error(`the CLI exited before listening: ${stderr}`)));
      }),
      5000,
      'the CLI to listen',
    );
    const streams = Array.from({ length: STREAMS }, (_, i) => openStream(agent, url, i + 1));
    await within(Promise.all(streams.map((s) => s.ready)), 10_000, `${STREAMS} acknowledgments`);

    const signalled = Date.now();
    child.kill('SIGTERM');
    const { code, signal } = await within(exited, 5000, 'the process to exit after SIGTERM');
    const took = Date.now() - signalled;
    assert.equal(signal, null, stderr);
    assert.equal(code, 0, stderr);
    assert.ok(took < 5000, `exited ${took} ms after SIGTERM`);

    // The client side may still be reading the last bytes.
    await within(
      (async () => {
        while (streams.some((s) => !s.state.ended && s.state.error === undefined)) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      2000,
      'every response to end',
    );
    const missing = streams.filter((s, i) => s.state.error !== undefined || !s.state.ended || !s.state.text.endsWith(closingBytes(i + 1)));
    assert.equal(missing.length, 0, `${missing.length} streams without their closing frames, e.g.:\n${JSON.stringify(missing[0]?.state)}`);
    for (const [i, s] of streams.entries()) {
      // The acknowledgment, maybe keep-alives, then exactly the closing frames.
      assert.ok(s.state.text.startsWith('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"'), `stream ${i + 1}`);
      assert.equal(s.state.text.split('notifications/cancelled').length, 2, `stream ${i + 1} got one cancelled`);
    }
  } finally {
    agent.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  }
});

test.run();
