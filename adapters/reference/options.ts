// The options of the reference server (`startReferenceServer`, `serve`): its own (where it serves),
// and every value option of what it is built from, each declared once in the table of the file that
// uses it (the files, the listen streams, the caps, the protocol core, HTTP, the legacy sessions,
// the fleet). It accepts exactly those, so `serve` can pass every flag on by its option's name.
import { InvalidOptionError } from '../../lib/errors.js';
import { LISTEN_OPTIONS, STREAM_LIMITS, type ListenOptions, type StreamLimits } from '../../lib/options.js';
import { option, readOptions, type AnyOptionTable, type OptionTable } from '../../lib/optionTable.js';
import { boolean, implementing, options as validOptions } from '../../lib/validate.js';
import { SESSION_OPTIONS, type SessionOptions } from '../../protocol/legacy/sessionOptions.js';
import { PROTOCOL_SETTINGS, type ProtocolSettings } from '../../protocol/options.js';
import { HTTP_SETTINGS, type HttpSettings } from '../http/options.js';
import type { Logger } from '../logTo.js';
import { SERVED_UPSTREAMS, type ServedUpstreams, type UpstreamList } from '../upstream/served.js';
import { AUTH_SETTINGS, type AuthSettings, checkAuthSettings } from './auth.js';
import { FILE_SETTINGS, type FileSettings } from './fileOptions.js';
import { FLEET_SETTINGS, type FleetSettings } from './fleet.js';

/** Where the reference server serves, and to whom. */
export interface ReferenceSettings {
  /** The directory served as resources; created with demo files when missing. Defaults to `./demo-data`. */
  readonly dir: string;
  /** TCP port; 0 picks a free one. Defaults to 3000. */
  readonly port: number;
  /** Interface to bind. Defaults to `127.0.0.1`. */
  readonly host: string;
  /** HS256 secret: when set, every request needs `Authorization: Bearer <JWT>` (`sub` principal, `exp`, `scope`). */
  readonly tokenSecret?: string;
}

/**
 * {@link ReferenceSettings}, declared once (see `LISTEN_OPTIONS`): checked by `startReferenceServer`,
 * and `serve` flags.
 * @internal
 */
export const REFERENCE_SETTINGS: OptionTable<ReferenceSettings> = {
  dir: option.text({
    placeholder: 'DIR',
    rule: { nonEmpty: true, what: 'a non-empty string (a directory path)' },
    default: './demo-data',
    description: 'directory served as MCP resources (files under private/ need the private scope); must exist unless --demo',
  }),
  port: option.port({ default: 3000, description: 'port to listen on' }),
  host: option.text({
    placeholder: 'HOST',
    rule: { nonEmpty: true, what: 'a non-empty string (an interface address or host name)' },
    default: '127.0.0.1',
    description: 'interface to bind; on a loopback address foreign Host/Origin headers get 403',
  }),
  tokenSecret: option.text({
    placeholder: 'SECRET',
    rule: { nonEmpty: true, what: 'a non-empty string (the HS256 secret)' },
    shownDefault: 'none (no authentication)',
    description: 'require Authorization: Bearer <HS256 JWT> signed with SECRET: sub (required) is the principal, exp ends its streams, scope "private" grants private/',
  }),
};

/** The value options the reference server passes to its endpoint, as {@link McpEndpoint} takes them. */
export interface EndpointSettings extends ListenOptions, StreamLimits, ProtocolSettings, HttpSettings, SessionOptions {}

/**
 * Options of {@link startReferenceServer}: where it serves ({@link ReferenceSettings}), the files'
 * ({@link FileSettings}: a file over `maxReadBytes` gets the JSON-RPC error `RESOURCE_TOO_LARGE`
 * with `data: {uri, size, maxReadBytes}`), the endpoint's value options as in {@link McpEndpoint}
 * (listen options, stream limits, `maxBodyBytes`, `capacityRetryAfter`, `emptyListen`,
 * `bodyTimeout`, `trustProxy`, `corsOrigins` (on a loopback `host` its origins also pass the
 * foreign-Origin check), the legacy session options) and, with `redis`, the fleet's
 * ({@link FleetSettings}).
 */
