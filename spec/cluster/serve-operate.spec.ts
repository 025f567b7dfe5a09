// Operating a machine of several workers (issue 31, item 6): `serve --workers 2` with
// --metrics-port and --admin-token, as an operator runs it, over loopback. The primary serves the
// machine's Prometheus metrics (every worker's registry and its own, joined), GET /streams lists
// what every worker serves (each entry with its worker) and POST /revoke ends a principal's streams
// and sessions on every worker; each worker's log line says which worker wrote it (JSON: `worker`;
// pretty: `worker N: `); a SIGTERM with legacy sessions open, subscribed and in their grace period
// logs no WARN or ERROR. With --redis, the primary's Redis connections are in the machine's metrics.
//
// On the code before: `--workers 2 --metrics-port` exited 2 (refused); worker lines had no worker;
// the SIGTERM test's machine logged `WARN … ClusterError: cluster store.update: this worker has left
// the cluster` four times on 7de43a3 (the code the issue was filed against; 6333b3b, which awaits
// the sessions' handover before the worker leaves, removed it).
import { strict as assert } from 'node:assert';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { cli, type Run, serving as servingCli } from '../helpers/cli.js';
import { eventually, listenBody, SseConnection } from '../helpers/http.js';
import { call, GetStream, initialize, send, sleep } from '../helpers/legacy.js';
import { startRedis } from '../helpers/redis.js';

const TOKEN = 'admin-token-0123456789';
const bearer = { authorization: `Bearer ${TOKEN}` };
const PRINCIPAL = 'addr:127.0.0.1';

/** A pino JSON line. */
interface LogRecord {
  readonly level: number;
  readonly msg: string;
  readonly event?: string;
  readonly worker?: number;
  readonly [field: string]: unknown;
}

const WARN = 40;

const records = (run: Run): LogRecord[] =>
  run
    .err()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogRecord);

/** The worker an answer came from: the last part of X-Served-By (`<primary node id>/<cluster.worker.id>`). */
const workerOf = (headers: Record<string, unknown>) => Number(String(headers['x-served-by']).split('/').pop());

/** How long a machine may take to print its ready line: generous, for a machine other work keeps busy. */
const START_MS = 60_000;

/** `serving` (spec/helpers/cli.ts) with the metrics port every run here asks for, and START_MS to start. */
function serving(args: string[], body: (served: { run: Run; url: string; metrics: string; dir: string }) => Promise<void>): Promise<Run> {
  return servingCli(args, (served) => body({ ...served, metrics: served.metrics! }), undefined, START_MS);
}

