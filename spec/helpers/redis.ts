// A real redis-server for the Redis specs: one per spec file, on a free loopback port, with no
// persistence, in a temp dir. No mocks of Redis (issue 5). When redis-server is missing, starting
// one throws, so the specs FAIL with a message saying how to install it instead of passing
// silently (CI installs it in .ci/run).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

/** A redis-server child process on 127.0.0.1. */
export interface RedisServer {
  /** `redis://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL: an outage, not a shutdown); resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is persisted); resolves once it answers PING. */
  restart(): Promise<void>;
  /** Starts it again unless it is running (after a test that failed while it was down). */
  ensureRunning(): Promise<void>;
  /** Stops it for good and removes its temp dir. */
  close(): Promise<void>;
}

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';
const live = new Set<ChildProcess>();
// A spec that fails half-way must not leave servers behind.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Starts a redis-server on a free loopback port; throws a clear error when the binary is missing.
 * @param options `persistent`: an append-only file fsynced on every write, so that `restart()`
 *   (after a SIGKILL) comes back with every acknowledged write; default off (restarts empty).
 */
export async function startRedis(options: { readonly persistent?: boolean } = {}): Promise<RedisServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-redis-'));
  const port = await freePort();
  const persistence = options.persistent === true ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const launch = (port: number, dir: string) => launchServer(port, dir, persistence);
  let child: ChildProcess | undefined = await launch(port, dir);
  const stop = async () => {
    const running = child;
    child = undefined;
    if (running === undefined) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
    live.delete(running);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    restart: async () => {
      await stop();
      child = await launch(port, dir);
    },
    ensureRunning: async () => {
      if (child === undefined) child = await launch(port, dir);
    },
    close: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function launchServer(port: number, dir: string, persistence: readonly string[], extra: readonly string[] = []): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir, '--loglevel', 'warning', ...extra];
  return launch(args, port);
}

/** Spawns `redis-server args…` and resolves once it answers PING on `port`. */
async function launch(args: readonly string[], port: number): Promise<ChildProcess> {
  const child = spawn(BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      live.delete(child);
      const failure =
        error.code === 'ENOENT'
          ? new Error(`${BINARY} is not installed: the Redis specs need a real server (Debian: apt-get install redis-server; .ci/run installs it)`)
          : error;
      // uvu reports a failing before-hook as failed tests without its message: say it here.
      process.stderr.write(`\n${failure.message}\n`);
      reject(failure);
    });
    child.once('exit', (code, signal) => {
      live.delete(child);
      reject(new Error(`${BINARY} exited (${code ?? signal}) before answering PING on port ${port}: ${stderr.trim()}`));
    });
  });
  failed.catch(() => undefined);
  await Promise.race([waitForPing(port, 5000), failed]);
  child.removeAllListeners('exit');
  return child;
}

/** Resolves once `PING` on the port answers `+PONG`; rejects after `ms`. */
async function waitForPing(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ping(port)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: string) => {
      reply += chunk;
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.on('error', () => done(false));
  });
}

/**
 * A free port below the kernel's ephemeral range (32768–60999 here): a client that keeps
 * reconnecting to a port of that range while nothing listens there (a node waiting for Redis)
 * can end up connected to itself from that very port, and the redis-server started on it later
 * then fails to bind. Random ports in 20000–32767, checked by binding them.
 */
