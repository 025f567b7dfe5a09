#!/usr/bin/env node
// The `mcp-rx-streams` command: `serve` runs the reference server, `listen` watches one.
//
// Each command's flags are one table (flag, value, unit, default, description, validator): `--help`
// is printed from it and `node:util` parseArgs reads the command line with it, so the help and what
// is accepted cannot drift apart. A command-line mistake is one line on stderr naming the flag, exit
// code 2; a failure after start (a port in use, Redis not there within --redis-timeout), exit code 1.
import { stat } from 'node:fs/promises';
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidOptionError, McpRxError } from '../lib/errors.js';
import { clientAddress } from './http/clientAddress.js';
import { corsPolicy, type CorsOrigins } from './http/cors.js';
import { DEFAULT_SESSION_OPTIONS } from '../protocol/legacy/sessionOptions.js';
import { DEFAULT_CAPACITY_RETRY_AFTER, DEFAULT_MAX_BODY_BYTES } from '../protocol/options.js';
import { DEFAULT_MAX_READ_BYTES } from './reference/fileOptions.js';
import { DEFAULT_LISTEN_OPTIONS, DEFAULT_STREAM_LIMITS, MAX_TIMER_DELAY } from '../lib/options.js';
import type { ReferenceServer, ReferenceServerOptions } from './reference/server.js';
import { redactedUrl } from './redactedUrl.js';
import { LOG_FORMATS, LOG_LEVELS, type CliLogger, type LogFormat, type LogLevel } from './cliLogLevels.js';
import { acknowledgmentNotes, closeNote, relativeUriNotes } from './listenNotes.js';

/** A command-line mistake: printed as one line, exit code 2. */
class UsageError extends McpRxError {
  override readonly name = 'UsageError';
  override readonly code = 'ERR_MCP_RX_CLI_USAGE';
}

/** A failure after the command started: printed as one line, exit code 1. */
class RunError extends McpRxError {
  override readonly name = 'RunError';
  override readonly code = 'ERR_MCP_RX_CLI_RUN';
}

/** One flag of a command: everything `--help` prints and everything needed to read it. */
interface Flag {
  /** Without the leading `--`. */
  readonly name: string;
  /** What the value is, as `--help` shows it (`MS`, `N`, `URL`…); absent for a switch. */
  readonly value?: string;
  /** The value's unit (`milliseconds`, `bytes`…), shown in `--help`. */
  readonly unit?: string;
  /** The default, as `--help` shows it; absent when there is none. */
  readonly default?: string;
  readonly description: string;
  /** Checks the text given and converts it; throws a UsageError naming the flag. Absent for a switch or free text. */
  readonly parse?: (text: string, flag: string) => unknown;
  /** A one-letter alias (`-h`). */
  readonly short?: string;
  /** May be given several times (the values are collected in order). */
  readonly multiple?: boolean;
  /** The option of `startReferenceServer` (or the command) it sets; defaults to the camel-cased name. */
  readonly option?: string;
}

const MIB = 1_048_576;

function integer(min: number, max: number, unit: string): (text: string, flag: string) => number {
  return (text, flag) => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new UsageError(`--${flag} must be an integer from ${min} to ${max} (${unit}), got ${JSON.stringify(text)}`);
    }
    return value;
  };
}

const milliseconds = (min = 1) => integer(min, MAX_TIMER_DELAY, 'milliseconds');
const count = integer(1, Number.MAX_SAFE_INTEGER, 'a count');
const bytes = integer(1, Number.MAX_SAFE_INTEGER, 'bytes');
const port = integer(0, 65_535, 'a TCP port; 0 picks a free one');

function oneOf(...values: string[]): (text: string, flag: string) => string {
  return (text, flag) => {
    if (!values.includes(text)) throw new UsageError(`--${flag} must be ${values.join(' or ')}, got ${JSON.stringify(text)}`);
    return text;
  };
}

function nonEmpty(text: string, flag: string): string {
  if (text === '') throw new UsageError(`--${flag} must not be empty`);
  return text;
}

function adminToken(text: string, flag: string): string {
  if (text.length < 16 || /\s/.test(text)) throw new UsageError(`--${flag} must be at least 16 characters without whitespace (e.g. openssl rand -hex 24), got ${text.length} characters`);
  return text;
}