/** The value of the sample `series` (exactly as written) in a Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('--workers 2 --metrics-port --admin-token: the machine\'s metrics, a snapshot and a revoke over every worker; worker ids on the log lines; a clean SIGTERM logs no WARN', async () => {
  let listens: SseConnection[] = [];
  const gets: GetStream[] = [];
  const run = await serving(['--workers', '2', '--metrics-port', '0', '--admin-token', TOKEN, '--log-format', 'json', '--session-grace-period', '60000'], async ({ url, metrics, dir }) => {
    const todo = pathToFileURL(path.join(dir, 'notes', 'todo.txt')).href;
    // Four listens (the per-principal cap) spread over both workers, three legacy sessions with their GET and a subscription.
    for (let id = 1; id <= 4; id++) {
      const listen = await SseConnection.open(url, listenBody(id, { resourceSubscriptions: [todo] }));
      await listen.until((c) => c.text.includes('acknowledged'), 5000, `the ack of listen ${id}`);
      listens.push(listen);
    }
    assert.deepEqual(new Set(listens.map((listen) => workerOf(listen.res.headers))), new Set([1, 2]), 'listens on both workers');
    const sessions: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { sessionId } = await initialize(url);
      const get = GetStream.open(url, sessionId);
      await get.response;
      assert.equal((await call(url, sessionId, 2, 'resources/subscribe', { uri: todo })).status, 200);
      sessions.push(sessionId);
      gets.push(get);
    }
    await sleep(200);

    const scraped = await send(`${metrics}/metrics`, 'GET', {});
    assert.equal(scraped.status, 200);
    assert.match(String(scraped.headers['content-type']), /^text\/plain/);
    const text = scraped.body;
    assert.equal(sample(text, 'mcp_rx_cluster_workers_scraped'), 2, text);
    assert.equal(sample(text, 'mcp_rx_cluster_workers'), 2);
    assert.equal(sample(text, 'mcp_rx_cluster_sessions'), 3);
    assert.equal(sample(text, 'mcp_rx_streams_open{era="modern"}'), 4, 'the listens of both workers, summed');
    assert.equal(sample(text, 'mcp_rx_streams_open{era="legacy"}'), 3);
    assert.equal(sample(text, 'mcp_rx_slots_in_use'), 7);
    assert.ok((sample(text, 'process_resident_memory_bytes') ?? 0) > 0, 'the processes\' default metrics');

    assert.equal((await send(`${metrics}/streams`, 'GET', {})).status, 401);
    const snapshot = await send(`${metrics}/streams?uris=1`, 'GET', bearer);
    assert.equal(snapshot.status, 200);
    const streams = snapshot.json.streams as { worker: number; era: string; id: string; principal: string; streamOpen?: boolean; filter: { uris?: string[] } }[];
    const modern = streams.filter((entry) => entry.era === 'modern');
    const legacy = streams.filter((entry) => entry.era === 'legacy');
    assert.deepEqual(new Set(modern.map((entry) => entry.worker)), new Set([1, 2]), JSON.stringify(streams));
    assert.equal(modern.length, 4);
    assert.deepEqual(legacy.map((entry) => entry.id).sort(), [...sessions].sort(), 'each session once, whichever workers hold it');
    assert.ok(legacy.every((entry) => entry.streamOpen === true), 'from the worker holding its GET');
    assert.ok(streams.every((entry) => entry.principal === PRINCIPAL && entry.filter.uris?.[0] === todo));

    const revoked = await send(`${metrics}/revoke`, 'POST', { ...bearer, 'content-type': 'application/json' }, JSON.stringify({ principal: PRINCIPAL }));
    assert.deepEqual([revoked.status, revoked.json], [200, { principal: PRINCIPAL, reason: 'revoked', streams: 4, sessions: 3 }]);
    for (const listen of listens) await listen.until((c) => c.ended, 5000, 'every listen to end');
    for (const get of gets) await get.until((g) => g.ended, 5000, 'every GET to end');
    assert.deepEqual((await send(`${metrics}/streams`, 'GET', bearer)).json.streams, []);
    assert.equal(sample((await send(`${metrics}/metrics`, 'GET', {})).body, 'mcp_rx_stream_closes_total{reason="revoked"}'), 4);

    // What a SIGTERM finds: legacy sessions subscribed, two with their GET open, one in its grace period, and listens.
    listens = [];
    for (let i = 0; i < 3; i++) {
      const { sessionId } = await initialize(url);
      const get = GetStream.open(url, sessionId);
      await get.response;
      await call(url, sessionId, 2, 'resources/subscribe', { uri: todo });
      if (i === 0) get.destroy();
    }
    for (let id = 10; id < 12; id++) listens.push(await SseConnection.open(url, listenBody(id, { toolsListChanged: true })));
    await appendFile(path.join(dir, 'notes', 'todo.txt'), '- before the stop\n');
    await sleep(300);
  });
  const all = records(run);
  const opened = all.filter((record) => record.event === 'stream_opened');
  assert.ok(opened.length >= 9 && opened.every((record) => record.worker === 1 || record.worker === 2), `every worker line says its worker: ${JSON.stringify(opened)}`);
  assert.deepEqual(new Set(opened.map((record) => record.worker)), new Set([1, 2]));
  assert.ok(all.filter((record) => record.event === 'cluster').every((record) => record.worker === undefined), 'the primary\'s lines name no worker');
  const stopping = all.findIndex((record) => record.event === 'stopping');
  const loud = all.slice(stopping).filter((record) => record.level >= WARN);
  assert.deepEqual(loud, [], 'a clean SIGTERM logs no WARN or ERROR');
  assert.ok(all.every((record) => !/has left the cluster/.test(JSON.stringify(record))));
});

test('--workers 2 --redis, pretty logs: a worker\'s lines start with "worker N: "; the primary\'s Redis connections are in the machine\'s metrics', async () => {
  const redis = await startRedis();
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-operate-'));
  const run = cli(['serve', '--workers', '2', '--port', '0', '--dir', path.join(root, 'data'), '--demo', '--redis', redis.url, '--metrics-port', '0']);
  try {
    await run.waitFor(/^metrics on \S+$/m, START_MS);
    const url = /^mcp-rx-streams listening on (\S+)$/m.exec(run.out())![1]!;
    const metrics = /^metrics on (\S+)\/metrics$/m.exec(run.out())![1]!;
    await run.waitForErr(/INFO: connected to Redis at /, 15_000);
    const listens = [];
    for (let id = 1; id <= 2; id++) listens.push(await SseConnection.open(url, listenBody(id, { toolsListChanged: true })));
    const workers = listens.map((listen) => workerOf(listen.res.headers)).sort();
    await eventually(() => (run.err().match(/\] INFO: worker [12]: stream opened \{/g) ?? []).length === 2, 5000, 'two "worker N: stream opened" lines');
    assert.deepEqual([...run.err().matchAll(/\] INFO: worker (\d): stream opened \{/g)].map((match) => Number(match[1])).sort(), workers);
    assert.doesNotMatch(run.err(), /\] INFO: stream opened/);
    const text = (await send(`${metrics}/metrics`, 'GET', {})).body;
    const up = text.split('\n').filter((line) => line.startsWith('mcp_rx_redis_connection_up{'));
    assert.ok(up.length >= 4 && up.every((line) => line.endsWith(' 1')), up.join('\n'));
    for (const listen of listens) listen.destroy();
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
    assert.doesNotMatch(run.err().slice(run.err().indexOf('INFO: stopping')), /\] (WARN|ERROR): /);
  } finally {
    run.child.kill('SIGKILL');
    await redis.close();
    await rm(root, { recursive: true, force: true });
  }
});

test.run();