async function freePort(busOffset?: number): Promise<number> {
  for (;;) {
    // A cluster node's bus listens on port + 10 000: both below the ephemeral range.
    const candidate = 20_000 + Math.floor(Math.random() * (busOffset === undefined ? 12_768 : 32_768 - busOffset - 20_000));
    if ((await bindable(candidate)) && (busOffset === undefined || (await bindable(candidate + busOffset)))) return candidate;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A redis-server for one spec file: started before its first test, stopped after its last, with
 * a plain client (`raw`, for inspecting keys) that retries while the server restarts.
 */
export function redisForSuite(
  suite: {
    before: (hook: () => Promise<void>) => void;
    after: ((hook: () => Promise<void>) => void) & { each: (hook: () => Promise<void>) => void };
  },
  options: { readonly persistent?: boolean } = {},
): {
  readonly server: RedisServer;
  readonly raw: Redis;
} {
  const state = {} as { server: RedisServer; raw: Redis };
  suite.before(async () => {
    state.server = await startRedis(options);
    state.raw = new Redis(state.server.url, { maxRetriesPerRequest: null });
    state.raw.on('error', () => undefined);
  });
  // A test that fails while the server is down (between stop() and restart()) must not leave it
  // down: the next test's raw client would wait for it for ever.
  suite.after.each(async () => {
    await state.server?.ensureRunning();
  });
  suite.after(async () => {
    state.raw?.disconnect();
    await state.server?.close();
  });
  return state;
}

const CLI = process.env.REDIS_CLI ?? 'redis-cli';

/** One redis-server process of a set (a data node, a Sentinel, a cluster node), by port. */
class Member {
  constructor(
    readonly port: number,
    private child: ChildProcess | undefined,
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Takes the process started again on this port (after {@link kill}). */
  revive(child: ChildProcess): void {
    this.child = child;
  }

  /** SIGKILL: a crash, not a shutdown. Resolves once the process has exited. */
  async kill(): Promise<void> {
    const running = this.child;
    this.child = undefined;
    if (running === undefined) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
    live.delete(running);
  }
}

/** A short-lived plain client for one process of a set (admin commands: SENTINEL, CLUSTER, INFO, ROLE). */
async function ask<T>(port: number, body: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500, lazyConnect: true });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await body(client);
  } finally {
    client.disconnect();
  }
}

/** Polls `probe` every 50 ms until it returns a value other than `undefined` (errors count as undefined); fails after `ms` with `what`. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: () => string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `INFO <section>` as fields. */
async function info(client: Redis, section: string): Promise<Record<string, string>> {
  const text = await client.info(section);
  return Object.fromEntries(text.split('\r\n').filter((line) => line.includes(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]));
}

/** A Sentinel-managed primary with one replica and three Sentinels, all on 127.0.0.1. */
export interface SentinelSet {
  /** `redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<name>`. */
  readonly url: string;
  /** The name the Sentinels monitor the primary under. */
  readonly name: string;
  readonly sentinelPorts: readonly number[];
  /** The data nodes' ports: the first primary, then its replica. */
  readonly dataPorts: readonly number[];
  /** The port of the primary the Sentinels name now. */
  primary(): Promise<number>;
  /** SIGKILLs the data node on `port`; resolves once it has exited. */
  kill(port: number): Promise<void>;
  /** Resolves with the new primary's port once every Sentinel names one other than `old` and it answers as a primary. */
  failedOver(old: number, ms: number): Promise<number>;
  /**
   * Starts the data node on `port` again (after {@link kill}), empty, as a replica of the current
   * primary; resolves once it is in sync and every Sentinel knows it as a replica.
   */
  restartAsReplica(port: number): Promise<void>;
  /** A failover asked for (`SENTINEL FAILOVER`, as for maintenance): resolves with the new primary's port. */
  failover(ms: number): Promise<number>;
  /** Stops every process and removes the temp dir. */
  close(): Promise<void>;
}

/**
 * Starts a primary, its replica and three Sentinels (Debian's `redis-server --sentinel`), each on a
 * free loopback port, configured to fail over quickly: a primary is down after
 * `downAfter` ms without answering (default 1000), a failover times out after `failoverTimeout`
 * (default 5000). Resolves once the replica is in sync and every Sentinel knows the replica and the
 * two other Sentinels (a failover needs their quorum of 2).
 */
