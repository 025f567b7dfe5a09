import type { EndpointRequest } from '../../lib/context.js';
import { nonEmptyStrings } from '../../lib/validate.js';

/**
 * The accepted `Host` names of a server bound to a loopback address: `localhost`, `127.0.0.1`
 * and `[::1]`, on any port. Use as `allowedHosts` and `allowedOrigins` to refuse DNS-rebinding
 * requests.
 */
export const localhostHosts: readonly string[] = Object.freeze(['localhost', '127.0.0.1', '[::1]']);

/**
 * Builds the DNS-rebinding check of the `allowedHosts` / `allowedOrigins` options: a function
 * that returns the refusal message for a request with a foreign `Host` or `Origin`, `undefined`
 * for an accepted one. No check at all (`undefined`) when neither option is given.
 * @throws InvalidOptionError naming the option when a list is not an array of non-empty strings.
 * @internal
 */
export function hostCheck(
  allowedHosts: readonly string[] | undefined,
  allowedOrigins: readonly string[] | undefined,
): ((request: EndpointRequest) => string | undefined) | undefined {
  for (const [name, list] of [['allowedHosts', allowedHosts], ['allowedOrigins', allowedOrigins]] as const) if (list !== undefined) nonEmptyStrings(name, list);
  if (allowedHosts === undefined && allowedOrigins === undefined) return undefined;
  const hosts = allowedHosts?.map((entry) => entry.toLowerCase());
  const origins = allowedOrigins?.map((entry) => entry.toLowerCase());
  return (request) => {
    if (hosts !== undefined) {
      const host = request.header('host')?.toLowerCase();
      if (host === undefined || !hosts.some((entry) => entry === host || entry === hostName(host))) {
        return `forbidden: Host ${JSON.stringify(host ?? '')} is not allowed`;
      }
    }
    const origin = request.header('origin')?.toLowerCase();
    if (origins !== undefined && origin !== undefined && !originListed(origins, origin)) {
      return `forbidden: Origin ${JSON.stringify(origin)} is not allowed`;
    }
    return undefined;
  };
}

/**
 * Whether `origin` (lower case) is one of `entries` (lower case), as `allowedOrigins` and
 * `corsOrigins` match: an entry with a scheme (`https://app.example`) exactly, one without
 * (`localhost`, `app.example:8443`) the host name on any scheme and port, or that host and port.
 * @internal
 */
export function originListed(entries: readonly string[], origin: string): boolean {
  let name: string | undefined;
  try {
    name = new URL(origin).host;
  } catch {
    name = undefined;
  }
  return entries.some((entry) => entry === origin || (name !== undefined && (entry === name || entry === hostName(name))));
}

/**
 * The refusal message for a request whose `Host` is not one value, `undefined` for one with a
 * single Host (or none: node:http refuses an HTTP/1.1 request without one itself).
 *
 * RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
 * request message that lacks a Host header field and to any request message that contains more
 * than one Host header field line or a Host header field with an invalid field value." Adapters
 * report every Host line joined with `, ` (node:http itself keeps only the first; Fetch `Headers`
 * join them), so a comma in the value means two lines, or one line that lists two hosts: a proxy
 * in front may route by another of them than the one `allowedHosts` would check.
 * @internal
 */
export function hostFieldError(request: Pick<EndpointRequest, 'header'>): string | undefined {
  const host = request.header('host');
  if (host === undefined || !host.includes(',')) return undefined;
  return `bad request: a request must carry exactly one Host header with one value (RFC 9112, section 3.2); got ${JSON.stringify(host)}`;
}

/** `host:port` → `host`; `[::1]:80` → `[::1]`. */
function hostName(host: string): string {
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(host);
  return match === null ? host : match[1]!;
}
