import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';

/**
 * Which proxies in front of the server are believed when they say who the client is (the
 * endpoint's `trustProxy` option), named as Express and Fastify name it:
 * - a number of hops: that many proxies stand in front of the server, so the client is the entry
 *   that many steps back along the connection and `X-Forwarded-For` (`1`: the address the one
 *   proxy that connects to the server saw). `0` trusts none.
 * - addresses: the proxies' own addresses, CIDR ranges (`10.0.0.0/8`, `fd00::/8`) or the names
 *   `loopback`, `linklocal`, `uniquelocal`; an array, or one string separated by commas. The client
 *   is the nearest address on the path that is not one of them.
 * - a function `(address, hop)`: true when the hop at `address` is a trusted proxy (`hop` 0 is the
 *   connection's peer, 1 the last `X-Forwarded-For` entry, and so on).
 */
export type TrustProxy = number | string | readonly string[] | ((address: string, hop: number) => boolean);

/** The client address of a request: the connection's peer, or what trusted proxies forwarded. */
export type ClientAddress = (request: EndpointRequest) => string | undefined;

const EXPECTED = 'a number of proxy hops (0 or more), a list of proxy addresses, CIDR ranges or loopback/linklocal/uniquelocal, or a function (address, hop) => boolean';

/**
 * Compiles the `trustProxy` option into the function that finds a request's client address, or
 * `undefined` when nothing is trusted (the default, `0`, an empty list): then the client is the
 * connection's peer and `X-Forwarded-For` is never read.
 *
 * The header is walked by `proxy-addr` (what Express uses): from the connection's peer back along
 * `X-Forwarded-For`, each hop is kept only while the one before it is trusted, so an entry a client
 * wrote itself (the left part of the header, ahead of what trusted proxies appended) is never taken.
 * RFC 7239 `Forwarded` is not read: a proxy rewrites the header it writes and passes any other
 * through from the client, so believing both would let a client behind an `X-Forwarded-For` proxy
 * pick its address with `Forwarded`, and the other way round.
 *
 * @example
 * const resolve = clientAddress('loopback');
 * resolve({ remoteAddress: '127.0.0.1', header: (name) => (name === 'x-forwarded-for' ? '198.51.100.7, 203.0.113.9' : undefined), method: 'POST', body: undefined });
 * // '203.0.113.9': the loopback proxy is trusted, the hop before it is not
 * @param trustProxy see {@link TrustProxy}; `true` (trust every hop) is refused.
 * @throws InvalidOptionError naming `trustProxy` for a value it cannot use.
 * @internal
 */
export function clientAddress(trustProxy: TrustProxy | undefined): ClientAddress | undefined {
  const trust = compileTrust(trustProxy);
  if (trust === undefined) return undefined;
  return (request) => {
    const peer = request.remoteAddress;
    const forwarded = request.header('x-forwarded-for');
    if (peer === undefined || peer === '' || forwarded === undefined) return peer;
    // proxy-addr reads a node request; these are the only two fields it looks at.
    const address = proxyaddr({ headers: { 'x-forwarded-for': forwarded }, socket: { remoteAddress: peer } } as unknown as IncomingMessage, trust);
    return withoutPort(address);
  };
}

/**
 * `request` as the endpoint reads it once `trustProxy` named its client: the same request with
 * `remoteAddress` replaced (an adapter's other fields kept, its `header` called on itself).
 * @internal
 */
export function withClientAddress(request: EndpointRequest, resolve: ClientAddress): EndpointRequest {
  return { ...request, method: request.method, header: (name) => request.header(name), body: request.body, remoteAddress: resolve(request) };
}

function compileTrust(trustProxy: TrustProxy | undefined): ((address: string, hop: number) => boolean) | undefined {
  if (trustProxy === undefined) return undefined;
  if ((trustProxy as unknown) === true) {
    // Express's `true` takes the left-most X-Forwarded-For entry: whatever the client sent.
    throw new InvalidOptionError(
      'trustProxy',
      `${EXPECTED}; true is refused because it lets every client choose its own address, and with it its principal (whose caps, streams and sessions it would share or evict)`,
      trustProxy,
    );
  }
  if (typeof trustProxy === 'function') return trustProxy;
  if (typeof trustProxy === 'number') {
    if (!Number.isSafeInteger(trustProxy) || trustProxy < 0) throw new InvalidOptionError('trustProxy', EXPECTED, trustProxy);
    const hops = trustProxy;
    return hops === 0 ? undefined : (_address, hop) => hop < hops;
  }
  const list = typeof trustProxy === 'string' ? trustProxy.split(',').map((entry) => entry.trim()) : trustProxy;
  if (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string' && entry !== '')) throw new InvalidOptionError('trustProxy', EXPECTED, trustProxy);
  if (list.length === 0) return undefined;
  try {
    return proxyaddr.compile([...list]);
  } catch (error) {
    throw new InvalidOptionError('trustProxy', `${EXPECTED} (${(error as Error).message})`, trustProxy);
  }
}

/**
 * Some load balancers append `address:port` to `X-Forwarded-For`; the port would make every
 * connection its own principal, so it is dropped (`203.0.113.9:4711`, `[2001:db8::1]:4711`).
 */
function withoutPort(address: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(address);
  if (v4 !== null) return v4[1]!;
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::\d+)?$/.exec(address);
  return v6 === null ? address : v6[1]!;
}
