// The gateway's namespacing of upstream resource URIs (issue 34): `upstream://<name>/<uri>`, exact
// both ways whatever the URI holds; and the command lines of `stdio:` upstreams.
import { deepStrictEqual, strictEqual, throws } from 'node:assert';
import fc from 'fast-check';
import { test } from 'uvu';
import { SERVED_UPSTREAMS, upstreamFromText } from '../../adapters/upstream/served.js';
import { commandWords } from '../../adapters/upstream/stdio.js';
import { splitUpstreamUri, upstreamName, upstreamUri } from '../../adapters/upstream/uri.js';
import { InvalidOptionError } from '../../lib/errors.js';

const names = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,20}[a-z0-9])?$/);

test('the rewrite carries the upstream name and the URI verbatim: upstream://notes/file:///srv/notes/today.md', () => {
  strictEqual(upstreamUri('notes', 'file:///srv/notes/today.md'), 'upstream://notes/file:///srv/notes/today.md');
  deepStrictEqual(splitUpstreamUri('upstream://notes/file:///srv/notes/today.md'), { name: 'notes', uri: 'file:///srv/notes/today.md' });
  // The URI keeps its query, fragment, escapes, and even another upstream's rewrite (a gateway behind a gateway).
  for (const uri of ['https://x/y?q=1#f', 'db://shop/Product%2F42', 'upstream://inner/file:///a', '', 'no scheme at all', 'ü/😀']) {
    deepStrictEqual(splitUpstreamUri(upstreamUri('crm-eu', uri)), { name: 'crm-eu', uri });
  }
});

test('reversible for every name and every string (property)', () => {
  fc.assert(
    fc.property(names, fc.string({ unit: 'binary' }), (name, uri) => {
      deepStrictEqual(splitUpstreamUri(upstreamUri(name, uri)), { name, uri });
    }),
    { numRuns: 2_000, seed: 34 },
  );
});

test('anything else is no upstream URI: the gateway serves its own resources beside them', () => {
  for (const uri of ['file:///srv/a', 'upstream:notes/x', 'upstream://notes', 'upstream://Notes/x', 'upstream://-x/y', 'upstream:///x', 'UPSTREAM://notes/x']) {
    strictEqual(splitUpstreamUri(uri), undefined, uri);
  }
});

test('an upstream name is a lower-case DNS label, with a message that says so', () => {
  strictEqual(upstreamName('name', 'notes-2'), 'notes-2');
  for (const bad of ['', 'Notes', 'a_b', '-a', 'a-', 'a'.repeat(64), 'a.b', 7]) {
    throws(() => upstreamName('name', bad), (error: unknown) => error instanceof InvalidOptionError && /^name must be an upstream name: 1 to 63 lower-case letters/.test(error.message));
  }
});

test('commandWords splits a command line as a shell would, expanding nothing', () => {
  deepStrictEqual(commandWords('python -m notes --dir "/srv/my notes"'), ['python', '-m', 'notes', '--dir', '/srv/my notes']);
  deepStrictEqual(commandWords(`node  'a b'  c\\ d "e \\"f\\" \\\\" '' $HOME`), ['node', 'a b', 'c d', 'e "f" \\', '', '$HOME']);
  for (const [bad, what] of [
    ['', 'a command line naming a program'],
    ['node "x', 'a command line whose double quotes are closed'],
    ["node 'x", 'a command line whose single quotes are closed'],
    ['node x\\', 'a command line without a trailing backslash'],
  ] as const) {
    throws(() => commandWords(bad, '--upstream'), (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith(`--upstream must be ${what}, got`));
  }
});

test('--upstream NAME=URL: an http(s) endpoint or stdio: and a command line; a list in code takes those and option objects', () => {
  deepStrictEqual(upstreamFromText('--upstream', 'notes=http://127.0.0.1:4000/mcp'), { name: 'notes', url: 'http://127.0.0.1:4000/mcp' });
  deepStrictEqual(upstreamFromText('--upstream', 'crm=stdio:python -m crm --dir "/srv/my data"'), { name: 'crm', command: ['python', '-m', 'crm', '--dir', '/srv/my data'] });
  // The URL keeps any '=' it has: the name ends at the first.
  deepStrictEqual(upstreamFromText('--upstream', 'q=https://x/mcp?a=b'), { name: 'q', url: 'https://x/mcp?a=b' });
  for (const bad of ['notes', '=http://x/mcp', 'Notes=http://x/mcp', 'notes=ftp://x', 'notes=stdio:', 'notes=stdio:node "x']) {
    throws(() => upstreamFromText('--upstream', bad), (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith('--upstream must be NAME=URL: a name'), bad);
  }
  const list = SERVED_UPSTREAMS.upstream;
  deepStrictEqual(list.check('upstream', 'a=http://x/mcp'), [{ name: 'a', url: 'http://x/mcp' }]);
  deepStrictEqual(list.check('upstream', ['a=http://x/mcp', { name: 'b', command: 'node b.js' }]), [{ name: 'a', url: 'http://x/mcp' }, { name: 'b', command: 'node b.js' }]);
  // What a repeated flag collects (each read gives a list of one).
  deepStrictEqual(list.check('upstream', [list.read('--upstream', 'a=http://x/mcp'), list.read('--upstream', 'b=stdio:node b.js')]), [{ name: 'a', url: 'http://x/mcp' }, { name: 'b', command: ['node', 'b.js'] }]);
  throws(() => list.check('upstream', [7]), (error: unknown) => error instanceof InvalidOptionError && error.message === "upstream[0] must be an upstream: 'NAME=URL' or { name, url } or { name, command }, got 7");
  deepStrictEqual([SERVED_UPSTREAMS.ackTimeout.default, SERVED_UPSTREAMS.failMode.default], [5_000, 'open']);
});

test.run();
