import { deepStrictEqual, strictEqual } from 'node:assert';
import { test } from 'uvu';
import { SseParser, parseSse, type ParsedSseEvent } from '../../adapters/sseParser.js';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Feeds the chunks to a fresh parser and returns what it reported. */
function run(chunks: ReadonlyArray<Uint8Array | string>): { events: ParsedSseEvent[]; comments: string[] } {
  const events: ParsedSseEvent[] = [];
  const comments: string[] = [];
  const parser = new SseParser(
    (e) => events.push(e),
    (c) => comments.push(c),
  );
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return { events, comments };
}

// A stream that exercises every rule at once: BOM, all three line endings, comments,
// multi-byte characters (2, 3 and 4 bytes), multi-line data, id persistence, retry.
const SAMPLE =
  '\uFEFF: hello\r\n' +
  'retry: 2500\r\n' +
  '\r\n' +
  'event: message\r\n' +
  'id: 1\r\n' +
  'data: {"jsonrpc":"2.0","method":"a","params":{"t":"é€😀"}}\r\n' +
  '\r\n' +
  ':\r' +
  'data: line one\r' +
  'data:line two\r' +
  '\r' +
  'event: custom\n' +
  'id: 2\n' +
  'data:  spaced\n' +
  'unknown: field\n' +
  '\n' +
  'data: last\r\n' +
  '\r\n';

const SAMPLE_EVENTS: ParsedSseEvent[] = [
  { event: 'message', data: '{"jsonrpc":"2.0","method":"a","params":{"t":"é€😀"}}', id: '1', retry: 2500 },
  { event: 'message', data: 'line one\nline two', id: '1' },
  { event: 'custom', data: ' spaced', id: '2' },
  { event: 'message', data: 'last', id: '2' },
];
const SAMPLE_COMMENTS = [' hello', ''];

test('parses the sample stream in one piece', () => {
  const { events, comments } = run([utf8(SAMPLE)]);
  deepStrictEqual(events, SAMPLE_EVENTS);
  deepStrictEqual(comments, SAMPLE_COMMENTS);
});

test('a chunk boundary at every byte position gives the same events', () => {
  const bytes = utf8(SAMPLE);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const { events, comments } = run([bytes.subarray(0, cut), bytes.subarray(cut)]);
    deepStrictEqual(events, SAMPLE_EVENTS, `cut at byte ${cut}`);
    deepStrictEqual(comments, SAMPLE_COMMENTS, `cut at byte ${cut}`);
  }
});

test('two chunk boundaries at every pair of byte positions give the same events', () => {
  const bytes = utf8(SAMPLE);
  for (let a = 0; a <= bytes.length; a += 3) {
    for (let b = a; b <= bytes.length; b++) {
      const { events } = run([bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)]);
      deepStrictEqual(events, SAMPLE_EVENTS, `cuts at bytes ${a} and ${b}`);
    }
  }
});

test('one byte at a time gives the same events', () => {
  const bytes = utf8(SAMPLE);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) chunks.push(bytes.subarray(i, i + 1));
  deepStrictEqual(run(chunks).events, SAMPLE_EVENTS);
});

test('a string chunk boundary at every position gives the same events', () => {
  for (let cut = 0; cut <= SAMPLE.length; cut++) {
    deepStrictEqual(run([SAMPLE.slice(0, cut), SAMPLE.slice(cut)]).events, SAMPLE_EVENTS, `cut at ${cut}`);
  }
});

test('LF, CR, CRLF and mixed line endings are equivalent', () => {
  const expected: ParsedSseEvent[] = [
    { event: 'x', data: 'a\nb', id: '9' },
    { event: 'message', data: 'c', id: '9' },
  ];
  for (const [name, eol] of [
    ['LF', '\n'],
    ['CR', '\r'],
    ['CRLF', '\r\n'],
  ] as const) {
    const text = ['event: x', 'id: 9', 'data: a', 'data: b', '', 'data: c', '', ''].join(eol);
    deepStrictEqual(parseSse(text), expected, name);
  }
  deepStrictEqual(parseSse('event: x\rid: 9\r\ndata: a\ndata: b\r\r\ndata: c\n\r'), expected, 'mixed');
});

test('a CR at the end of a chunk and an LF at the start of the next make one line break', () => {
  // Were the LF taken for a second, empty line, "a" would be dispatched on its own.
  deepStrictEqual(run(['data: a\r', '\ndata: b\r\n\r\n']).events, [{ event: 'message', data: 'a\nb', id: undefined }]);
  deepStrictEqual(run(['data: a\r', '', new Uint8Array(0), '\ndata: b\r', '\n\r', '\n']).events, [
    { event: 'message', data: 'a\nb', id: undefined },
  ]);
  // ... whereas a CR followed by CR really is a blank line.
  deepStrictEqual(run(['data: a\r', '\rdata: b\r\r']).events, [
    { event: 'message', data: 'a', id: undefined },
    { event: 'message', data: 'b', id: undefined },
  ]);
});

test('a leading BOM is stripped once, even split across chunks', () => {
  deepStrictEqual(parseSse('\uFEFFdata: a\n\n'), [{ event: 'message', data: 'a', id: undefined }]);
  const bytes = utf8('\uFEFFdata: a\n\n');
  deepStrictEqual(run([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)]).events, [
    { event: 'message', data: 'a', id: undefined },
  ]);
  // A second BOM is part of the field name "\uFEFFdata", an unknown field: nothing dispatched.
  deepStrictEqual(parseSse('\uFEFF\uFEFFdata: a\n\n'), []);
  // A BOM later in the stream is not special either.
  deepStrictEqual(parseSse('data: a\n\n\uFEFFdata: b\n\n'), [{ event: 'message', data: 'a', id: undefined }]);
});

