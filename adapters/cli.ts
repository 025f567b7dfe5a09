#!/usr/bin/env node
// The `mcp-rx-streams` command: `serve` runs the reference server, `listen` watches one.
import { parseArgs } from 'node:util';
import { InvalidOptionError } from '../lib/errors.js';
import type { CloseNoticeMode } from '../lib/options.js';
import { listen, ListenClientError } from './client.js';
import { redactedUrl, startReferenceServer, type ReferenceFleet, type ReferenceServerOptions } from './reference/server.js';

const USAGE = `usage:
  mcp-rx-streams serve [--dir DIR] [--port N] [--host H] [--token-secret SECRET]
                       [--keep-alive-interval MS] [--listen-idle-timeout MS] [--max-stream-lifetime MS]
                       [--max-listens-per-principal N] [--max-streams N] [--listen-max-queue N]
                       [--close-notice cancelled-then-result|result-only]
                       [--session-idle-timeout MS] [--session-grace-period MS] [--replay-buffer-size N]
                       [--redis URL [--node-id ID] [--watch-lease-ttl MS]]
  mcp-rx-streams listen URL [--tools] [--prompts] [--resources] [--resource URI]... [--token T] [--id ID]`;

/** A command-line mistake: printed as one line, exit code 2. */
class UsageError extends Error {}

const integerFlags = {
  'keep-alive-interval': 'keepAliveInterval',
  'listen-idle-timeout': 'listenIdleTimeout',
  'max-stream-lifetime': 'maxStreamLifetime',
  'max-listens-per-principal': 'maxListensPerPrincipal',
  'max-streams': 'maxStreams',
  'listen-max-queue': 'listenMaxQueue',
  'session-idle-timeout': 'sessionIdleTimeout',
  'session-grace-period': 'sessionGracePeriod',
  'replay-buffer-size': 'replayBufferSize',
  'watch-lease-ttl': 'watchLeaseTtl',
} as const;

function positive(flag: string, value: string): number {
  if (!/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      dir: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'token-secret': { type: 'string' },
      'close-notice': { type: 'string' },
      redis: { type: 'string' },
      'node-id': { type: 'string' },
      ...Object.fromEntries(Object.keys(integerFlags).map((flag) => [flag, { type: 'string' as const }])),
    },
  });
  const options: Record<string, unknown> = { dir: values.dir ?? './demo-data', host: values.host ?? '127.0.0.1' };
  if (values.port !== undefined) {
    if (!/^\d+$/.test(values.port) || Number(values.port) > 65_535) throw new UsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}`);
    options.port = Number(values.port);
  } else options.port = 3000;
  for (const [flag, option] of Object.entries(integerFlags)) {
    const value = (values as Record<string, string | undefined>)[flag];
    if (value !== undefined) options[option] = positive(flag, value);
  }
  const closeNotice = values['close-notice'];
  if (closeNotice !== undefined) {
    if (closeNotice !== 'cancelled-then-result' && closeNotice !== 'result-only') {
      throw new UsageError(`--close-notice must be cancelled-then-result or result-only, got ${JSON.stringify(closeNotice)}`);
    }
    options.closeNotice = closeNotice satisfies CloseNoticeMode;
  }
  if (values['token-secret'] !== undefined) {
    if (values['token-secret'] === '') throw new UsageError('--token-secret must not be empty');
    options.tokenSecret = values['token-secret'];
  }
  if (values.redis !== undefined) {
    if (!/^rediss?:\/\//.test(values.redis)) throw new UsageError(`--redis must be a redis:// or rediss:// URL, got ${JSON.stringify(redactedUrl(values.redis))}`);
    options.redis = values.redis;
    if (values['node-id'] !== undefined) options.nodeId = values['node-id'];
    if (typeof options.watchLeaseTtl === 'number' && options.watchLeaseTtl < 30) {
      throw new UsageError(`--watch-lease-ttl must be at least 30 (milliseconds), got ${options.watchLeaseTtl}`);
    }
  } else if (values['node-id'] !== undefined || options.watchLeaseTtl !== undefined) {
    throw new UsageError(`--${values['node-id'] === undefined ? 'watch-lease-ttl' : 'node-id'} needs --redis URL`);
  }
  const server = await startReferenceServer(options as ReferenceServerOptions);
  process.stdout.write(`mcp-rx-streams listening on ${server.url}\n`);
  if (server.fleet !== undefined) reportFleet(server.fleet, values.redis!);
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/**
 * One stdout line per fleet transition: the watch lease moving, Redis lost and back (with the
 * running totals of hub events that waited in the bus's outbox, that never reached Redis, and of
 * resyncs), and each resync of this node's streams (with its reason).
 */
function reportFleet(fleet: ReferenceFleet, redis: string): void {
  const say = (line: string) => process.stdout.write(`fleet: ${line}\n`);
  say(`node ${fleet.nodeId} on ${redactedUrl(redis)}`);
  fleet.lease.held$.subscribe((held) => say(held ? 'watch lease held' : 'watch lease not held'));
  fleet.sessionBus.connected$.subscribe((connected) => {
    const { queued, unrelayed, resyncs } = fleet.bus.stats;
    say(connected ? `redis up (queued ${queued}, unrelayed ${unrelayed}, resyncs ${resyncs})` : 'redis down');
  });
  fleet.bus.resync$.subscribe(({ reason, resyncs }) => say(`resync (${reason}): every stream told to re-read (resyncs ${resyncs})`));
}

async function watch(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      tools: { type: 'boolean' },
      prompts: { type: 'boolean' },
      resources: { type: 'boolean' },
      resource: { type: 'string', multiple: true },
      token: { type: 'string' },
      id: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('listen needs exactly one URL, e.g. mcp-rx-streams listen http://127.0.0.1:3000/mcp --resources');
  let url: URL;
  try {
    url = new URL(positionals[0]!);
  } catch {
    throw new UsageError(`listen URL is not a valid URL: ${JSON.stringify(positionals[0])}`);
  }
  const notifications: Record<string, unknown> = {};
  if (values.tools) notifications.toolsListChanged = true;
  if (values.prompts) notifications.promptsListChanged = true;
  if (values.resources) notifications.resourcesListChanged = true;
  if (values.resource !== undefined) notifications.resourceSubscriptions = values.resource;
  const id = values.id === undefined ? 1 : /^\d+$/.test(values.id) ? Number(values.id) : values.id;
  await new Promise<void>((resolve, reject) => {
    const subscription = listen({ url, id, notifications, ...(values.token === undefined ? {} : { token: values.token }) }).subscribe({
      next: (message) => {
        if ('method' in message) process.stdout.write(`${JSON.stringify(message)}\n`);
      },
      error: reject,
      complete: resolve,
    });
    process.once('SIGINT', () => {
      subscription.unsubscribe();
      resolve();
    });
  });
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'listen':
      return watch(rest);
    case undefined:
    case '-h':
    case '--help':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; use serve or listen`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof InvalidOptionError || (error as { code?: string })?.code?.startsWith?.('ERR_PARSE_ARGS')) {
    process.stderr.write(`mcp-rx-streams: ${(error as Error).message}\n`);
    process.exit(2);
  }
  if (error instanceof ListenClientError) {
    process.stderr.write(`mcp-rx-streams: ${error.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`mcp-rx-streams: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
