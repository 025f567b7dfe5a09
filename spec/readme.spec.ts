// Issue 24, item 6: the README where a newcomer first connects. The first node:http server snippet
// has the official 2.x client beside it, with the `versionNegotiation` it needs to use listen; the
// Bun and Deno recipes are separate blocks (one runtime each); every server the README's code
// starts binds 127.0.0.1, and the text says why. (That every block compiles is
// spec/snippets.spec.ts.)
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The ```ts blocks of the README, in order, each with the prose that follows it up to the next block. */
const blocks = [...README.matchAll(/^```ts\n([\s\S]*?)^```\n([\s\S]*?)(?=^```|$(?![\s\S]))/gm)].map((match) => ({ code: match[1]!, after: match[2]! }));

test('the first node:http server snippet is followed by the official 2.x client, with versionNegotiation, connecting to it', () => {
  const first = blocks.findIndex((block) => /http\.createServer\(nodeHandler\(endpoint\)\)/.test(block.code));
  assert.ok(first >= 0, 'the node:http snippet was found');
  const client = blocks[first + 1]!.code;
  assert.match(client, /from '@modelcontextprotocol\/client'/, `the next block is not the official client:\n${client}`);
  assert.match(client, /versionNegotiation: \{ mode: \{ pin: '2026-07-28' \} \}/);
  assert.match(client, /client\.listen\(/);
  assert.match(client, /http:\/\/127\.0\.0\.1:3000\/mcp/, 'it connects to the server of the snippet before it');
});

test('Bun and Deno are two blocks: no block calls both Bun.serve and Deno.serve', () => {
  const bun = blocks.filter((block) => block.code.includes('Bun.serve('));
  const deno = blocks.filter((block) => block.code.includes('Deno.serve('));
  assert.equal(bun.length, 1);
  assert.equal(deno.length, 1);
  assert.notEqual(bun[0], deno[0], 'one block runs on both runtimes');
});

test('every server the README starts binds 127.0.0.1, and the text says why (loopback unless authenticated)', () => {
  // A server's listen(port…) or serve({…}) up to the end of the call; not an MCP client's listen({ filter }).
  const starts = blocks.flatMap((block) =>
    [...block.code.matchAll(/(?<!client)\.listen\(\s*(?:\d|Number\(|port|\{)|serve\(\{/g)].map((match) => block.code.slice(match.index, block.code.indexOf(');', match.index) + 2)),
  );
  assert.ok(starts.length >= 8, `the server starts were found: ${starts.length}`);
  for (const call of starts) assert.match(call, /'127\.0\.0\.1'/, `binds every interface: ${call}`);
  const first = blocks.find((block) => /http\.createServer\(nodeHandler\(endpoint\)\)/.test(block.code))!;
  const why = blocks[blocks.indexOf(first) + 1]!.after + first.after;
  assert.match(why, /127\.0\.0\.1[^.]*loopback|loopback[^.]*127\.0\.0\.1/, 'one sentence says why the examples bind loopback');
  assert.match(why, /`authenticate`/, 'and when to bind wider');
});

test.run();