test('data lines are joined with LF; one leading space is removed, not more', () => {
  deepStrictEqual(parseSse('data: a\ndata:\ndata:  b\ndata:c\n\n'), [{ event: 'message', data: 'a\n\n b\nc', id: undefined }]);
  deepStrictEqual(parseSse('data: \n\n'), [{ event: 'message', data: '', id: undefined }]);
  deepStrictEqual(parseSse('data:: x\n\n'), [{ event: 'message', data: ': x', id: undefined }]);
});

test('a field name without a colon has an empty value', () => {
  deepStrictEqual(parseSse('data\n\n'), [{ event: 'message', data: '', id: undefined }]);
  deepStrictEqual(parseSse('data\ndata\n\n'), [{ event: 'message', data: '\n', id: undefined }]);
  deepStrictEqual(parseSse('event\ndata: x\n\n'), [{ event: 'message', data: 'x', id: undefined }]);
  deepStrictEqual(parseSse('id: 4\ndata: x\n\nid\ndata: y\n\n'), [
    { event: 'message', data: 'x', id: '4' },
    { event: 'message', data: 'y', id: '' },
  ]);
});

test('field names match exactly: a longer, shorter or differently cased name is ignored', () => {
  deepStrictEqual(parseSse('idx: 9\ni: 8\nID: 7\nevents: e\nEvent: e\ndatas: x\nDATA: y\nretryy: 5\ndata: a\n\n'), [
    { event: 'message', data: 'a', id: undefined },
  ]);
});

test('a block without data is not dispatched, and its event type does not leak', () => {
  deepStrictEqual(parseSse('event: custom\n\n'), []);
  deepStrictEqual(parseSse('event: custom\n\ndata: y\n\n'), [{ event: 'message', data: 'y', id: undefined }]);
  deepStrictEqual(parseSse('\n\n\n'), []);
});

test('comments are reported verbatim and never dispatch', () => {
  const { events, comments } = run([':\r\n', ': ping\r\n', '::x\n', 'data: a\n', ': inside\n', '\n']);
  deepStrictEqual(comments, ['', ' ping', ':x', ' inside']);
  deepStrictEqual(events, [{ event: 'message', data: 'a', id: undefined }]);
});

test('id persists across events; an id containing NUL is ignored', () => {
  deepStrictEqual(parseSse('id: 1\ndata: a\n\ndata: b\n\nid: 2\0x\ndata: c\n\nid: 3\n\ndata: d\n\n'), [
    { event: 'message', data: 'a', id: '1' },
    { event: 'message', data: 'b', id: '1' },
    { event: 'message', data: 'c', id: '1' },
    // An id in a block without data still sets the last event ID.
    { event: 'message', data: 'd', id: '3' },
  ]);
});

test('retry takes only ASCII digits and is reported once, on the next event', () => {
  deepStrictEqual(parseSse('retry: 1000\ndata: a\n\ndata: b\n\n'), [
    { event: 'message', data: 'a', id: undefined, retry: 1000 },
    { event: 'message', data: 'b', id: undefined },
  ]);
  deepStrictEqual(parseSse('retry: 3000\n\ndata: a\n\n'), [{ event: 'message', data: 'a', id: undefined, retry: 3000 }]);
  for (const bad of ['-1', '10a', '1.5', '', ' 5', '٣']) {
    deepStrictEqual(parseSse(`retry: ${bad}\ndata: a\n\n`), [{ event: 'message', data: 'a', id: undefined }], `retry: ${bad}`);
  }
  deepStrictEqual(parseSse('retry: 0\ndata: a\n\n'), [{ event: 'message', data: 'a', id: undefined, retry: 0 }]);
});

test('multi-byte characters split at every byte decode intact; invalid bytes become U+FFFD', () => {
  const bytes = utf8('data: é€😀\n\n');
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) {
      deepStrictEqual(
        run([bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)]).events,
        [{ event: 'message', data: 'é€😀', id: undefined }],
        `cuts at ${a}, ${b}`,
      );
    }
  }
  deepStrictEqual(parseSse(new Uint8Array([...utf8('data: '), 0xff, 0x41, 0x0a, 0x0a])), [
    { event: 'message', data: '\uFFFDA', id: undefined },
  ]);
});

test('an unterminated event at the end of the stream is discarded', () => {
  deepStrictEqual(parseSse('data: a'), []);
  deepStrictEqual(parseSse('data: a\n'), []);
  deepStrictEqual(parseSse('data: a\n\ndata: b\r\n'), [{ event: 'message', data: 'a', id: undefined }]);
});

test('end() readies the parser for a new stream and keeps the last event ID', () => {
  const events: ParsedSseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  parser.push('id: 5\ndata: half');
  parser.push(utf8('\n'));
  parser.end();
  parser.push('\uFEFFdata: b\n\n');
  parser.end();
  deepStrictEqual(events, [{ event: 'message', data: 'b', id: '5' }]);
});

test('a long line split into many chunks is assembled once', () => {
  const payload = 'x'.repeat(100_000);
  const text = `data: ${payload}\n\n`;
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 7) chunks.push(text.slice(i, i + 7));
  const { events } = run(chunks);
  strictEqual(events.length, 1);
  strictEqual(events[0]!.data, payload);
});

test('many events in one chunk are all dispatched in order', () => {
  let text = '';
  for (let i = 0; i < 1000; i++) text += `id: ${i}\ndata: ${i}\n\n`;
  const events = parseSse(text);
  strictEqual(events.length, 1000);
  events.forEach((e, i) => deepStrictEqual(e, { event: 'message', data: String(i), id: String(i) }));
});

test.run();
