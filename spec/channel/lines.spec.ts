// Byte-exact specs of the stdio framing: LineSplitter on its own, and serveStdio's bytes on a pipe.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { PassThrough } from 'node:stream';
import { test } from 'uvu';
import type { OversizedMessage } from '../../adapters/channel/channel.js';
import { LineSplitter, serveStdio } from '../../adapters/channel/stdio.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { Hub } from '../../lib/hub.js';
import { until } from '../helpers/channel.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

function split(chunks: (string | Buffer)[], max = 100): { lines: (string | OversizedMessage)[]; splitter: LineSplitter } {
  const splitter = new LineSplitter(max);
  const lines: (string | OversizedMessage)[] = [];
  for (const chunk of chunks) splitter.push(typeof chunk === 'string' ? bytes(chunk) : chunk, (line) => lines.push(line instanceof Uint8Array ? Buffer.from(line).toString('utf8') : line));
  return { lines, splitter };
}

test('LineSplitter: a message is the bytes before \\n, across any chunking; \\r\\n and empty lines tolerated', () => {
  const text = '{"a":1}\n{"b":"é€😀"}\r\n\n\n{"c":3}\n';
  const whole = split([text]).lines;
  deepStrictEqual(whole, ['{"a":1}', '{"b":"é€😀"}', '{"c":3}']);
  const raw = bytes(text);
  // Every split point, multibyte characters cut in two included.
  for (let at = 1; at < raw.length; at++) deepStrictEqual(split([raw.subarray(0, at), raw.subarray(at)]).lines, whole, `split at ${at}`);
  // One byte at a time.
  deepStrictEqual(split(Array.from(raw, (byte) => Buffer.from([byte]))).lines, whole);
  // An unfinished line is held, not emitted.
  const { lines, splitter } = split(['{"a":1}\n{"b"']);
  deepStrictEqual(lines, ['{"a":1}']);
  strictEqual(splitter.pending, 4);
});

test('LineSplitter: a line longer than the limit is reported once with its size and never held past the limit; the next line is fine', () => {
  const long = 'x'.repeat(250);
  const splitter = new LineSplitter(100);
  const lines: (string | OversizedMessage)[] = [];
  const emit = (line: Uint8Array | OversizedMessage) => lines.push(line instanceof Uint8Array ? Buffer.from(line).toString('utf8') : line);
  for (let i = 0; i < long.length; i += 30) {
    splitter.push(bytes(long.slice(i, i + 30)), emit);
    ok(splitter.pending <= 100, `held ${splitter.pending}`);
  }
  strictEqual(splitter.pending, 0, 'what was held is let go once the line is over the limit');
  splitter.push(bytes('\n{"ok":true}\n'), emit);
  deepStrictEqual(lines, [{ oversized: 250 }, '{"ok":true}']);
  // Exactly at the limit is fine; one byte more is not.
  deepStrictEqual(split(['y'.repeat(100) + '\n' + 'z'.repeat(101) + '\n'], 100).lines, ['y'.repeat(100), { oversized: 101 }]);
});

test('serveStdio: exact bytes on the pipe — one line per message, -32700 for bytes that are not UTF-8 or not JSON, -32600 for an oversized line, and the channel goes on', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, maxBodyBytes: 200, capabilities: { tools: true } });
  const input = new PassThrough();
  const output = new PassThrough();
  let written = '';
  output.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
  const session = serveStdio(endpoint, { input, output });
  input.write(Buffer.from([0xff, 0xfe, 0x0a]));
  input.write('not json\n');
  input.write(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'p'.repeat(300)}"}}\n`);
  input.write('{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}\n');
  await until(() => written.split('\n').length >= 5, 'four lines');
  hub.notifyToolsChanged();
  await until(() => written.split('\n').length >= 6, 'five lines');
  strictEqual(
    written,
    [
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the message is not valid UTF-8"}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the message is not valid JSON"}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"message exceeds 200 bytes"}}',
      '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}',
      '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}',
      '',
    ].join('\n'),
  );
  // No keep-alive comment ever reaches a message channel; stdin's end ends everything.
  input.end();
  await session.closed;
  strictEqual(endpoint.stats.slots, 0);
  endpoint.close();
  hub.close();
});

test.run();
