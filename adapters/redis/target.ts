// Where Redis is: one server, a primary watched by Sentinels, or a Redis Cluster, written as a URL or
// as ioredis options, and checked before anything connects. No ioredis at run time here (types
// only), so that an option table can check a URL without loading it.
import type { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';
import { InvalidOptionError } from '../../lib/errors.js';

/**
 * A Redis Cluster: a few of its nodes (ioredis asks them for the rest, and follows the slots as
 * they move) and, optionally, ioredis `Cluster` options (`redisOptions` for the password or TLS of
 * every node, `natMap`, `dnsLookup`…).
 */
export interface RedisClusterTarget {
  readonly cluster: readonly ClusterNode[];
  readonly clusterOptions?: ClusterOptions;
}

/**
 * Where Redis is; every node of a fleet gives the same.
 * - one server: `redis://[[user]:password@]host[:port][/db]` (`rediss://` for TLS), or ioredis
 *   options (`{ host, port, password }`);
 * - a primary watched by Sentinels, followed across failovers:
 *   `redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<primary name>[/db]` (the
 *   Sentinels' addresses, port 26379 by default; the user and password are the data nodes'; add
 *   `?sentinelPassword=…` (and `sentinelUsername`) when the Sentinels want one; `rediss+sentinel://`
 *   for TLS to both), or ioredis options `{ sentinels: [{ host, port }], name: 'mymaster' }`;
 * - a Redis Cluster: `redis+cluster://[[user]:password@]host[:port][,host[:port]…]` (a few of its
 *   nodes, port 6379 by default; `rediss+cluster://` for TLS), or a {@link RedisClusterTarget}.
 *
 * The `redis+sentinel://` form is the one of Python's redis-sentinel-url, redisvl and Prefect.
 */
export type RedisTarget = string | RedisOptions | RedisClusterTarget;

/** Port of a Sentinel when a `redis+sentinel://` address names none. */
const SENTINEL_PORT = 26379;
/** Port of a cluster node when a `redis+cluster://` address names none. */
const REDIS_PORT = 6379;

const TARGET_EXPECTED = 'a redis:// URL or an ioredis options object';
const SENTINEL_EXAMPLE = "redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster";
const CLUSTER_EXAMPLE = 'redis+cluster://10.0.0.5:6379,10.0.0.6:6379,10.0.0.7:6379';
// scheme://[userinfo@]addresses[/path][?query]; the addresses are comma-separated, so WHATWG URL cannot parse them.
const MULTI_HOST = /^(rediss?)\+(sentinel|cluster):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i;
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * The ioredis settings `target` stands for: a `redis://` URL as it is (ioredis reads it), the
 * `redis+sentinel://` and `redis+cluster://` forms as options.
 * @param label the option's name in messages; defaults to `redis`.
 * @throws InvalidOptionError naming `label` (or the part of it), saying how to write it; a URL is
 *   shown without its password.
 */
export function resolveTarget(target: unknown, label = 'redis'): RedisTarget {
  if (typeof target === 'string') return target === '' ? notATarget(label, target) : resolveUrl(label, target);
  if (target === null || typeof target !== 'object' || Array.isArray(target)) return notATarget(label, target);
  if ('cluster' in target) {
    const { cluster, clusterOptions } = target as RedisClusterTarget;
    if (!Array.isArray(cluster) || cluster.length === 0) {
      throw new InvalidOptionError(`${label}.cluster`, 'a non-empty array of cluster nodes such as [{ host: \'10.0.0.5\', port: 6379 }]', cluster);
    }
    if (clusterOptions !== undefined && (clusterOptions === null || typeof clusterOptions !== 'object')) {
      throw new InvalidOptionError(`${label}.clusterOptions`, 'an object of ioredis Cluster options', clusterOptions);
    }
    return target as RedisClusterTarget;
  }
  const options = target as RedisOptions;
  if (options.sentinels !== undefined) {
    if (!Array.isArray(options.sentinels) || options.sentinels.length === 0) {
      throw new InvalidOptionError(`${label}.sentinels`, "a non-empty array of Sentinel addresses such as [{ host: '10.0.0.5', port: 26379 }]", options.sentinels);
    }
    if (typeof options.name !== 'string' || options.name === '') {
      throw new InvalidOptionError(`${label}.name`, 'the name of the primary the Sentinels watch (their `sentinel monitor <name> …` line), e.g. \'mymaster\'', options.name);
    }
  }
  return options;
}

function notATarget(label: string, value: unknown): never {
  throw new InvalidOptionError(label, TARGET_EXPECTED, value);
}

function resolveUrl(label: string, url: string): RedisTarget {
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined || scheme === 'redis' || scheme === 'rediss') return url;
  const parts = MULTI_HOST.exec(url);
  if (parts === null) {
    const hint = /sentinel/.test(scheme)
      ? `write a Sentinel set as ${SENTINEL_EXAMPLE}`
      : /cluster/.test(scheme)
        ? `write a Redis Cluster as ${CLUSTER_EXAMPLE}`
        : `use redis:// or rediss:// for one server, ${SENTINEL_EXAMPLE} for Sentinel, ${CLUSTER_EXAMPLE} for a Redis Cluster`;
    throw new InvalidOptionError(label, 'a redis://, redis+sentinel:// or redis+cluster:// URL', redactUrl(url), hint);
  }
  const [, base, kind, userinfo, hostList, path = '', query] = parts as unknown as [string, string, 'sentinel' | 'cluster', string | undefined, string, string | undefined, string | undefined];
  const tls = base!.toLowerCase() === 'rediss';
  const sentinel = kind.toLowerCase() === 'sentinel';
  const shown = redactUrl(url);
  const addresses = hostList.split(',').map((address) => parseAddress(label, address, sentinel ? SENTINEL_PORT : REDIS_PORT, shown, sentinel));
  const auth = parseUserinfo(userinfo);
  const params = new URLSearchParams(query ?? '');
  const segments = path.split('/').filter((segment) => segment !== '');
  if (!sentinel) {
    if (segments.length > 0) throw new InvalidOptionError(label, 'a redis+cluster:// URL without a path', shown, `a Redis Cluster has only database 0: write ${CLUSTER_EXAMPLE}`);
    for (const key of params.keys()) throw new InvalidOptionError(label, 'a redis+cluster:// URL without query parameters', shown, `${key} is not read here: pass { cluster: [...], clusterOptions } for more ioredis Cluster options`);
    const redisOptions = { ...auth, ...(tls ? { tls: {} } : {}) };
    return { cluster: addresses, clusterOptions: Object.keys(redisOptions).length === 0 ? {} : { redisOptions } };
  }
  const [name, db, ...rest] = segments.map(decodeURIComponent);
  if (name === undefined || rest.length > 0 || (db !== undefined && !/^[0-9]+$/.test(db))) {
    throw new InvalidOptionError(label, 'a redis+sentinel:// URL whose path is /<primary name>[/<db>]', shown, `write ${SENTINEL_EXAMPLE} (mymaster: the name in the Sentinels' \`sentinel monitor\` line)`);
  }
  const sentinelAuth: { sentinelUsername?: string; sentinelPassword?: string } = {};
  for (const [key, value] of params) {
    if (key === 'sentinelPassword' || key === 'sentinelUsername') sentinelAuth[key] = value;
    else throw new InvalidOptionError(label, 'a redis+sentinel:// URL whose only query parameters are sentinelPassword and sentinelUsername', shown, `${key} is not read here: pass ioredis options { sentinels, name, ... } for more`);
  }
  return {
    sentinels: addresses,
    name,
    ...(db === undefined ? {} : { db: Number(db) }),
    ...auth,
    ...sentinelAuth,
    ...(tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
  };
}

function parseAddress(label: string, address: string, defaultPort: number, shown: string, sentinel: boolean): { host: string; port: number } {
  // host, host:port, [v6], [v6]:port
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::([0-9]{1,5}))?$/i.exec(address);
  const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
  if (match === null || port < 1 || port > 65_535) {
    throw new InvalidOptionError(label, `a list of host[:port] addresses separated by commas`, shown, `"${address}" is not one; write ${sentinel ? SENTINEL_EXAMPLE : CLUSTER_EXAMPLE}`);
  }
  return { host: match[1] ?? match[2]!, port };
}