function redisUrl(text: string, flag: string): string {
  if (!/^rediss?:\/\//.test(text)) throw new UsageError(`--${flag} must be a redis:// or rediss:// URL, got ${JSON.stringify(redactedUrl(text))}`);
  return text;
}

function nodeId(text: string, flag: string): string {
  if (text === '' || /[\s:]/.test(text)) throw new UsageError(`--${flag} must be a non-empty name without whitespace or ":", got ${JSON.stringify(text)}`);
  return text;
}

/** `--workers`: `auto` (the machine's available parallelism) or a number of worker processes. */
function workerCount(text: string, flag: string): number {
  if (text === 'auto') return availableParallelism();
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > MAX_WORKERS) throw new UsageError(`--${flag} must be auto or an integer from 1 to ${MAX_WORKERS} (worker processes), got ${JSON.stringify(text)}`);
  return value;
}

const MAX_WORKERS = 1024;

/** `--trust-proxy`: a hop count, or a comma-separated list of proxy addresses and ranges. */
function trustProxy(text: string, flag: string): number | string[] {
  if (/^\d+$/.test(text)) return integer(0, Number.MAX_SAFE_INTEGER, 'proxy hops')(text, flag);
  const list = text.split(',').map((entry) => entry.trim());
  try {
    clientAddress(list);
  } catch (error) {
    if (!(error instanceof InvalidOptionError)) throw error;
    throw new UsageError(
      `--${flag} must be a number of proxy hops or a comma-separated list of proxy addresses, CIDR ranges, loopback, linklocal or uniquelocal, got ${JSON.stringify(text)}`,
    );
  }
  return list;
}

/** `--cors-origins`: `*`, or a comma-separated list of origins. */
function corsOrigins(text: string, flag: string): CorsOrigins {
  const origins = text === '*' ? '*' : text.split(',').map((entry) => entry.trim());
  try {
    corsPolicy(origins, { authenticates: false, methods: 'POST' });
  } catch (error) {
    if (!(error instanceof InvalidOptionError)) throw error;
    throw new UsageError(`--${flag} must be * or a comma-separated list of origins (https://app.example) or host names (localhost), got ${JSON.stringify(text)}`);
  }
  return origins;
}

const HELP: Flag = { name: 'help', short: 'h', description: 'print this help and exit' };

