// A host that stops reading the server's stdout (issue 23): a real child process serving stdio, one
// listen on 1000 URIs, 100 000 changes published while the host reads nothing. The server's memory
// stays bounded (its queue: maxStreamQueueBytes, 1 MiB, plus stdout's buffer up to the channel's
// 64 KiB mark, plus what the kernel's pipe holds), no answer is lost, and the stream goes on.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import { stdioChannel } from '../adapters/channel/stdio.js';
import { Peer, until } from './helpers/channel.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/servers/stdio-publisher.mjs', import.meta.url));
const MIB = 1_048_576;
/** What the stall may add to the server's RSS: the bound this spec holds the server to. */
const RSS_BOUND = 48 * MIB;

/** The child's resident memory, read from /proc (no message needed: its stdout is not being read). */
function rssOf(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

test('a host that stops reading stdout while 100 000 changes are published: bounded RSS, every answer delivered, the stream resumes', async () => {
  const child = spawn(process.execPath, ['--expose-gc', FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
  const peer = new Peer(stdioChannel({ input: child.stdout!, output: child.stdin! }));
  try {
    const prefix = `file:///stall/${'p'.repeat(64)}/doc-`;
    const uris = Array.from({ length: 1000 }, (_, i) => `${prefix}${i}`);
    peer.send({ jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: uris } } });
    await until(() => peer.tagged('L').length === 1, 'the ack', 8_000);
    // Warm up the write path with the host reading, then measure the idle baseline.
    await peer.request('warm', 'publish', { prefix, count: 1000, rounds: 2 }, 8_000);
    await until(() => peer.tagged('L').length >= 2001, 'the warm-up notifications', 8_000);
    const before = (await peer.request('m0', 'memory', {}, 8_000)).result;
    const baseline = rssOf(child);

    child.stdout!.pause();
    const seen = peer.received.length;
    peer.send({ jsonrpc: '2.0', id: 'stalled', method: 'publish', params: { prefix, count: 1000, rounds: 100 } });
    peer.send({ jsonrpc: '2.0', id: 'while', method: 'ping' });
    // The server is busy publishing into a pipe nobody reads: wait until it has done all of it.
    const deadline = Date.now() + 30_000;
    let peak = 0;
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      peak = Math.max(peak, rssOf(child));
      if (peer.received.length === seen && (await cpuIdle(child))) break;
    }
    ok(peak - baseline < RSS_BOUND, `RSS grew by ${((peak - baseline) / MIB).toFixed(1)} MiB while stalled (bound ${RSS_BOUND / MIB} MiB)`);

    child.stdout!.resume();
    const done = await peer.next((m) => m.id === 'stalled', 'the answer to publish', 20_000);
    deepStrictEqual(done.result, { published: 100_000 });
    await peer.next((m) => m.id === 'while', 'the ping sent while stalled', 20_000);
    const after = (await peer.request('m1', 'memory', {}, 20_000)).result;
    // Identical pending notifications were coalesced: one queued per URI at most.
    ok(after.queue.coalesced - before.queue.coalesced > 50_000, JSON.stringify(after.queue));
    strictEqual(after.stats.streams, 1);
    // The stream goes on: a fresh change reaches the listen.
    const count = peer.tagged('L').length;
    await peer.request('live', 'publish', { prefix: 'file:///stall/live-', count: 1 });
    peer.send({ jsonrpc: '2.0', id: 'x', method: 'publish', params: { prefix, count: 1 } });
    await until(() => peer.tagged('L').slice(count).some((m) => m.params?.uri === `${prefix}0`), 'a live notification after the stall', 8_000);
  } finally {
    child.stdin!.end();
    await new Promise((resolve) => child.once('exit', resolve));
  }
});

/** True when the child used (almost) no CPU over 200 ms: it has finished publishing. */
async function cpuIdle(child: ChildProcess): Promise<boolean> {
  const ticks = () => {
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const start = ticks();
  await new Promise((resolve) => setTimeout(resolve, 200));
  return ticks() - start <= 1;
}

test.run();