function parseUserinfo(userinfo: string | undefined): { username?: string; password?: string } {
  if (userinfo === undefined || userinfo === '') return {};
  const colon = userinfo.indexOf(':');
  const username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
  // `redis://:secret@host` is a password without a user (the `default` user), as ioredis reads it.
  return { ...(username === '' ? {} : { username }), ...(password === undefined ? {} : { password }) };
}

/**
 * A URL option naming where Redis is (the reference server's `redis`, `serve --redis`): one of
 * `redis://`, `rediss://`, `redis+sentinel://`, `rediss+sentinel://`, `redis+cluster://` or
 * `rediss+cluster://`, checked as {@link resolveTarget} checks it; returned as given.
 * @throws InvalidOptionError naming `label`, the URL shown without its password.
 */
export function checkRedisUrl(label: string, value: unknown): string {
  const scheme = typeof value === 'string' ? SCHEME.exec(value)?.[1]?.toLowerCase() : undefined;
  if (scheme === undefined || !/^rediss?(\+(sentinel|cluster))?$/.test(scheme)) {
    throw new InvalidOptionError(label, 'a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL', typeof value === 'string' ? redactUrl(value) : value);
  }
  resolveUrl(label, value as string);
  return value as string;
}

/** `url` without its password, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^([^:]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}