const SERVE_FLAGS: readonly Flag[] = [
  { name: 'dir', value: 'DIR', default: './demo-data', description: 'directory served as MCP resources (files under private/ need the private scope); must exist unless --demo', parse: nonEmpty },
  { name: 'demo', description: 'create --dir with sample files when it does not exist' },
  {
    name: 'stdio',
    description:
      'serve one host over this process\'s stdin and stdout (newline-delimited JSON-RPC, both eras) instead of HTTP; everything else is said on stderr, and the process exits 0 when stdin closes. HTTP-only flags are refused',
  },
  { name: 'port', value: 'N', unit: 'TCP port, 0 = any free one', default: '3000', description: 'port to listen on', parse: port },
  { name: 'host', value: 'HOST', default: '127.0.0.1', description: 'interface to bind; on a loopback address foreign Host/Origin headers get 403', parse: nonEmpty },
  {
    name: 'token-secret',
    value: 'SECRET',
    default: 'none (no authentication)',
    description: 'require Authorization: Bearer <HS256 JWT> signed with SECRET: sub (required) is the principal, exp ends its streams, scope "private" grants private/',
    parse: nonEmpty,
  },
  { name: 'max-read-bytes', value: 'BYTES', unit: 'bytes', default: `${DEFAULT_MAX_READ_BYTES} (${DEFAULT_MAX_READ_BYTES / MIB} MiB)`, description: 'largest file resources/read returns; larger ones get a JSON-RPC error', parse: bytes },
  { name: 'keep-alive-interval', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_LISTEN_OPTIONS.keepAliveInterval), description: 'time between ":" keep-alive comments on a stream', parse: milliseconds() },
  { name: 'listen-idle-timeout', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_LISTEN_OPTIONS.listenIdleTimeout), description: 'a listen stream without a notification for this long is closed (idle_timeout)', parse: milliseconds() },
  { name: 'max-stream-lifetime', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_LISTEN_OPTIONS.maxStreamLifetime), description: 'any stream (listen or legacy GET) is closed after this long (max_lifetime)', parse: milliseconds() },
  { name: 'listen-max-queue', value: 'N', unit: 'notifications', default: String(DEFAULT_LISTEN_OPTIONS.listenMaxQueue), description: 'notifications held for a slow client; beyond it new ones are dropped (identical ones coalesce)', parse: count },
  { name: 'listen-max-queue-bytes', value: 'BYTES', unit: 'bytes', default: `${DEFAULT_LISTEN_OPTIONS.listenMaxQueueBytes} (1 MiB)`, description: 'bytes of frames held for a slow client; beyond it new notifications are dropped', parse: bytes },
  {
    name: 'close-notice',
    value: 'MODE',
    default: DEFAULT_LISTEN_OPTIONS.closeNotice,
    description: 'on a server-side close send notifications/cancelled then the result, or the result only (cancelled-then-result | result-only)',
    parse: oneOf('cancelled-then-result', 'result-only'),
  },
  { name: 'max-listens-per-principal', value: 'N', unit: 'streams', default: String(DEFAULT_STREAM_LIMITS.maxListensPerPrincipal), description: "one principal's listen streams; a new one beyond it supersedes the oldest (legacy GET streams are one per session)", parse: count },
  { name: 'max-streams', value: 'N', unit: 'streams', default: String(DEFAULT_STREAM_LIMITS.maxStreams), description: 'open streams server-wide; beyond it a new one gets HTTP 503', parse: count },
  {
    name: 'empty-listen',
    value: 'MODE',
    default: 'hold',
    description: "a listen that honoured nothing: hold it open like any other, or answer the empty acknowledgment and the result at once (hold | complete; complete suits serverless hosts)",
    parse: oneOf('hold', 'complete'),
  },
  { name: 'capacity-retry-after', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_CAPACITY_RETRY_AFTER), description: 'how long a client refused with HTTP 503 (--max-streams, --max-sessions) is told to wait: Retry-After and data.retryAfterMs', parse: milliseconds() },
  { name: 'max-body-bytes', value: 'BYTES', unit: 'bytes', default: `${DEFAULT_MAX_BODY_BYTES} (${DEFAULT_MAX_BODY_BYTES / MIB} MiB)`, description: 'largest request body; larger ones get HTTP 413', parse: bytes },
  { name: 'body-timeout', value: 'MS', unit: 'milliseconds', default: '10000', description: 'time a request body may take to arrive; slower ones get HTTP 408', parse: milliseconds() },
  { name: 'session-idle-timeout', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_SESSION_OPTIONS.sessionIdleTimeout), description: 'a legacy session without a request or a live GET stream for this long is evicted', parse: milliseconds() },
  { name: 'session-grace-period', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_SESSION_OPTIONS.sessionGracePeriod), description: "after a dropped GET stream, how long the session's subscriptions keep filling its replay buffer", parse: milliseconds() },
  { name: 'replay-buffer-size', value: 'N', unit: 'frames', default: String(DEFAULT_SESSION_OPTIONS.replayBufferSize), description: 'frames kept per legacy session for Last-Event-ID; beyond it the oldest are forgotten', parse: count },
  { name: 'max-sessions', value: 'N', unit: 'sessions', default: String(DEFAULT_SESSION_OPTIONS.maxSessions), description: 'legacy sessions held; an initialize beyond it gets HTTP 503', parse: count },
  { name: 'max-subscriptions-per-session', value: 'N', unit: 'URIs', default: String(DEFAULT_SESSION_OPTIONS.maxSubscriptionsPerSession), description: 'resources/subscribe URIs per legacy session; beyond it -32602', parse: count },
  { name: 'max-sessions-per-principal', value: 'N', unit: 'sessions', default: String(DEFAULT_SESSION_OPTIONS.maxSessionsPerPrincipal), description: "legacy sessions (and so GET streams) one principal holds; an initialize beyond it ends that principal's least recently used session", parse: count },
  { name: 'reconnect-delay', value: 'MS', unit: 'milliseconds', default: String(DEFAULT_SESSION_OPTIONS.reconnectDelay), description: 'the SSE retry: a legacy GET stream of a 2025-11-25 session opens with (how long its client waits before reconnecting)', parse: milliseconds() },
  {
    name: 'workers',
    value: 'N',
    unit: 'processes, or auto = the machine\'s available parallelism',
    default: '1 (one process)',
    description:
      'serve on N node:cluster workers sharing the port; this process (the primary) shares the hub, the caps, the legacy sessions and their replay logs between them, gives one the folder watch, and starts again a worker that dies (docs/cluster.md); with --redis the machine is one node of the fleet',
    parse: workerCount,
  },
  { name: 'redis', value: 'URL', default: 'none (one process)', description: 'run as one node of a fleet sharing this Redis (redis:// or rediss://); see docs/fleet.md', parse: redisUrl },
  { name: 'node-id', value: 'ID', default: 'a random UUID', description: "this node's name in the fleet (no whitespace, no \":\"); only with --redis", parse: nodeId },
  { name: 'watch-lease-ttl', value: 'MS', unit: 'milliseconds', default: '5000', description: 'how long the folder-watch lease outlives its holder; only with --redis', parse: milliseconds(30) },
  { name: 'redis-timeout', value: 'MS', unit: 'milliseconds', default: 'none (wait for ever)', description: 'give up with exit code 1 when Redis has not answered for this long after start; only with --redis', parse: milliseconds() },
  {
    name: 'trust-proxy',
    value: 'PROXIES',
    unit: 'proxy hops, or addresses',
    default: 'none (X-Forwarded-For is ignored; the client is the connection\'s peer)',
    description:
      'the reverse proxies in front whose X-Forwarded-For names the client (its address is the anonymous principal): a hop count (1 = one proxy, the only way in), or a comma-separated list of their addresses, CIDR ranges, loopback, linklocal, uniquelocal',
    parse: trustProxy,
  },
  {
    name: 'cors-origins',
    value: 'ORIGINS',
    default: 'none (no CORS: pages on other origins cannot call the server)',
    description: 'browser pages that may call the server from another origin: a comma-separated list of origins (https://app.example) or host names (localhost), or * for any page (not with --token-secret)',
    parse: corsOrigins,
  },
  { name: 'metrics-port', value: 'N', unit: 'TCP port, 0 = any free one', default: 'off', description: 'serve Prometheus metrics on http://METRICS_HOST:N/metrics (needs the prom-client package), and the admin endpoints with --admin-token', parse: port },
  { name: 'metrics-host', value: 'HOST', default: '127.0.0.1', description: 'interface the metrics port binds (loopback unless you expose it on purpose); only with --metrics-port', parse: nonEmpty },
  {
    name: 'admin-token',
    value: 'TOKEN',
    default: 'none (no admin endpoints)',
    description: 'serve GET /streams (the stream snapshot) and POST /revoke {"principal": "..."} on the metrics port, for requests with Authorization: Bearer TOKEN (at least 16 characters); only with --metrics-port',
    parse: adminToken,
  },
  { name: 'log-level', value: 'LEVEL', default: 'info', description: 'least severe log line written to stderr: error | warn | info (streams, sessions, Redis) | debug (each drop, each Redis connection)', parse: oneOf(...LOG_LEVELS) },
  { name: 'log-format', value: 'FORMAT', default: 'pretty', description: 'stderr log lines: pretty (one readable line each) | json (pino: one JSON object per line)', parse: oneOf(...LOG_FORMATS) },
  HELP,
];

