// The flags of `mcp-rx-streams serve`: one per option of `startReferenceServer` (read from the tables
// that declare them: adapters/reference/options.ts), passed on by the option's name, and the
// command's own (how it starts the server, its metrics port, its logs); then which of them cannot go
// together.
import { availableParallelism } from 'node:os';
import { InvalidOptionError } from '../../lib/errors.js';
import { option, readOptions, type OptionTable } from '../../lib/optionTable.js';
import { REFERENCE_TABLES, type ReferenceServerOptions } from '../reference/options.js';
import { UsageError } from './errors.js';
import { flagsOf, HELP, kebab, readArgs, type Command } from './flags.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logLevels.js';

/** The options of the `serve` command itself, beside `startReferenceServer`'s. */
export interface ServeCommandOptions {
  /** Create the served directory with sample files when it does not exist. */
  readonly demo?: boolean;
  /** Serve one host over stdin and stdout instead of HTTP. */
  readonly stdio?: boolean;
  /** Worker processes of node:cluster; absent: this one process. */
  readonly workers?: number;
  /** Milliseconds Redis may stay silent after start before the command exits 1; absent: for ever. */
  readonly redisTimeout?: number;
  /** The Prometheus port; absent: none. */
  readonly metricsPort?: number;
  readonly metricsHost: string;
  /** The bearer token of the admin endpoints on the metrics port; absent: none. */
  readonly adminToken?: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
}

const MAX_WORKERS = 1024;

/** `--workers`: `auto` (the machine's available parallelism) or a number of worker processes. */
function workerCount(label: string, text: string): number {
  if (text === 'auto') return availableParallelism();
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > MAX_WORKERS) throw new InvalidOptionError(label, `auto or an integer from 1 to ${MAX_WORKERS} (worker processes)`, text);
  return value;
}

/** `--admin-token`: long enough to guess at no rate; a refused one is not shown, only its length. */
function adminToken(label: string, value: unknown): string {
  if (typeof value === 'string' && value.length >= 16 && !/\s/.test(value)) return value;
  const length = typeof value === 'string' ? `${value.length} characters` : typeof value;
  throw new UsageError(`${label} must be at least 16 characters without whitespace (e.g. openssl rand -hex 24), got ${length}`);
}

/** How the command starts the server (listed first in `--help`). */
const SERVE_START: OptionTable<Pick<ServeCommandOptions, 'demo' | 'stdio' | 'workers'>> = {
  demo: option.toggle({ description: 'create --dir with sample files when it does not exist' }),
  stdio: option.toggle({
    description:
      "serve one host over this process's stdin and stdout (newline-delimited JSON-RPC, both eras) instead of HTTP; everything else is said on stderr, and the process exits 0 when stdin closes. HTTP-only flags are refused",
  }),
  workers: option.custom({
    placeholder: 'N',
    unit: "processes, or auto = the machine's available parallelism",
    shownDefault: '1 (one process)',
    description:
      'serve on N node:cluster workers sharing the port; this process (the primary) shares the hub, the caps, the legacy sessions and their replay logs between them, gives one the folder watch, and starts again a worker that dies (docs/cluster.md); with --redis the machine is one node of the fleet',
    check: (label, value) => workerCount(label, String(value)),
    read: workerCount,
  }),
};

/** How the command is operated: Redis's patience, metrics and admin endpoints, logs (listed last). */
const SERVE_OPERATE: OptionTable<Omit<ServeCommandOptions, 'demo' | 'stdio' | 'workers'>> = {
  redisTimeout: option.milliseconds({
    shownDefault: 'none (wait for ever)',
    description: 'give up with exit code 1 when Redis has not answered for this long after start; only with --redis',
  }),
  metricsPort: option.port({
    shownDefault: 'off',
    description:
      "serve Prometheus metrics on http://METRICS_HOST:N/metrics (needs the prom-client package), and the admin endpoints with --admin-token; with --workers the primary serves the machine's (every worker's, joined)",
  }),
  metricsHost: option.text({
    placeholder: 'HOST',
    rule: { nonEmpty: true, what: 'a non-empty string (an interface address or host name)' },
    default: '127.0.0.1',
    description: 'interface the metrics port binds (loopback unless you expose it on purpose); only with --metrics-port',
  }),
  adminToken: option.custom({
    placeholder: 'TOKEN',
    shownDefault: 'none (no admin endpoints)',
    description:
      'serve GET /streams (the stream snapshot) and POST /revoke {"principal": "..."} on the metrics port, for requests with Authorization: Bearer TOKEN (at least 16 characters); only with --metrics-port',
    check: adminToken,
    read: adminToken,
  }),
  logLevel: option.choice(LOG_LEVELS, {
    placeholder: 'LEVEL',
    default: 'info',
    description: 'least severe log line written to stderr: error | warn | info (streams, sessions, Redis) | debug (each drop, each Redis connection)',
  }),
  logFormat: option.choice(LOG_FORMATS, {
    placeholder: 'FORMAT',
    default: 'pretty',
    description: 'stderr log lines: pretty (one readable line each) | json (pino: one JSON object per line)',
  }),
};

