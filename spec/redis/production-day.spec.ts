// A production day, compressed (issue 31, "Done when"): a Sentinel-managed Redis (Debian's
// `redis-server --sentinel`: a primary, its replica, three Sentinels), two machines each `serve
// --workers 2 --redis redis+sentinel://… --trust-proxy loopback` over one folder (real child
// processes), a non-sticky round-robin proxy in front (spec/helpers/productionDay.ts), and behind it
// the official 1.x client (legacy session: GET stream, resources/subscribe), the official 2.x client
// (a listen, opened again whenever it ends) and a raw legacy client reading the event ids and
// reconnecting with Last-Event-ID. A file changes every 250 ms while, in turn: a worker is SIGKILLed
// (the one holding the most streams, then the one watching the folder unless that was it), the proxy
// cuts every stream, the Redis primary is SIGKILLed (the Sentinels promote the replica), and a
// machine (the one holding the most streams) is SIGTERMed and started again.
//
// Each phase ends with a pause in the writes, and every client must have heard the phase's last
// write: an update (for the 2.x client, an update or a new listen's acknowledgment) that arrived
// after the write, and a re-read after it that answers the write's content. The legacy ids the raw
// client and the 1.x client read are consecutive across every reconnect, or skip only where the
// re-read signal follows (docs/fleet.md, "Ids across a move"). Every machine exits 0 on SIGTERM.
// Prints the counts (writes, notifications, replayed frames, reconnects) and, per phase, the
// longest a write waited to be heard; PRODUCTION_DAY_LOGS=DIR keeps each machine's log there.
import { strict as assert } from 'node:assert';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { checkIds, contentOf, ListenClient, type ObservingClient, RawLegacyClient, RoundRobinProxy, Sdk1Client, ServeMachine, type Write, Writer } from '../helpers/productionDay.js';
import { sleep } from '../helpers/legacy.js';
import { startSentinelSet, type SentinelSet } from '../helpers/redis.js';

let set: SentinelSet | undefined;
let proxy: RoundRobinProxy | undefined;
let tmp: string | undefined;
const machines: ServeMachine[] = [];
const clients: ObservingClient[] = [];
let writer: Writer | undefined;

