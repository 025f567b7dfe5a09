// bench/charts.mjs draws the bench's SVG charts from a run's results; bench/harness.mjs splits the
// streams over load-generator processes. Both are plain .mjs scripts outside the package, loaded
// here by URL. No timing is asserted: the fixture below is a results document of the shape
// bench/run.mjs writes, with made-up figures.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';

const charts = await import(new URL('../bench/charts.mjs', import.meta.url).href);
const harness = await import(new URL('../bench/harness.mjs', import.meta.url).href);

const OURS = 'mcp-rx-streams';
const BASE = 'baseline (node:http res.write)';
const LEGACY_BASE = 'legacy baseline (node:http res.write)';
const SDK1 = '@modelcontextprotocol/sdk 1.x';

const fanoutRow = (era: string, peer: string, n: number, fps: number, single: number) => ({
  era,
  peerId: peer,
  peer,
  n,
  k: 100,
  sessions: 1,
  patterns: { batched: { fps, cpuPerFrame: 2, lost: 0, passes: 1, complete: true }, single: { fps: single, cpuPerFrame: 3, lost: 0, passes: 1, complete: true } },
  p50: 10,
  p99: 20 + n / 1000,
  heapPerStream: 8000 + n,
  rssPerStream: 12000,
});

const doc = {
  quick: true,
  patterns: [
    { id: 'batched', batch: 10, label: '10/turn' },
    { id: 'single', batch: 1, label: '1/turn' },
  ],
  config: { slow: { healthy: 100, k: 2000, ms: 500 } },
  summary: {
    fanout: [
      fanoutRow('listen', BASE, 1000, 400_000, 300_000),
      fanoutRow('listen', BASE, 10_000, 250_000, 200_000),
      fanoutRow('listen', OURS, 1000, 500_000, 310_000),
      fanoutRow('listen', OURS, 10_000, 300_000, 210_000),
      fanoutRow('legacy', LEGACY_BASE, 1000, 420_000, 320_000),
      fanoutRow('legacy', SDK1, 1000, 25_000, 20_000),
      { era: 'legacy', peerId: 'ours', peer: OURS, n: 1000, error: 'opened 10/1000 streams' },
    ],
    slow: [
      { peerId: 'baseline', peer: BASE, series: [{ s: 0, heapMB: 0, rssMB: 0 }, { s: 1, heapMB: 30, rssMB: 60 }], events: { publishedS: 1, resumedS: 1.5 } },
      { peerId: 'ours', peer: OURS, series: [{ s: 0, heapMB: 0, rssMB: 0 }, { s: 1, heapMB: 0.3, rssMB: 9 }], events: { publishedS: 1, resumedS: 1.4 } },
    ],
    storm: [
      { era: 'listen', peerId: 'baseline', peer: BASE, n: 1000, k: 1000, frames: 1_000_000, ms: 4000 },
      { era: 'listen', peerId: 'ours', peer: OURS, n: 1000, k: 1000, frames: 1000, ms: 30 },
      { era: 'legacy', peerId: 'sdk-v1', peer: SDK1, n: 1000, k: 1000, frames: 987_654, ms: 40_000 },
    ],
  },
};

const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));

test('every chart of a full results document is specified, each in its own file', () => {
  const specs = charts.chartSpecs(doc);
  assert.deepEqual(
    specs.map((c: { file: string }) => c.file),
    ['throughput.svg', 'heap.svg', 'latency.svg', 'slow-consumer.svg', 'storm.svg'],
  );
});

test('the throughput chart renders as SVG with a series per peer and per publish pattern, the failed row left out', async () => {
  const spec = charts.chartSpecs(doc).find((c: { file: string }) => c.file === 'throughput.svg').spec;
  const svg: string = await charts.renderSvg(spec);
  assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  const labels = texts(svg);
  for (const name of [OURS, BASE, LEGACY_BASE, SDK1, '10/turn (batched)', '1/turn (single)', 'listen streams (2026-07-28)', 'legacy sessions + GET stream (2025-11-25)']) {
    assert.ok(labels.includes(name), `legend or header ${name} in ${JSON.stringify(labels)}`);
  }
  // Listen: 2 peers × 2 N × 2 patterns; legacy: 2 peers × 1 N × 2 patterns (ours failed there).
  const points = spec.hconcat.flatMap((panel: { data: { values: unknown[] } }) => panel.data.values);
  assert.equal(points.length, 12);
  assert.equal(points.filter((p: { era: string; peer: string }) => p.era === 'legacy' && p.peer === OURS).length, 0);
});

test('the slow-consumer chart draws a line per peer and the storm chart a bar per peer with its count', async () => {
  const specs = charts.chartSpecs(doc);
  const slow = texts(await charts.renderSvg(specs.find((c: { file: string }) => c.file === 'slow-consumer.svg').spec));
  assert.ok(slow.includes(OURS) && slow.includes(BASE), JSON.stringify(slow));
  assert.ok(slow.includes('heap + external growth') && slow.includes('RSS growth'), JSON.stringify(slow));
  const storm = texts(await charts.renderSvg(specs.find((c: { file: string }) => c.file === 'storm.svg').spec));
  for (const label of ['1,000,000', '1,000', '987,654', '40,000', OURS, SDK1]) assert.ok(storm.includes(label), `${label} in ${JSON.stringify(storm)}`);
});

test('a results document without a workload gives no chart for it', () => {
  const onlyStorm = { ...doc, summary: { fanout: [], slow: [], storm: doc.summary.storm } };
  assert.deepEqual(
    charts.chartSpecs(onlyStorm).map((c: { file: string }) => c.file),
    ['storm.svg'],
  );
});

test('the load generator splits N streams evenly over its processes, one loopback source address each', () => {
  assert.deepEqual(harness.split(15_000, 2), [7500, 7500]);
  assert.deepEqual(harness.split(5, 3), [2, 2, 1]);
  assert.equal(harness.split(20_001, 3).reduce((a: number, b: number) => a + b, 0), 20_001);
  assert.deepEqual([0, 1, 2].map(harness.sourceAddress), ['127.0.0.1', '127.0.0.2', '127.0.0.3']);
});

test.run();
