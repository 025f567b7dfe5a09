// The README's "Add to an existing MCP server" snippets are the example files the SDK specs run
// (examples/sdk-server2.ts, examples/sdk1-event-store.ts): the same code, with the examples'
// header comment left out and their relative imports written as package imports. Checked here so
// that the README cannot drift from what is tested.
import { strictEqual } from 'node:assert';
import { readFile } from 'node:fs/promises';
import { test } from 'uvu';

const ROOT = new URL('../../', import.meta.url);

/** An example file as the README shows it. */
async function asInReadme(file: string): Promise<string> {
  const lines = (await readFile(new URL(file, ROOT), 'utf8')).split('\n');
  const start = lines.findIndex((line) => !line.startsWith('//'));
  return lines
    .slice(start)
    .join('\n')
    .replaceAll("from '../index.js'", "from 'mcp-rx-streams'")
    .replaceAll("from '../adapters/sdk/index.js'", "from 'mcp-rx-streams/sdk'");
}

/** The first fenced ts block after `heading` in the README. */
async function blockAfter(heading: string): Promise<string> {
  const readme = await readFile(new URL('README.md', ROOT), 'utf8');
  const at = readme.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`README has no heading ${heading}`);
  const match = /\n```ts\n([\s\S]*?)```\n/.exec(readme.slice(at));
  if (match === null) throw new Error(`no ts block after ${heading}`);
  return match[1]!;
}

test('README "In front of @modelcontextprotocol/server 2.x" is examples/sdk-server2.ts', async () => {
  strictEqual(await blockAfter('### In front of `@modelcontextprotocol/server` 2.x'), await asInReadme('examples/sdk-server2.ts'));
});

test('README "Beside @modelcontextprotocol/sdk 1.x" is examples/sdk1-event-store.ts', async () => {
  strictEqual(await blockAfter('### Beside `@modelcontextprotocol/sdk` 1.x'), await asInReadme('examples/sdk1-event-store.ts'));
});

test.run();