export interface ReferenceServerOptions
  extends Partial<ReferenceSettings>,
    AuthSettings,
    Partial<FileSettings>,
    Partial<EndpointSettings>,
    Partial<FleetSettings>,
    Omit<Partial<ServedUpstreams>, 'upstream'> {
  /**
   * Other MCP servers served beside the folder (docs/gateway.md): each `NAME=URL` (`URL` http(s) or
   * `stdio:COMMAND…`) or `UpstreamOptions`, its resources as `upstream://NAME/<its URI>`, its change
   * notifications in both eras; `ackTimeout`, `failMode` and `requestTimeout` are the gateway's. Default: none.
   */
  readonly upstream?: UpstreamList;
  /**
   * Run as one worker of a machine's `node:cluster` whose primary runs `clusterPrimary()` (what
   * `serve --workers N` does): the hub, the caps, the legacy sessions and their replay logs are the
   * machine's (`mcp-rx-streams/cluster`), one worker at a time watches the folder, and every answer
   * says which worker gave it (`X-Served-By: <worker node id>`). Not with `redis`: with `--workers`,
   * the primary is the machine's node of the fleet. Default `false`.
   */
  readonly cluster?: boolean;
  /**
   * Where the server says what only it knows (a pino logger, or any `Logger`): the served
   * directory gone (`warn`) and back (`info`), and problems with `tools.json` / `prompts.json`
   * (`warn`). Streams, sessions and errors are on the diagnostics channels: add `logTo(logger)`
   * for those. Default: none, nothing is logged.
   */
  readonly logger?: Logger;
}

/** The tables of the endpoint's value options, which the reference server passes on. */
const ENDPOINT_TABLES: readonly AnyOptionTable[] = [LISTEN_OPTIONS, STREAM_LIMITS, PROTOCOL_SETTINGS, HTTP_SETTINGS, SESSION_OPTIONS];

/**
 * Every table of the options {@link startReferenceServer} takes that are values, each with a `serve`
 * flag per option (but those marked `flag: false`).
 * @internal
 */
export const REFERENCE_TABLES: readonly AnyOptionTable[] = [REFERENCE_SETTINGS, AUTH_SETTINGS, FILE_SETTINGS, SERVED_UPSTREAMS, ...ENDPOINT_TABLES, FLEET_SETTINGS];

/** Every option name {@link ReferenceServerOptions} has: any other key is refused. */
const REFERENCE_OPTIONS: readonly string[] = [...REFERENCE_TABLES.flatMap((table) => Object.keys(table)), 'cluster', 'logger'];

/** {@link ReferenceServerOptions} with every default filled in and every value checked. @internal */
export interface ResolvedReferenceOptions extends ReferenceSettings, FleetSettings {
  /** Who may call it beside `tokenSecret`: an authorization server's tokens. */
  readonly auth: AuthSettings;
  readonly files: FileSettings;
  /** The upstreams served beside the folder, and the gateway's settings. */
  readonly upstreams: ServedUpstreams;
  readonly endpoint: EndpointSettings;
  readonly cluster: boolean;
  readonly logger: Logger | undefined;
}

/**
 * Checks the options of {@link startReferenceServer} before anything is created, opened or
 * connected, and fills in the defaults.
 * @throws InvalidOptionError naming `startReferenceServer options` when `options` is not an object,
 *   else the option that is unknown or unusable: `dir`, `host` or `tokenSecret` not a non-empty
 *   string, `port` not from 0 to 65535, `redis` not a `redis://` URL, `nodeId` or `watchLeaseTtl`
 *   without `redis`, `cluster` with `redis`, a file, listen, session or HTTP option as
 *   `FileResources` and {@link McpEndpoint} check it.
 * @internal
 */
export function resolveReferenceOptions(options: ReferenceServerOptions): ResolvedReferenceOptions {
  validOptions('startReferenceServer options', options, REFERENCE_OPTIONS, { like: "{ dir: './demo-data', port: 3000 }" });
  const own = readOptions(REFERENCE_SETTINGS, options);
  const auth = readOptions(AUTH_SETTINGS, options);
  checkAuthSettings(auth, own.tokenSecret);
  const fleet = readOptions(FLEET_SETTINGS, options);
  if (fleet.redis === undefined && (options.nodeId !== undefined || options.watchLeaseTtl !== undefined)) {
    throw new InvalidOptionError(options.nodeId === undefined ? 'watchLeaseTtl' : 'nodeId', 'used only together with redis', options.nodeId ?? options.watchLeaseTtl);
  }
  const cluster = options.cluster === undefined ? false : boolean('cluster', options.cluster);
  if (cluster && fleet.redis !== undefined) {
    throw new InvalidOptionError('cluster', "used without redis (a cluster's workers reach the fleet through their primary: give the primary the fleet's parts)", options.cluster);
  }
  if (options.logger !== undefined) implementing('logger', options.logger, ['info', 'warn', 'error', 'debug'], 'a Logger (pino, or any object with info, warn, error and debug)');
  const files = readOptions(FILE_SETTINGS, options);
  const endpoint = Object.assign({}, ...ENDPOINT_TABLES.map((table) => readOptions(table, options))) as EndpointSettings;
  const upstreams = readOptions(SERVED_UPSTREAMS, options);
  return { ...own, ...fleet, auth, files, upstreams, endpoint, cluster, logger: options.logger };
}