export async function startSentinelSet(options: { readonly downAfter?: number; readonly failoverTimeout?: number; readonly name?: string } = {}): Promise<SentinelSet> {
  const name = options.name ?? 'mymaster';
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-sentinel-'));
  const members: Member[] = [];
  const close = async () => {
    await Promise.all(members.map((member) => member.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const primaryPort = await freePort();
    members.push(new Member(primaryPort, await launchServer(primaryPort, dir, ['--appendonly', 'no'], ['--dbfilename', `dump-${primaryPort}.rdb`])));
    const replicaPort = await freePort();
    members.push(new Member(replicaPort, await launchServer(replicaPort, dir, ['--appendonly', 'no'], ['--dbfilename', `dump-${replicaPort}.rdb`, '--replicaof', '127.0.0.1', String(primaryPort)])));
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = path.join(dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its config file (what it learns about the set): one writable file each.
      await writeFile(conf, [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${name} ${options.downAfter ?? 1000}`,
        `sentinel failover-timeout ${name} ${options.failoverTimeout ?? 5000}`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'));
      members.push(new Member(port, await launch([conf, '--sentinel', '--loglevel', 'warning'], port)));
      sentinelPorts.push(port);
    }
    await until(async () => ((await ask(replicaPort, (c) => info(c, 'replication'))).master_link_status === 'up' ? true : undefined), 10_000, () => 'the replica to sync with the primary');
    for (const port of sentinelPorts) {
      await until(
        () =>
          ask(port, async (client) => {
            const sentinels = (await client.call('SENTINEL', 'SENTINELS', name)) as unknown[];
            const replicas = (await client.call('SENTINEL', 'REPLICAS', name)) as string[][];
            const replicaOk = replicas.length === 1 && fields(replicas[0]!).flags === 'slave';
            return sentinels.length === 2 && replicaOk ? true : undefined;
          }),
        15_000,
        () => `the Sentinel on ${port} to know the replica and the two other Sentinels`,
      );
    }
    const primaryOf = (port: number) => ask(port, async (client) => Number(((await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as string[])[1]));
    const byPort = (port: number) => members.find((member) => member.port === port);
    /** The port every Sentinel names as the primary once it is no longer `old` and answers as one. */
    const newPrimary = (old: number, ms: number, what: () => string) =>
      until(
        async () => {
          const named = await Promise.all(sentinelPorts.map(primaryOf));
          if (named.some((port) => port === old || port !== named[0])) return undefined;
          const role = await ask(named[0]!, (client) => client.call('ROLE') as Promise<[string]>);
          return role[0] === 'master' ? named[0] : undefined;
        },
        ms,
        what,
      );
    return {
      url: `redis+sentinel://${sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',')}/${name}`,
      name,
      sentinelPorts,
      dataPorts: [primaryPort, replicaPort],
      primary: () => primaryOf(sentinelPorts[0]!),
      kill: async (port) => {
        await byPort(port)?.kill();
      },
      failedOver: (old, ms) => newPrimary(old, ms, () => `every Sentinel to name a new primary instead of 127.0.0.1:${old}`),
      restartAsReplica: async (port) => {
        const primary = await primaryOf(sentinelPorts[0]!);
        byPort(port)!.revive(await launchServer(port, dir, ['--appendonly', 'no'], ['--dbfilename', `dump-${port}.rdb`, '--replicaof', '127.0.0.1', String(primary)]));
        await until(async () => ((await ask(port, (c) => info(c, 'replication'))).master_link_status === 'up' ? true : undefined), 10_000, () => `127.0.0.1:${port} to sync with the primary`);
        for (const sentinel of sentinelPorts) {
          await until(
            () =>
              ask(sentinel, async (client) => {
                const replicas = ((await client.call('SENTINEL', 'REPLICAS', name)) as string[][]).map(fields);
                return replicas.some((replica) => replica.port === String(port) && replica.flags === 'slave') ? true : undefined;
              }),
            15_000,
            () => `the Sentinel on ${sentinel} to know 127.0.0.1:${port} as a replica`,
          );
        }
      },
      failover: async (ms) => {
        const old = await primaryOf(sentinelPorts[0]!);
        await ask(sentinelPorts[0]!, (client) => client.call('SENTINEL', 'FAILOVER', name));
        return newPrimary(old, ms, () => `the failover asked of the Sentinels to name a new primary instead of 127.0.0.1:${old}`);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A flat `[field, value, field, value…]` reply as an object. */
function fields(flat: readonly string[]): Record<string, string> {
  const object: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) object[flat[i]!] = flat[i + 1]!;
  return object;
}

/** A Redis Cluster of loopback processes: `primaries` primaries, each with one replica. */
export interface RedisClusterSet {
  /** `redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,…` (every node). */
  readonly url: string;
  readonly ports: readonly number[];
  /** The port of the primary that serves `key`'s slot now, as a live node's `CLUSTER SLOTS` says. */
  primaryOf(key: string): Promise<number>;
  /** SIGKILLs the node on `port`; resolves once it has exited. */
  kill(port: number): Promise<void>;
  /**
   * Resolves with the port of the primary serving `key` once it is not `old`, answers as a
   * primary, and every live node says the cluster is ok.
   */
  failedOver(key: string, old: number, ms: number): Promise<number>;
  /** Stops every process and removes the temp dir. */
  close(): Promise<void>;
}

/**
 * Starts a Redis Cluster on loopback: `2 × primaries` nodes (`redis-server --cluster-enabled yes`,
 * each node's bus on port + 10 000) joined by `redis-cli --cluster create … --cluster-replicas 1
 * --cluster-yes`, with `--cluster-node-timeout nodeTimeout` (default 1000 ms) so that a replica
 * takes over a failed primary within a few seconds. Resolves once every node says `cluster_state:ok`
 * and every replica is in sync. Fails, saying how to install it, when `redis-cli` is missing.
 */
export async function startRedisCluster(options: { readonly primaries?: number; readonly nodeTimeout?: number } = {}): Promise<RedisClusterSet> {
  const count = 2 * (options.primaries ?? 3);
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cluster-'));
  const members: Member[] = [];
  const close = async () => {
    await Promise.all(members.map((member) => member.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) {
      const port = await freePort(10_000);
      const extra = ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(options.nodeTimeout ?? 1000), '--dbfilename', `dump-${port}.rdb`];
      members.push(new Member(port, await launchServer(port, dir, ['--appendonly', 'no'], extra)));
    }
    const ports = members.map((member) => member.port);
    await createCluster(ports);
    const slotsOf = (port: number) => ask(port, (client) => client.call('CLUSTER', 'SLOTS') as Promise<[number, number, [string, number, string], ...[string, number, string][]][]>);
    const primaryServing = async (slot: number, via: number) => {
      const range = (await slotsOf(via)).find(([start, end]) => start <= slot && slot <= end);
      return range?.[2][1];
    };
    const liveNodes = () => members.filter((member) => member.running).map((member) => member.port);
    const settled = async () => {
      for (const port of liveNodes()) {
        if ((await ask(port, (client) => info(client, 'replication'))).role === 'slave' && (await ask(port, (client) => info(client, 'replication'))).master_link_status !== 'up') return false;
        const state = await ask(port, (client) => client.call('CLUSTER', 'INFO') as Promise<string>);
        if (!state.includes('cluster_state:ok')) return false;
      }
      return true;
    };
    await until(async () => ((await settled()) ? true : undefined), 20_000, () => 'every node of the new cluster to say cluster_state:ok, and every replica to be in sync');
    const slotOf = (key: string) => ask(liveNodes()[0]!, (client) => client.call('CLUSTER', 'KEYSLOT', key) as Promise<number>);
    return {
      url: `redis+cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
      ports,
      primaryOf: async (key) => {
        const port = await primaryServing(await slotOf(key), liveNodes()[0]!);
        if (port === undefined) throw new Error(`no node serves the slot of ${key}`);
        return port;
      },
      kill: async (port) => {
        await members.find((member) => member.port === port)?.kill();
      },
      failedOver: async (key, old, ms) => {
        const slot = await slotOf(key);
        return until(
          async () => {
            const views = await Promise.all(liveNodes().map((port) => primaryServing(slot, port)));
            const port = views[0];
            if (port === undefined || port === old || views.some((view) => view !== port)) return undefined;
            const role = await ask(port, (client) => client.call('ROLE') as Promise<[string]>);
            return role[0] === 'master' && (await settled()) ? port : undefined;
          },
          ms,
          () => `a replica to take over the slot of ${key} from 127.0.0.1:${old}`,
        );
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** `redis-cli --cluster create`, failing with the command that installs redis-cli when it is missing. */
function createCluster(ports: readonly number[]): Promise<void> {
  const args = ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '1', '--cluster-yes'];
  return new Promise<void>((resolve, reject) => {
    const child = spawn(CLI, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', (error: NodeJS.ErrnoException) => {
      const failure =
        error.code === 'ENOENT'
          ? new Error(`${CLI} is not installed: the Redis Cluster spec creates its cluster with it (Debian: apt-get install redis-tools, which redis-server depends on; brew install redis)`)
          : error;
      process.stderr.write(`\n${failure.message}\n`);
      reject(failure);
    });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${CLI} ${args.join(' ')} exited ${code}:\n${output}`))));
  });
}