const LISTEN_FLAGS: readonly Flag[] = [
  { name: 'tools', description: 'hear notifications/tools/list_changed' },
  { name: 'prompts', description: 'hear notifications/prompts/list_changed' },
  { name: 'resources', description: 'hear notifications/resources/list_changed' },
  { name: 'resource', value: 'URI', multiple: true, description: 'hear notifications/resources/updated for URI (repeat for several)', parse: nonEmpty },
  { name: 'token', value: 'TOKEN', default: 'none', description: 'send Authorization: Bearer TOKEN', parse: nonEmpty },
  { name: 'id', value: 'ID', default: '1', description: 'the listen request id (digits are sent as a number)', parse: nonEmpty },
  HELP,
];

const COMMANDS = {
  serve: {
    usage: 'mcp-rx-streams serve [flags]',
    summary:
      'Runs the reference MCP server: a directory served as resources, its changes pushed to subscriptions/listen streams and legacy GET streams. ' +
      'Prints one line on stdout when it listens (and the metrics URL); logs what it does on stderr.',
    flags: SERVE_FLAGS,
  },
  listen: {
    usage: 'mcp-rx-streams listen URL [flags]',
    summary:
      'Opens a subscriptions/listen stream on the MCP endpoint URL and prints each notification as one JSON line until Ctrl-C. ' +
      'On stderr it says what the server did not honour and why the stream ended; the exit code is 1 when the server ended it for any reason but its shutdown.',
    flags: LISTEN_FLAGS,
  },
} as const;

type Command = keyof typeof COMMANDS;

/** The `--help` text of `command`, generated from its flag table. */
function helpText(command: Command): string {
  const { usage, summary, flags } = COMMANDS[command];
  const left = flags.map((flag) => `${flag.short === undefined ? '' : `-${flag.short}, `}--${flag.name}${flag.value === undefined ? '' : ` ${flag.value}`}`);
  const width = Math.max(...left.map((text) => text.length)) + 2;
  const lines = flags.map((flag, i) => {
    const notes = [flag.unit, flag.default === undefined ? undefined : `default: ${flag.default}`].filter(Boolean);
    return `  ${left[i]!.padEnd(width)}${flag.description}${notes.length === 0 ? '' : ` [${notes.join('; ')}]`}`;
  });
  return `usage: ${usage}\n\n${summary}\n\nflags:\n${lines.join('\n')}\n`;
}

