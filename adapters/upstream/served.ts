// Upstreams as a server's options take them (the reference server's `upstream`, `serve --upstream
// NAME=URL`), declared once beside the gateway's own settings.
import { InvalidOptionError } from '../../lib/errors.js';
import { option, type OptionTable } from '../../lib/optionTable.js';
import { httpUrl } from '../../lib/validate.js';
import { GATEWAY_SETTINGS, type GatewaySettings } from './options.js';
import { commandWords } from './stdio.js';
import type { UpstreamOptions } from './upstream.js';
import { upstreamName } from './uri.js';

/**
 * An upstream written as `NAME=URL`, what `serve --upstream` takes: `URL` is the upstream's MCP
 * endpoint (`http://…`, `https://…`) or `stdio:` and the command line that launches it (split into
 * words as a shell would, nothing expanded). Its other settings take their defaults.
 *
 * @example
 * upstreamFromText('--upstream', 'notes=http://127.0.0.1:4000/mcp'); // { name: 'notes', url: 'http://127.0.0.1:4000/mcp' }
 * upstreamFromText('--upstream', 'crm=stdio:python -m crm'); // { name: 'crm', command: ['python', '-m', 'crm'] }
 * @throws InvalidOptionError naming `label` when it is not `NAME=URL` with a name and a URL of those kinds.
 */
export function upstreamFromText(label: string, text: string): UpstreamOptions {
  const what = "NAME=URL: a name (lower-case letters, digits, '-'), then an http(s) URL or stdio:COMMAND, e.g. notes=http://127.0.0.1:4000/mcp";
  const equals = typeof text === 'string' ? text.indexOf('=') : -1;
  if (equals <= 0) throw new InvalidOptionError(label, what, text);
  const given = text.slice(equals + 1);
  try {
    const name = upstreamName(label, text.slice(0, equals));
    if (given.startsWith('stdio:')) return { name, command: commandWords(given.slice('stdio:'.length)) };
    httpUrl(label, given);
    return { name, url: given };
  } catch {
    throw new InvalidOptionError(label, what, text);
  }
}

/** Upstreams as a server's options take them: one or several, each `NAME=URL` or an {@link UpstreamOptions}. */
export type UpstreamList = string | UpstreamOptions | readonly (string | UpstreamOptions | readonly (string | UpstreamOptions)[])[];

/** `value` as a list of {@link UpstreamOptions} (their own checks are `Upstream`'s). */
function upstreamList(label: string, value: unknown): readonly UpstreamOptions[] {
  const entries = (Array.isArray(value) ? value : [value]).flat();
  return entries.map((entry, index) => {
    const at = Array.isArray(value) ? `${label}[${index}]` : label;
    if (typeof entry === 'string') return upstreamFromText(at, entry);
    if (entry !== null && typeof entry === 'object') return entry as UpstreamOptions;
    throw new InvalidOptionError(at, "an upstream: 'NAME=URL' or { name, url } or { name, command }", entry);
  });
}

/** What a server that serves upstreams beside its own resources is given (the reference server's `upstream`, `ackTimeout`, `failMode`). @internal */
export interface ServedUpstreams extends GatewaySettings {
  /** The upstreams; none: the server serves its own resources only. */
  readonly upstream?: readonly UpstreamOptions[];
}

/**
 * {@link ServedUpstreams}, declared once: `serve --upstream NAME=URL` (repeatable), `--ack-timeout`,
 * `--fail-mode`.
 * @internal
 */
export const SERVED_UPSTREAMS: OptionTable<ServedUpstreams> = {
  upstream: option.custom<readonly UpstreamOptions[]>({
    placeholder: 'NAME=URL',
    shownDefault: 'none',
    description: "serve another MCP server's resources as upstream://NAME/<its URI>, its change notifications in both eras (URL: http(s)://… or stdio:COMMAND…; repeat for several; docs/gateway.md)",
    check: upstreamList,
    read: (label, text) => [upstreamFromText(label, text)],
  }),
  ...GATEWAY_SETTINGS,
};
