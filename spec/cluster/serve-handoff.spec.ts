// `serve --workers 2`: a worker SIGKILLed while new connections keep coming (issue 31, item 5). The
// primary of node:cluster accepts each connection and hands it to a worker in turn; one handed to a
// worker that died before it took it was held open by the primary, unread, for ever: its client
// never got a response nor a close (a listen sent 9 ms after a SIGKILL waited the 50 s left of the
// production run). Here each request goes on a raw socket of its own, 1 ms apart, right after the
// SIGKILL, and is counted answered (a status line), closed (ended without one) or hung (still open
// after BOUND_MS). On the code before: one request hung at each of the three kills.
import { strict as assert } from 'node:assert';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { cli, type Run } from '../helpers/cli.js';
import { sleep } from '../helpers/legacy.js';

/** A request neither answered nor closed by then hangs. */
const BOUND_MS = 5_000;
/** New connections opened right after each SIGKILL, 1 ms apart. */
const REQUESTS = 40;
const ROUNDS = 3;

type Outcome = 'answered' | 'closed' | 'hung';

let tmp: string;
let run: Run;
let url: URL;

test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-handoff-'));
  await mkdir(path.join(tmp, 'data'));
  await writeFile(path.join(tmp, 'data', 'todo.txt'), '- one\n');
  run = cli(['serve', '--workers', '2', '--port', '0', '--dir', path.join(tmp, 'data')]);
  await run.waitFor(/^mcp-rx-streams listening on \S+$/m, 30_000);
  url = new URL(/^mcp-rx-streams listening on (\S+)$/m.exec(run.out())![1]!);
});

test.after(async () => {
  run?.child.kill('SIGKILL');
  await run?.exited;
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

/** One `server/discover` POST on a new raw connection: how it ended within BOUND_MS. */
function request(): Promise<Outcome> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' });
  const head = [`POST /mcp HTTP/1.1`, `Host: ${url.host}`, 'Content-Type: application/json', 'Accept: application/json', `Content-Length: ${body.length}`, 'Connection: close'];
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('hung');
    }, BOUND_MS);
    socket.on('connect', () => socket.write(`${head.join('\r\n')}\r\n\r\n${body}`));
    socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(/^HTTP\/1\.1 \d{3} /.test(text) ? 'answered' : 'closed');
    });
  });
}

const killed = new Set<number>();

/** The pids of the workers listening now (started, neither killed here nor exited), from the primary's log. */
function liveWorkers(): number[] {
  const err = run.err();
  return [...err.matchAll(/INFO: cluster: worker \d+ \(pid (\d+)\) listening$/gm)].map((match) => Number(match[1])).filter((pid) => !killed.has(pid) && !err.includes(`(pid ${pid}) exited`));
}

/** Resolves once process `pid` is gone. */
async function gone(pid: number): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    if (i === 500) throw new Error(`worker pid ${pid} still alive 10 s after its SIGKILL`);
    await sleep(20);
  }
}

test('a worker SIGKILLed under a stream of new connections: every request is answered or its connection closed within the bound, none hangs', async () => {
  const tally: Record<Outcome, number> = { answered: 0, closed: 0, hung: 0 };
  const rounds: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; liveWorkers().length < 2; i++) {
      if (i === 1500) throw new Error(`no second worker listening after 30 s:\n${run.err()}`);
      await sleep(20);
    }
    const victim = liveWorkers()[round % 2]!;
    const outcomes: Promise<Outcome>[] = [];
    process.kill(victim, 'SIGKILL');
    killed.add(victim);
    for (let i = 0; i < REQUESTS; i++) {
      outcomes.push(request());
      await sleep(1);
    }
    const counted: Record<Outcome, number> = { answered: 0, closed: 0, hung: 0 };
    for (const outcome of await Promise.all(outcomes)) counted[outcome]++;
    for (const outcome of Object.keys(counted) as Outcome[]) tally[outcome] += counted[outcome];
    rounds.push(`kill ${round + 1} (pid ${victim}): ${counted.answered} answered, ${counted.closed} closed, ${counted.hung} hung`);
    await gone(victim);
  }
  const rescued = [...run.err().matchAll(/INFO: cluster: worker \d+ died with (\d+) new connection\(s\) on their way to it: (\d+) handed to another worker, (\d+) closed/g)];
  const handedOn = rescued.reduce((sum, match) => sum + Number(match[2]), 0);
  console.log(`  ${rounds.join('; ')}; handed on by the primary: ${handedOn}`);
  assert.equal(tally.hung, 0, `requests left without a response or a close for ${BOUND_MS} ms:\n${rounds.join('\n')}`);
  assert.equal(tally.answered + tally.closed, ROUNDS * REQUESTS);
  // The race this spec is about did happen: a connection was on its way to a worker as it died.
  assert.ok(rescued.length >= 1, `no connection was handed to a dying worker in ${ROUNDS} kills (the spec did not exercise the race):\n${run.err()}`);
});

test('SIGTERM after the kills: the machine stops with exit code 0', async () => {
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0, run.err());
});

test.run();