const TOP_HELP = `usage:
  mcp-rx-streams serve [flags]      run the reference server (mcp-rx-streams serve --help)
  mcp-rx-streams listen URL [flags] watch a server's change notifications (mcp-rx-streams listen --help)
`;

/** Reads `argv` with the table: the validated values by flag name, and the positionals. */
function read(command: Command, argv: string[]): { values: Map<string, unknown>; positionals: string[] } {
  const { flags } = COMMANDS[command];
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: command === 'listen',
      options: Object.fromEntries(
        flags.map((flag) => [flag.name, { type: flag.value === undefined ? ('boolean' as const) : ('string' as const), multiple: flag.multiple === true, ...(flag.short === undefined ? {} : { short: flag.short }) }]),
      ),
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = (error as Error).message;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
      throw new UsageError(`unknown flag ${flag} for ${command}; see mcp-rx-streams ${command} --help`);
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`${command} takes no arguments besides flags; see mcp-rx-streams ${command} --help`);
    throw new UsageError(message.split('\n')[0]!);
  }
  const values = new Map<string, unknown>();
  for (const flag of flags) {
    const given = (parsed.values as Record<string, string | boolean | (string | boolean)[] | undefined>)[flag.name];
    if (given === undefined) continue;
    const parse = (text: string | boolean) => (flag.parse === undefined || typeof text === 'boolean' ? text : flag.parse(text, flag.name));
    values.set(flag.name, Array.isArray(given) ? given.map(parse) : parse(given));
  }
  return { values, positionals: parsed.positionals };
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** Flags that are the command's own, not options of `startReferenceServer`. */
const CLI_ONLY = new Set(['demo', 'stdio', 'redis-timeout', 'metrics-port', 'metrics-host', 'admin-token', 'log-level', 'log-format', 'workers', 'help']);

/**
 * The `serve` flags that mean nothing on stdio: the HTTP listener and its requests (a pipe has no
 * address, no headers, no token, no browser, no request body to time), and the legacy HTTP
 * sessions (on a channel the channel is the session: no ids to evict, no GET stream to resume) with
 * the fleet that shares them.
 */
const HTTP_ONLY = [
  'port', 'host', 'token-secret', 'trust-proxy', 'cors-origins', 'body-timeout', 'metrics-port', 'metrics-host', 'admin-token',
  'session-idle-timeout', 'session-grace-period', 'replay-buffer-size', 'max-sessions', 'max-sessions-per-principal', 'reconnect-delay',
  'redis', 'node-id', 'watch-lease-ttl', 'redis-timeout', 'workers',
];
const FLEET_ONLY = ['node-id', 'watch-lease-ttl', 'redis-timeout'];
const METRICS_ONLY = ['metrics-host', 'admin-token'];