/** `mcp-rx-streams serve`: the command's start flags, every option of the reference server, then the rest of the command's own. */
export const SERVE: Command = {
  name: 'serve',
  usage: 'mcp-rx-streams serve [flags]',
  summary:
    'Runs the reference MCP server: a directory served as resources, its changes pushed to subscriptions/listen streams and legacy GET streams. ' +
    'Prints one line on stdout when it listens (and the metrics URL); logs what it does on stderr.',
  flags: [...flagsOf(SERVE_START), ...REFERENCE_TABLES.flatMap((table) => flagsOf(table, { upstream: { multiple: true } })), ...flagsOf(SERVE_OPERATE), HELP],
  positionals: false,
};

/** The options of {@link ReferenceServerOptions} and of the command, by name. */
type ServeOption = keyof ReferenceServerOptions | keyof ServeCommandOptions;

/**
 * The options that mean nothing on stdio: the HTTP listener and its requests (a pipe has no
 * address, no headers, no token, no browser, no request body to time), and the legacy HTTP
 * sessions (on a channel the channel is the session: no ids to evict, no GET stream to resume or
 * wait for) with the fleet and the machine that share them.
 */
const HTTP_ONLY: readonly ServeOption[] = [
  'port', 'host', 'tokenSecret', 'trustProxy', 'corsOrigins', 'bodyTimeout', 'metricsPort', 'metricsHost', 'adminToken',
  'issuer', 'resource', 'jwksUrl', 'requiredScopes', 'introspectionUrl', 'introspectionClientId', 'introspectionClientSecret',
  'sessionIdleTimeout', 'sessionGracePeriod', 'sessionPruneInterval', 'replayBufferSize', 'subscribeStreamWait', 'maxSessions', 'maxSessionsPerPrincipal', 'reconnectDelay',
  'redis', 'nodeId', 'watchLeaseTtl', 'redisTimeout', 'workers',
];
const FLEET_ONLY: readonly ServeOption[] = ['nodeId', 'watchLeaseTtl', 'redisTimeout'];
const METRICS_ONLY: readonly ServeOption[] = ['metricsHost', 'adminToken'];

/** A `serve` command line, read and checked. */
export interface ServeArgs {
  /** `--help` was given: print it, do nothing else. */
  readonly help: boolean;
  /** The options of `startReferenceServer` given on the command line, by their names (the others take its defaults). */
  readonly server: ReferenceServerOptions;
  /** The command's own, with their defaults. */
  readonly command: ServeCommandOptions;
}

/**
 * Reads a `serve` command line: each flag's value checked as its option's kind reads it, then the
 * flags that cannot go together.
 * @throws UsageError or InvalidOptionError naming the flag (exit code 2).
 */
export function readServe(argv: readonly string[]): ServeArgs {
  const { values } = readArgs(SERVE, argv);
  const given = (name: ServeOption) => values[name] !== undefined;
  const server = Object.fromEntries(Object.entries(values).filter(([name]) => REFERENCE_TABLES.some((table) => name in table))) as ReferenceServerOptions;
  const command = { ...readOptions(SERVE_START, values), ...readOptions(SERVE_OPERATE, values) };
  if (values.help === true) return { help: true, server, command };
  const tokens = given('tokenSecret') ? 'tokenSecret' : given('issuer') ? 'issuer' : undefined;
  if (server.corsOrigins === '*' && tokens !== undefined) {
    throw new UsageError(`--cors-origins * cannot go with --${kebab(tokens)}: list the origins of the pages that may send tokens`);
  }
  const first = (names: readonly ServeOption[]) => names.find(given);
  const http = command.stdio === true ? first(HTTP_ONLY) : undefined;
  if (http !== undefined) throw new UsageError(`--${kebab(http)} applies to the HTTP server only; it cannot go with --stdio`);
  const fleet = given('redis') ? undefined : first(FLEET_ONLY);
  if (fleet !== undefined) throw new UsageError(`--${kebab(fleet)} needs --redis URL`);
  const metrics = given('metricsPort') ? undefined : first(METRICS_ONLY);
  if (metrics !== undefined) throw new UsageError(`--${kebab(metrics)} needs --metrics-port N`);
  return { help: false, server, command };
}
