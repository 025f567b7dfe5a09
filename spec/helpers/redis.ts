// A real redis-server for the Redis specs: one per spec file, on a free loopback port, with no
// persistence, in a temp dir. No mocks of Redis (issue 5). When redis-server is missing, starting
// one throws, so the specs FAIL with a message saying how to install it instead of passing
// silently (CI installs it in .ci/run).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
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

async function launchServer(port: number, dir: string, persistence: readonly string[]): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir, '--loglevel', 'warning'];
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
async function freePort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_768);
    const bound = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(candidate, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (bound) return candidate;
  }
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