async function serve(argv: string[]): Promise<void> {
  const { values } = read('serve', argv);
  if (values.get('help') === true) return void process.stdout.write(helpText('serve'));
  const options: Record<string, unknown> = { dir: './demo-data', host: '127.0.0.1', port: 3000 };
  for (const flag of SERVE_FLAGS) {
    if (values.has(flag.name) && !CLI_ONLY.has(flag.name)) options[flag.option ?? camel(flag.name)] = values.get(flag.name);
  }
  if (values.get('cors-origins') === '*' && values.has('token-secret')) {
    throw new UsageError('--cors-origins * cannot go with --token-secret: list the origins of the pages that may send tokens');
  }
  if (values.get('stdio') === true) {
    const http = HTTP_ONLY.find((name) => values.has(name));
    if (http !== undefined) throw new UsageError(`--${http} applies to the HTTP server only; it cannot go with --stdio`);
  }
  const redis = values.get('redis') as string | undefined;
  if (redis === undefined) {
    const orphan = FLEET_ONLY.find((name) => values.has(name));
    if (orphan !== undefined) throw new UsageError(`--${orphan} needs --redis URL`);
  }
  if (!values.has('metrics-port')) {
    const orphan = METRICS_ONLY.find((name) => values.has(name));
    if (orphan !== undefined) throw new UsageError(`--${orphan} needs --metrics-port N`);
  }
  const dir = path.resolve(options.dir as string);
  const found = await stat(dir).catch(() => undefined);
  if (found === undefined && values.get('demo') !== true) {
    throw new UsageError(`--dir ${options.dir as string} does not exist; create it, or add --demo to create it with sample files`);
  }
  if (found !== undefined && !found.isDirectory()) throw new UsageError(`--dir ${options.dir as string} is not a directory`);
  // With --redis the server starts at once and the fleet connects in the background.
  if (redis !== undefined) options.redisConnectTimeout = 0;
  if (values.get('stdio') === true) return serveStdio(options, { level: values.get('log-level') as LogLevel | undefined, format: values.get('log-format') as LogFormat | undefined });
  const workers = values.get('workers') as number | undefined;
  if (workers !== undefined && workers > 1 && values.has('metrics-port')) {
    throw new UsageError('--metrics-port cannot go with --workers: each worker would answer /metrics with its own figures on the shared port');
  }

  // Logs go to stderr (stdout has the one line that says the server is up, and the metrics URL).
  const { cliLogger } = await import('./cliLog.js');
  const { logTo } = await import('./logTo.js');
  const logger = cliLogger((values.get('log-level') as LogLevel | undefined) ?? 'info', (values.get('log-format') as LogFormat | undefined) ?? 'pretty');
  const stopLogging = logTo(logger);
  if (workers !== undefined && workers > 1) {
    return cluster.isPrimary ? serveMachine(options, workers, values.get('redis-timeout') as number | undefined, logger, stopLogging) : serveWorker(options, logger);
  }
  options.logger = logger;
  const { startReferenceServer } = await import('./reference/server.js');
  const server = await startReferenceServer(options as ReferenceServerOptions);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const closers: (() => Promise<void>)[] = [() => server.close()];
  let fleetLog: { stop(): void } | undefined;
  const stop = stopOnce(logger, stopLogging, (why) => {
    // A shutdown is not an outage: nothing more is said about Redis.
    fleetLog?.stop();
    logger.info({ event: 'stopping', why, streams: server.endpoint.stats.streams }, `stopping (${why}): every open stream gets its closing frames (reason shutdown)`);
    return Promise.all(closers.map((close) => close())).then(() => undefined);
  });
  // Before the line that says the server is up: a supervisor (or a test) that stops the server as
  // soon as it reads it must find the handler, not the default action that kills the process.
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  say(`mcp-rx-streams listening on ${server.url}`);
  const { logStart } = await import('./cliStart.js');
  logStart(logger, server, { dir: path.resolve(options.dir as string), tokens: options.tokenSecret !== undefined });

  const metricsPort = values.get('metrics-port') as number | undefined;
  if (metricsPort !== undefined) {
    try {
      const adminToken = values.get('admin-token') as string | undefined;
      const metrics = await serveMetrics(server, (values.get('metrics-host') as string | undefined) ?? '127.0.0.1', metricsPort, adminToken, logger);
      closers.push(metrics.close);
      say(`metrics on ${metrics.url}`);
      logger.info({ event: 'metrics', url: metrics.url }, `Prometheus metrics on ${metrics.url}`);
      if (adminToken !== undefined) {
        const base = metrics.url.replace(/\/metrics$/, '');
        logger.info({ event: 'admin', streams: `${base}/streams`, revoke: `${base}/revoke` }, `admin endpoints on ${base}: GET /streams, POST /revoke (Authorization: Bearer <--admin-token>)`);
      }
    } catch (error) {
      await server.close();
      throw error;
    }
  }
  if (server.fleet !== undefined) {
    const { logFleet } = await import('./reference/fleetLog.js');
    fleetLog = logFleet(server.fleet, redis!, logger, {
      timeout: values.get('redis-timeout') as number | undefined,
      giveUp: (message) => {
        logger.error({ event: 'fatal' }, message);
        stop(1, 'Redis unreachable');
      },
    });
  }
}

/**
 * The process's one way out, taken once: `close(why)` (which logs what it stops, and why: the
 * signal, or what went wrong), then `stopped` and exit `code`, or exit 1 if closing failed.
 */
function stopOnce(logger: CliLogger, stopLogging: () => void, close: (why: string) => Promise<void>): (code: number, why: string) => void {
  let stopping = false;
  return (code, why) => {
    if (stopping) return;
    stopping = true;
    close(why).then(
      () => {
        logger.info({ event: 'stopped' }, 'stopped');
        stopLogging();
        process.exit(code);
      },
      (error: unknown) => {
        logger.error({ event: 'stopped', err: error }, 'stopped with an error while closing');
        process.exit(1);
      },
    );
  };
}