test.after(async () => {
  await writer?.stop();
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await Promise.all(machines.map((machine) => machine.kill()));
  await proxy?.close();
  await set?.close();
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

/** What a phase measured for one client. */
interface ClientFigures {
  /** Updates (and, for the listen client, acknowledgments) that arrived during the phase. */
  triggers: number;
  /** The longest time from a write of the phase to the trigger of the first re-read that saw it, in ms. */
  longestWaitMs: number;
  /** Writes of the phase with no update before the next write (each heard through a later one: coalesced). */
  coalesced: number;
}

test('a production day: worker SIGKILL, every stream cut, Redis failover, machine restart; every write heard by every client, legacy ids gapless or announced, every process exits 0', async () => {
  const began = Date.now();
  set = await startSentinelSet({ downAfter: 1000, failoverTimeout: 5000 });
  const sentinelsMs = Date.now() - began;
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-production-day-'));
  const dir = path.join(await realpath(tmp), 'data');
  await mkdir(dir);
  const file = path.join(dir, 'todo.txt');
  await writeFile(file, contentOf(0));
  const uri = pathToFileURL(file).href;

  const args = (name: string, port: number) => [
    '--workers', '2', '--port', String(port), '--dir', dir, '--redis', set!.url, '--node-id', name,
    '--trust-proxy', 'loopback', '--watch-lease-ttl', '3000', '--reconnect-delay', '200',
  ];
  const start = (name: string, port = 0) => {
    const machine = new ServeMachine(name, args(name, port));
    machines.push(machine);
    return machine;
  };
  const [one, two] = [start('one'), start('two')];
  const ports = (await Promise.all([one.ready(20_000), two.ready(20_000)])).map((url) => Number(new URL(url).port));
  const machinesMs = Date.now() - began - sentinelsMs;
  proxy = await RoundRobinProxy.start(ports.map((port) => ({ host: '127.0.0.1', port })));
  const live = () => machines.filter((machine) => machine.child.exitCode === null && machine.child.signalCode === null);
  const watcherMachine = async () => {
    for (let i = 0; i < 100; i++) {
      const found = live().find((machine) => machine.watcher() !== undefined);
      if (found !== undefined) return found;
      await sleep(50);
    }
    throw new Error('no worker of the fleet watches the folder');
  };
  await watcherMachine();

  const [sdk1, listen, raw] = await Promise.all([Sdk1Client.connect('sdk1', proxy.url, uri), ListenClient.connect('listen', proxy.url, uri), RawLegacyClient.connect('raw', proxy.url, uri)]);
  clients.push(sdk1, listen, raw);
  // Behind the round-robin proxy a subscribe and its GET land on different machines, in either order.
  assert.deepEqual(await sdk1.subscribe(), {}, 'the 1.x client subscribes');
  assert.deepEqual(await raw.subscribe(), {}, 'the raw client subscribes');
  writer = new Writer(file, 250);
  const setupMs = Date.now() - began;

  const figures: Record<string, Record<string, ClientFigures>> = {};
  const phase = async (name: string, fault: () => Promise<void>, writeMs: number, checkpointMs: number) => {
    const from = writer!.writes.length;
    const startedAt = Date.now();
    writer!.start();
    await fault();
    await sleep(writeMs);
    await writer!.stop();
    const last = writer!.last;
    // The pause: every client must hear the phase's last write.
    const deadline = Date.now() + checkpointMs;
    while (!clients.every((client) => client.heard(last) !== undefined)) {
      if (Date.now() > deadline) {
        const state = clients.map((client) => `${client.name}: last triggers ${client.triggers.slice(-3).map((at) => at - last.at).join(',')} ms after the write; last reads ${JSON.stringify(client.reads.slice(-3).map((read) => ({ after: read.triggeredAt - last.at, version: read.version })))}; errors ${client.errors.slice(-3).join(' | ')}`);
        throw new Error(`${name}: not every client heard write ${last.version} within ${checkpointMs} ms of the pause:\n${state.join('\n')}\n${machines.map((m) => `--- ${m.name}\n${m.err.slice(-3000)}`).join('\n')}`);
      }
      await sleep(20);
    }
    const writes = writer!.writes.slice(from);
    const endedAt = Date.now();
    figures[name] = Object.fromEntries(clients.map((client) => [client.name, measure(client, writes, startedAt, endedAt)]));
  };

  // 0. A quiet start.
  await phase('baseline', async () => undefined, 750, 5000);

  // 1. A worker is SIGKILLed right after a write: the one holding the most client streams (per
  //    the machines' `worker N: stream opened/closed` lines), then, unless that was it, the one
  //    that watches the folder.
  const killed: string[] = [];
  const killWorker = async (pick: () => Promise<{ machine: ServeMachine; id: number }>) => {
    const { machine, id } = await pick();
    const pid = machine.liveWorkers().get(id)!;
    const count = writer!.writes.length;
    while (writer!.writes.length === count) await sleep(2);
    process.kill(pid, 'SIGKILL');
    const watcher = machine.watcher() === id;
    killed.push(`${machine.name}: worker ${id} (pid ${pid}, ${machine.openStreams(id)} streams${watcher ? ', the watcher' : ''})`);
    return { machine, id, watcher };
  };
  let firstWatched = false;
  await phase(
    'worker SIGKILL (its streams)',
    async () => {
      const picked = await killWorker(async () => {
        const candidates = live().flatMap((machine) => [...machine.liveWorkers().keys()].map((id) => ({ machine, id, streams: machine.openStreams(id), watches: machine.watcher() === id })));
        candidates.sort((a, b) => b.streams - a.streams || Number(b.watches) - Number(a.watches));
        return candidates[0]!;
      });
      firstWatched = picked.watcher;
    },
    1000,
    8000,
  );
  if (!firstWatched) {
    await phase(
      'worker SIGKILL (the watcher)',
      async () => {
        await killWorker(async () => {
          const machine = await watcherMachine();
          return { machine, id: machine.watcher()! };
        });
      },
      1000,
      8000,
    );
  }

  // 2. The proxy cuts every stream (and every request in flight).
  let cut = 0;
  await phase(
    'proxy cuts every stream',
    async () => {
      await sleep(250);
      cut = proxy!.cutAll();
    },
    1000,
    8000,
  );
  assert.ok(cut >= 3, `the proxy cut the three clients' streams (cut ${cut})`);

  // 3. The Redis primary is SIGKILLed; the Sentinels promote the replica. The writes stop (the
  //    pause) while the failover may still be under way.
  const old = await set.primary();
  let failoverMs = 0;
  let failedOver: Promise<number> | undefined;
  await phase(
    'Redis primary SIGKILL (Sentinel failover)',
    async () => {
      await sleep(250);
      const killedAt = Date.now();
      await set!.kill(old);
      failedOver = set!.failedOver(old, 20_000).then((port) => {
        failoverMs = Date.now() - killedAt;
        return port;
      });
      failedOver.catch(() => undefined);
    },
    1500,
    15_000,
  );
  assert.equal(await failedOver, set.dataPorts[1], 'the replica is the new primary');

  // 4. The machine holding the most client streams (the watcher's, if they hold as many) is
  //    SIGTERMed (exits 0), its sessions handed to the other machine, and started again on its port.
  const restarts: { machine: string; downMs: number; streams: number; watcher: boolean }[] = [];
  const streamsOf = (machine: ServeMachine) => [...machine.liveWorkers().keys()].reduce((sum, id) => sum + machine.openStreams(id), 0);
  const watching = await watcherMachine();
  const [restarting] = live().sort((a, b) => streamsOf(b) - streamsOf(a) || Number(b === watching) - Number(a === watching));
  await phase(
    `machine ${restarting!.name} SIGTERM and restart`,
    async () => {
      await sleep(250);
      const machine = restarting!;
      const port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(machine.out)![1]);
      const streams = streamsOf(machine);
      const stoppedAt = Date.now();
      assert.equal(await machine.stop(), 0, `machine ${machine.name} exits 0 on SIGTERM:\n${machine.err}`);
      const again = start(machine.name, port);
      await again.ready(20_000);
      restarts.push({ machine: machine.name, downMs: Date.now() - stoppedAt, streams, watcher: machine === watching });
    },
    750,
    8000,
  );

  // 5. A quiet end.
  await phase('after', async () => undefined, 500, 5000);

  // Legacy ids: consecutive across every reconnect, or a skip the re-read signal follows.
  const rawIds = checkIds(raw.frames, uri);
  const sdkIds = checkIds(sdk1.frames, uri);
  const subscribeRefused = clients.flatMap((client) => client.errors.filter((error) => /open the GET SSE stream before subscribing/.test(error)));

  // Every process exits 0 on SIGTERM.
  await Promise.all(clients.map((client) => client.close()));
  await Promise.all(live().map((machine) => machine.stop()));
  // Every machine that ran today, the ones restarted included, in the order they started.
  const exits = await Promise.all(machines.map(async (machine) => [machine.name, await machine.exited] as const));

  const lease = machines.flatMap((machine) => machine.lines(/watch lease|watches the folder|exited \(|handed|unreachable|reachable again|resynced/).map((line) => `${machine.name}${machines.indexOf(machine) > 1 ? ' (restarted)' : ''}: ${line}`));
  if (process.env.PRODUCTION_DAY_LOGS !== undefined) {
    for (const [i, machine] of machines.entries()) await writeFile(path.join(process.env.PRODUCTION_DAY_LOGS, `${i}-${machine.name}.log`), machine.err);
  }
  const counts = {
    seconds: (Date.now() - began) / 1000,
    setupSeconds: { sentinels: sentinelsMs / 1000, machines: machinesMs / 1000, all: setupMs / 1000 },
    writes: writer.writes.length,
    notifications: Object.fromEntries(clients.map((client) => [client.name, client.updates.length])),
    listenAcks: listen.acks.length,
    reads: Object.fromEntries(clients.map((client) => [client.name, client.reads.length])),
    reconnects: Object.fromEntries(clients.map((client) => [client.name, client.reconnects])),
    legacyFrames: { raw: raw.frames.length, sdk1: sdk1.frames.length },
    replayedFrames: { raw: raw.frames.filter((frame) => frame.replayed).length, sdk1: sdk1.frames.filter((frame) => frame.replayed).length },
    rawIds: raw.frames.length === 0 ? [] : [raw.frames[0]!.id, raw.frames.at(-1)!.id],
    announcedGaps: { raw: rawIds.announcedGaps, sdk1: sdkIds.announcedGaps },
    killed,
    proxy: proxy.stats,
    failoverMs,
    restarts,
    listenEndings: listen.endings,
    exits,
  };
  console.log(`\n  production day: ${JSON.stringify(counts)}`);
  for (const [name, byClient] of Object.entries(figures)) console.log(`  ${name}: ${JSON.stringify(byClient)}`);
  console.log(`  lease and machine lines:\n    ${lease.join('\n    ')}`);

  assert.deepEqual(rawIds.problems, [], 'the raw client: ids consecutive, or a gap announced by the re-read signal');
  assert.deepEqual(sdkIds.problems, [], 'the 1.x client: ids consecutive, or a gap announced by the re-read signal');
  assert.deepEqual(subscribeRefused, [], 'no subscribe refused for want of a GET stream');
  assert.ok(raw.frames.length > 0 && sdk1.frames.length > 0 && listen.updates.length > 0, 'every client heard updates');
  for (const [i, [name, code]] of exits.entries()) assert.equal(code, 0, `machine ${name} exits 0 on SIGTERM:\n${machines[i]!.err}`);
  // Every write of the day heard by every client (each phase checked its last write; this is all of them).
  for (const client of clients) {
    const unheard: number[] = writer.writes.filter((write: Write) => client.heard(write) === undefined).map((write) => write.version);
    assert.deepEqual(unheard, [], `${client.name}: writes never heard`);
  }
});

/** A client's figures for the writes of one phase. */
function measure(client: ObservingClient, writes: readonly Write[], from: number, to: number): ClientFigures {
  let longestWaitMs = 0;
  let coalesced = 0;
  for (const [i, write] of writes.entries()) {
    const heard = client.heard(write);
    if (heard !== undefined) longestWaitMs = Math.max(longestWaitMs, heard.triggeredAt - write.at);
    const next = writes[i + 1]?.at ?? to;
    if (client.triggersIn(write.at, next) === 0) coalesced++;
  }
  return { triggers: client.triggersIn(from, to), longestWaitMs, coalesced };
}

test.run();
