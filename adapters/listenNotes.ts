// What the `mcp-rx-streams listen` command tells its user on stderr: why a stream may stay silent
// (a relative URI, a filter the server honoured nothing of) and why it ended.

/** The filter fields the command can ask for, with the flag that asks. */
const FLAGS: readonly (readonly [field: string, flag: string])[] = [
  ['toolsListChanged', '--tools'],
  ['promptsListChanged', '--prompts'],
  ['resourcesListChanged', '--resources'],
];

/** True for a URI with a scheme (`file:///…`, `https://…`): the only kind a server can match. */
function isAbsoluteUri(uri: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(uri);
}

/** One sentence per `--resource` that is a relative URI, said before the listen is sent. */
export function relativeUriNotes(uris: readonly string[]): string[] {
  return uris
    .filter((uri) => !isAbsoluteUri(uri))
    .map((uri) => `--resource ${uri} is a relative URI: servers match resource URIs exactly, so it will not match any; give the absolute URI (file:///… for the reference server's files)`);
}

/**
 * Sentences about an acknowledgment that honoured less than was asked: the whole request (an empty
 * acknowledgment: the stream will carry nothing), or each field and URI left out.
 * @param asked the filter sent (`params.notifications`).
 * @param acknowledged the `notifications` of the acknowledgment.
 */
export function acknowledgmentNotes(asked: Readonly<Record<string, unknown>>, acknowledged: unknown): string[] {
  const honoured = (acknowledged !== null && typeof acknowledged === 'object' ? acknowledged : {}) as Record<string, unknown>;
  const askedUris = Array.isArray(asked.resourceSubscriptions) ? (asked.resourceSubscriptions as string[]) : [];
  const honouredUris = new Set(Array.isArray(honoured.resourceSubscriptions) ? (honoured.resourceSubscriptions as string[]) : []);
  if (Object.keys(honoured).length === 0) {
    return [
      'the server honoured nothing you asked for (an empty acknowledgment): this stream will carry no notification until it ends. ' +
        'It does not offer what you asked (its capabilities), or it refused every URI: unknown, not readable with your token, or relative.',
    ];
  }
  const notes: string[] = [];
  for (const [field, flag] of FLAGS) if (asked[field] === true && honoured[field] !== true) notes.push(`not honoured: ${flag} (the server does not offer it)`);
  for (const uri of askedUris) {
    if (!honouredUris.has(uri)) notes.push(`not honoured: --resource ${uri} (unknown to the server, not readable with your token, or relative)`);
  }
  return notes;
}

/**
 * What to say when the stream ended, and the exit code: 0 when the server shut down (or the user
 * stopped the command), 1 when the server ended the stream for any other reason, or the connection
 * ended without the listen result.
 * @param reason the `reason` of the server's `notifications/cancelled`, if it sent one.
 * @param result whether the listen result arrived (the server ended the stream on purpose).
 */
export function closeNote(reason: string | undefined, result: boolean): { readonly message: string; readonly code: number } {
  if (!result) return { message: 'the connection ended without the listen result: the server or a proxy cut the stream; open a new listen', code: 1 };
  if (reason === 'shutdown') return { message: 'the server ended the stream: shutdown (it is stopping)', code: 0 };
  if (reason === undefined) return { message: 'the server ended the stream without saying why (it sends the listen result only: --close-notice result-only)', code: 1 };
  return { message: `the server ended the stream: ${reason}${EXPLAINED[reason] === undefined ? '' : ` (${EXPLAINED[reason]})`}`, code: 1 };
}

const EXPLAINED: Readonly<Record<string, string>> = Object.freeze({
  max_lifetime: 'it reached the longest life the server gives a stream; open a new listen',
  token_expired: 'your token expired; get a new one and open a new listen',
  idle_timeout: 'no notification for the idle timeout; open a new listen if you still need one',
  superseded: 'a newer listen of yours took its place (the per-principal cap)',
  revoked: "the server's operator or application ended your streams",
  empty_filter: 'it honoured nothing you asked for',
});