/**
 * `serve --workers N` in the primary: the machine's shared state and N workers on one port (see
 * `adapters/reference/primary.ts`). stdout says where it listens, as one process does; the log
 * (stderr) says what happens to the workers (`cluster: …`) and, with `--redis`, to the fleet.
 * SIGINT/SIGTERM stop every worker gracefully (their streams get their closing frames), then the
 * primary, exit code 0.
 */
async function serveMachine(options: Record<string, unknown>, workers: number, redisTimeout: number | undefined, logger: CliLogger, stopLogging: () => void): Promise<void> {
  const { startReferencePrimary } = await import('./reference/primary.js');
  const redis = options.redis as string | undefined;
  const machine = await startReferencePrimary({ ...(options as object), workers, dir: options.dir as string, say: (line) => logger.info({ event: 'cluster' }, line) });
  let fleetLog: { stop(): void } | undefined;
  const stop = stopOnce(logger, stopLogging, (why) => {
    fleetLog?.stop();
    logger.info({ event: 'stopping', why }, `stopping (${why}): every worker closes its streams with their closing frames (reason shutdown)`);
    return machine.close();
  });
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  process.stdout.write(`mcp-rx-streams listening on ${machine.url}\n`);
  logger.info({ event: 'listening', url: machine.url, workers, dir: path.resolve(options.dir as string) }, `${workers} workers serve ${path.resolve(options.dir as string)} on ${machine.url}`);
  if (machine.fleet !== undefined) {
    const { logFleet } = await import('./reference/fleetLog.js');
    fleetLog = logFleet(machine.fleet, redis!, logger, {
      timeout: redisTimeout,
      giveUp: (message) => {
        logger.error({ event: 'fatal' }, message);
        stop(1, 'Redis unreachable');
      },
    });
  }
}

/**
 * `serve --workers N` in a worker: the reference server on the machine's parts (the primary holds
 * Redis, if any). It says nothing on stdout (the primary does); its log lines go to stderr, as the
 * primary's. Stops like one process on SIGINT/SIGTERM.
 */
