// The gateway's names for upstream resources: one documented, reversible rewrite that carries the
// upstream's name, so that a client and an operator can tell where a resource comes from.
import { InvalidOptionError } from '../../lib/errors.js';

/** The scheme of every URI the gateway gives an upstream's resource: `upstream:`. */
export const UPSTREAM_URI_SCHEME = 'upstream:';

const PREFIX = `${UPSTREAM_URI_SCHEME}//`;

/** An upstream's name: a DNS label in lower case (1 to 63 of `a-z`, `0-9`, `-`, neither first nor last a `-`). */
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The gateway's URI for `uri` of the upstream `name`: `upstream://<name>/<uri>`, the upstream's URI
 * kept verbatim after the name and one `/`.
 *
 * The rewrite is a string operation, so it is exact both ways (matching stays exact, DESIGN M4): the
 * upstream `notes`' `file:///srv/notes/today.md` is the gateway's
 * `upstream://notes/file:///srv/notes/today.md`, and {@link splitUpstreamUri} gives back the name and
 * the URI, character for character, whatever the URI holds (`?`, `#`, `%`-escapes, another
 * `upstream://`). The name is a DNS label, so the rewritten URI has a valid authority.
 *
 * @example
 * upstreamUri('notes', 'file:///srv/notes/today.md'); // 'upstream://notes/file:///srv/notes/today.md'
 * @param name the upstream's name (see {@link upstreamName}).
 * @param uri the upstream's own URI of the resource.
 * @see splitUpstreamUri
 */
export function upstreamUri(name: string, uri: string): string {
  return `${PREFIX}${name}/${uri}`;
}

/**
 * The upstream's name and its own URI of a gateway URI made by {@link upstreamUri}; `undefined` for
 * any other URI (the gateway's own resources, a malformed name).
 *
 * @example
 * splitUpstreamUri('upstream://notes/file:///srv/notes/today.md'); // { name: 'notes', uri: 'file:///srv/notes/today.md' }
 * splitUpstreamUri('file:///srv/notes/today.md');                  // undefined
 * @param uri a URI a client named.
 * @see upstreamUri
 */
export function splitUpstreamUri(uri: string): { readonly name: string; readonly uri: string } | undefined {
  if (!uri.startsWith(PREFIX)) return undefined;
  const slash = uri.indexOf('/', PREFIX.length);
  if (slash === -1) return undefined;
  const name = uri.slice(PREFIX.length, slash);
  return NAME.test(name) ? { name, uri: uri.slice(slash + 1) } : undefined;
}

/**
 * `value`, checked to be an upstream's name: a DNS label in lower case, e.g. `notes`, `crm-eu`.
 * @throws InvalidOptionError naming `label` otherwise.
 */
export function upstreamName(label: string, value: unknown): string {
  if (typeof value === 'string' && NAME.test(value)) return value;
  throw new InvalidOptionError(label, "an upstream name: 1 to 63 lower-case letters, digits and '-', not starting or ending with '-' (e.g. 'notes')", value);
}