async function serveWorker(options: Record<string, unknown>, logger: CliLogger): Promise<void> {
  const { redis: _redis, nodeId: _nodeId, watchLeaseTtl: _ttl, redisConnectTimeout: _timeout, ...own } = options;
  const { startReferenceServer } = await import('./reference/server.js');
  const server = await startReferenceServer({ ...own, cluster: true, logger } as ReferenceServerOptions);
  const stop = () => server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/**
 * `serve --stdio`: the reference server over this process's stdin and stdout. stdout carries
 * JSON-RPC only, so everything the command says goes to stderr. Ends with exit code 0 when the host
 * closes stdin (every stream ended, every slot released by then), or on SIGINT/SIGTERM after every
 * listen got its closing frames.
 */
async function serveStdio(options: Record<string, unknown>, log: { readonly level: LogLevel | undefined; readonly format: LogFormat | undefined }): Promise<void> {
  const { dir, host: _host, port: _port, ...rest } = options;
  // Logs go to stderr, as on HTTP: stdout carries JSON-RPC only.
  const { cliLogger } = await import('./cliLog.js');
  const { logTo } = await import('./logTo.js');
  const logger = cliLogger(log.level ?? 'info', log.format ?? 'pretty');
  const stopLogging = logTo(logger);
  const { startReferenceStdio } = await import('./reference/stdio.js');
  const server = await startReferenceStdio({ ...rest, dir: dir as string, logger });
  const stop = (code: number, why: string) => {
    logger.info({ event: 'stopping', why }, `stopping (${why}): every open stream gets its closing frames (reason shutdown)`);
    server.close().then(
      // stdout may still hold the closing frames: exit once it has taken them.
      () => {
        stopLogging();
        process.stdout.write('', () => process.exit(code));
      },
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop(0, 'SIGINT'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM'));
  logger.info({ event: 'listening', dir: path.resolve(dir as string), transport: 'stdio' }, `serving ${path.resolve(dir as string)} on stdio`);
  await server.session.closed;
  stop(0, 'stdin closed');
}

/** Serves the endpoint's Prometheus metrics on `http://host:port/metrics`, with prom-client's process metrics. */
async function serveMetrics(server: ReferenceServer, host: string, port: number, adminToken: string | undefined, logger: CliLogger): Promise<{ url: string; close: () => Promise<void> }> {
  const { collectMetrics } = await import('./metrics/index.js');
  const { requirePeer } = await import('./peer.js');
  const { answerHeaders, whenParsed } = await import('./http/node.js');
  const prom = requirePeer<typeof import('prom-client')>('prom-client', 'serve --metrics-port');
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const bridge = collectMetrics(registry, server.endpoint);
  // Without --admin-token there are no admin endpoints at all: /streams and /revoke are 404 like any other path.
  const admin = adminToken === undefined ? undefined : (await import('./admin.js')).adminRoutes(server.endpoint, adminToken, logger);
  // Only POST /revoke reads a body: any other request answered while its body is still coming closes its connection (whenParsed, answerHeaders).
  const http_ = http.createServer({ requestTimeout: 10_000, headersTimeout: 10_000 }, (req, res) => {
    if (admin?.(req, res) === true) return;
    if ((req.url ?? '/').split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      whenParsed(req, () => res.writeHead(404, answerHeaders(req, { 'Content-Type': 'text/plain' })).end('not found: metrics are at GET /metrics\n'));
      return;
    }
    registry.metrics().then(
      (text) => whenParsed(req, () => res.writeHead(200, answerHeaders(req, { 'Content-Type': registry.contentType })).end(req.method === 'HEAD' ? undefined : text)),
      (error: unknown) => whenParsed(req, () => res.writeHead(500, answerHeaders(req, { 'Content-Type': 'text/plain' })).end(`${String(error)}\n`)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http_.once('error', (error: NodeJS.ErrnoException) =>
      reject(new RunError(`--metrics-port ${port}: cannot listen on ${host}:${port} (${error.code ?? error.message})`)),
    );
    http_.listen(port, host, () => resolve());
  });
  const address = http_.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        bridge.close();
        http_.close(() => resolve());
        http_.closeAllConnections();
      }),
  };
}

async function watch(argv: string[]): Promise<void> {
  const { values, positionals } = read('listen', argv);
  if (values.get('help') === true) return void process.stdout.write(helpText('listen'));
  if (positionals.length !== 1) throw new UsageError('listen needs exactly one URL, e.g. mcp-rx-streams listen http://127.0.0.1:3000/mcp --resources');
  let url: URL;
  try {
    url = new URL(positionals[0]!);
  } catch {
    throw new UsageError(`listen URL is not a valid URL: ${JSON.stringify(positionals[0])}`);
  }
  const notifications: Record<string, unknown> = {};
  if (values.get('tools') === true) notifications.toolsListChanged = true;
  if (values.get('prompts') === true) notifications.promptsListChanged = true;
  if (values.get('resources') === true) notifications.resourcesListChanged = true;
  if (values.has('resource')) notifications.resourceSubscriptions = values.get('resource');
  const given = values.get('id') as string | undefined;
  const id = given === undefined ? 1 : /^\d+$/.test(given) ? Number(given) : given;
  const token = values.get('token') as string | undefined;
  // Notifications go to stdout, one JSON line each; what the user should know about them to stderr.
  const note = (text: string) => process.stderr.write(`mcp-rx-streams: ${text}\n`);
  for (const text of relativeUriNotes((values.get('resource') as string[] | undefined) ?? [])) note(text);
  // The client (undici) is loaded only by this command.
  const { listen } = await import('./client.js');
  let acknowledged = false;
  let reason: string | undefined;
  let result = false;
  let interrupted = false;
  await new Promise<void>((resolve, reject) => {
    const subscription = listen({ url, id, notifications, ...(token === undefined ? {} : { token }) }).subscribe({
      next: (message) => {
        if (!('method' in message)) {
          // The listen result: the server ended the stream on purpose (the client completes next).
          result = true;
          return;
        }
        process.stdout.write(`${JSON.stringify(message)}\n`);
        const params = (message as { params?: Record<string, unknown> }).params ?? {};
        if (message.method === 'notifications/subscriptions/acknowledged' && !acknowledged) {
          acknowledged = true;
          for (const text of acknowledgmentNotes(notifications, params.notifications)) note(text);
        } else if (message.method === 'notifications/cancelled') {
          reason = typeof params.reason === 'string' ? params.reason : undefined;
        }
      },
      error: reject,
      complete: resolve,
    });
    process.once('SIGINT', () => {
      interrupted = true;
      subscription.unsubscribe();
      resolve();
    });
  });
  if (interrupted) return;
  // Exit code 0 only when the server shut down; any other end is worth a script's attention.
  const { message, code } = closeNote(reason, result);
  note(message);
  process.exitCode = code;
}


async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'listen':
      return watch(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(TOP_HELP);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; use serve or listen (mcp-rx-streams --help)`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`mcp-rx-streams: ${message}\n`);
  process.exit(error instanceof UsageError || error instanceof InvalidOptionError ? 2 : 1);
});
