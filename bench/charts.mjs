// The bench's pictures: SVG charts drawn from a run's results (the `summary` that bench/run.mjs
// writes to results.json), rendered headless with Vega-Lite → Vega → view.toSVG() (no browser, no
// canvas: text widths are estimated). bench/run.mjs calls writeCharts after every run; to redraw
// the charts of an earlier run:
//   node bench/charts.mjs bench/results/full/results.json [out-dir]
//
// Charts (each one only when its workload ran):
//   throughput.svg      delivered frames/s vs N (log), a line per peer, dashed per publish
//                       pattern; listen streams and legacy sessions side by side
//   heap.svg            server heap per idle stream (listen) / session + GET stream (legacy) vs N
//   latency.svg         p99 fan-out latency vs N (both axes log)
//   slow-consumer.svg   server heap+external and RSS growth over time during the slow-consumer
//                       run with one stalled stream, a line per peer (the session with the
//                       median heap growth)
//   storm.svg           the storm: frames the clients received and time until the last, per peer
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as vega from 'vega';
import { compile } from 'vega-lite';

// One colour per peer in every chart; ours stands out.
const PALETTE = [
  ['mcp-rx-streams', '#d62728'],
  ['baseline (node:http res.write)', '#222222'],
  ['legacy baseline (node:http res.write)', '#8c8c8c'],
  ['ceiling (node:http, socket.write per frame)', '#ff7f0e'],
  ['legacy ceiling (node:http, socket.write per frame)', '#ffbb78'],
  ['@modelcontextprotocol/server 2.x', '#1f77b4'],
  ['@modelcontextprotocol/sdk 1.x', '#17becf'],
  ['better-sse Channel', '#2ca02c'],
];
const ERA_TITLE = { listen: 'listen streams (2026-07-28)', legacy: 'legacy sessions + GET stream (2025-11-25)' };

function colour(labels) {
  const known = PALETTE.filter(([label]) => labels.includes(label));
  const others = labels.filter((label) => !PALETTE.some(([l]) => l === label));
  const extra = ['#9467bd', '#8c564b', '#e377c2', '#bcbd22', '#7f7f7f'];
  return {
    field: 'peer',
    type: 'nominal',
    title: 'peer',
    scale: { domain: [...known.map(([l]) => l), ...others], range: [...known.map(([, c]) => c), ...others.map((_, i) => extra[i % extra.length])] },
    legend: { orient: 'bottom', columns: 2, labelLimit: 320 },
  };
}

const finite = (v) => typeof v === 'number' && Number.isFinite(v);
const FONT = { config: { font: 'sans-serif', view: { stroke: '#ddd' }, axis: { labelFontSize: 11, titleFontSize: 12, labelLimit: 320 }, title: { fontSize: 14, anchor: 'start' } } };

/** A line chart over N (log), one panel per era present (ticks at the N that were run). */
function overN(values, { title, y, yTitle, yLog = false, dash }) {
  const eras = ['listen', 'legacy'].filter((era) => values.some((v) => v.era === era));
  const colours = colour([...new Set(values.map((v) => v.peer))]);
  const panel = (era) => {
    const mine = values.filter((v) => v.era === era);
    const ns = [...new Set(mine.map((v) => v.n))].sort((a, b) => a - b);
    const x = {
      field: 'n',
      type: 'quantitative',
      title: `N (${era === 'legacy' ? 'sessions' : 'streams'}, log)`,
      // Just around the N that ran, ticks at each of them, short labels (1k, 10k, 15k).
      scale: { type: 'log', nice: false, domain: [ns[0] / 1.4, ns[ns.length - 1] * 1.4] },
      axis: { values: ns, format: '~s', labelAngle: 0, labelOverlap: false },
    };
    const yEnc = { field: y, type: 'quantitative', title: yTitle, scale: yLog ? { type: 'log' } : { zero: true }, axis: { format: yLog ? ',~r' : ',~s' } };
    const tooltip = [{ field: 'peer' }, { field: 'n' }, { field: y, format: ',.3~f' }, ...(dash ? [{ field: 'pattern' }] : [])];
    return {
      title: { text: ERA_TITLE[era] ?? era, fontSize: 13, anchor: 'middle' },
      width: 360,
      height: 260,
      data: { values: mine },
      layer: [
        {
          mark: { type: 'line', strokeWidth: 2 },
          encoding: {
            x,
            y: yEnc,
            color: colours,
            ...(dash && { strokeDash: { field: 'pattern', type: 'nominal', title: 'publish pattern', legend: { orient: 'bottom', symbolStrokeWidth: 2, symbolSize: 500 } } }),
            tooltip,
          },
        },
        { mark: { type: 'point', filled: true, size: 36 }, encoding: { x, y: yEnc, color: colours, tooltip } },
      ],
    };
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, offset: 14 },
    hconcat: eras.map(panel),
    resolve: { scale: { x: 'independent' } },
    ...FONT,
  };
}

/** The chart specs a results document gives: [{file, title, spec}]. */
export function chartSpecs(doc) {
  const summary = doc.summary ?? {};
  const mode = doc.quick ? ' (--quick)' : '';
  const patterns = Object.fromEntries((doc.patterns ?? []).map((p) => [p.id, `${p.label} (${p.id})`]));
  const charts = [];
  const rows = (summary.fanout ?? []).filter((r) => !r.error);

  const fps = rows.flatMap((r) =>
    Object.entries(r.patterns ?? {})
      .filter(([, p]) => finite(p.fps))
      .map(([id, p]) => ({ era: r.era, peer: r.peer, n: r.n, pattern: patterns[id] ?? id, fps: Math.round(p.fps) })),
  );
  if (fps.length > 0) {
    charts.push({
      file: 'throughput.svg',
      title: 'Fan-out throughput vs N',
      spec: overN(fps, { title: `Fan-out throughput: delivered frames/s vs N${mode}`, y: 'fps', yTitle: 'frames/s (higher is better)', dash: true }),
    });
  }
  const heap = rows.filter((r) => finite(r.heapPerStream)).map((r) => ({ era: r.era, peer: r.peer, n: r.n, kb: Number((r.heapPerStream / 1024).toFixed(2)) }));
  if (heap.length > 0) {
    charts.push({
      file: 'heap.svg',
      title: 'Heap per idle stream vs N',
      spec: overN(heap, { title: `Server heap per idle stream / session vs N, after GC${mode}`, y: 'kb', yTitle: 'KB per stream (lower is better)' }),
    });
  }
  const p99 = rows.filter((r) => finite(r.p99)).map((r) => ({ era: r.era, peer: r.peer, n: r.n, p99: Number(r.p99.toFixed(2)) }));
  if (p99.length > 0) {
    charts.push({
      file: 'latency.svg',
      title: 'p99 fan-out latency vs N',
      spec: overN(p99, { title: `p99 fan-out latency (publish → all N have it) vs N${mode}`, y: 'p99', yTitle: 'p99 ms (log, lower is better)', yLog: true }),
    });
  }

  const slow = (summary.slow ?? []).filter((r) => Array.isArray(r.series) && r.series.length > 0);
  if (slow.length > 0) {
    const values = slow.flatMap((r) =>
      r.series.flatMap((p) => [
        { peer: r.peer, s: p.s, metric: 'heap + external growth', mb: p.heapMB },
        { peer: r.peer, s: p.s, metric: 'RSS growth', mb: p.rssMB },
      ]),
    );
    const events = slow.flatMap((r) => (finite(r.events?.resumedS) ? [{ peer: r.peer, s: r.events.resumedS }] : []));
    const k = doc.config?.slow?.k;
    charts.push({
      file: 'slow-consumer.svg',
      title: 'Slow consumer: server memory over time',
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        title: {
          text: `Slow consumer: server memory over time, 1 stalled stream${k ? ` (${k.toLocaleString('en-US')} notifications)` : ''}${mode}`,
          subtitle: 'growth since the publish started; sampled every 50 ms without forced GC; dotted rule: the stalled stream resumes reading',
        },
        data: { values },
        facet: { row: { field: 'metric', type: 'nominal', title: null, header: { labelFontSize: 13 } } },
        spec: {
          width: 720,
          height: 200,
          layer: [
            {
              mark: { type: 'line', strokeWidth: 1.8, interpolate: 'linear' },
              encoding: {
                x: { field: 's', type: 'quantitative', title: 'seconds since the publish started' },
                y: { field: 'mb', type: 'quantitative', title: 'MB (lower is better)' },
                color: colour([...new Set(slow.map((r) => r.peer))]),
              },
            },
            ...(events.length > 0
              ? [{ data: { values: events }, mark: { type: 'rule', strokeDash: [2, 3], strokeWidth: 1.2 }, encoding: { x: { field: 's', type: 'quantitative' }, color: { field: 'peer', type: 'nominal', legend: null } } }]
              : []),
          ],
        },
        resolve: { scale: { y: 'independent' } },
        ...FONT,
      },
    });
  }

  const storm = (summary.storm ?? []).filter((r) => !r.error && finite(r.frames));
  if (storm.length > 0) {
    const { n, k } = storm[0];
    const bar = (era, field, title) => {
      const values = storm.filter((r) => r.era === era).map((r) => ({ peer: r.peer, value: field === 'ms' ? Number(r.ms.toFixed(1)) : r.frames }));
      const x = { field: 'value', type: 'quantitative', title, axis: { format: ',~s' } };
      const y = { field: 'peer', type: 'nominal', title: null, sort: null, axis: { labelLimit: 320 } };
      return {
        width: 300,
        height: { step: 22 },
        data: { values },
        layer: [
          { mark: { type: 'bar' }, encoding: { x, y, color: { ...colour([...new Set(storm.map((r) => r.peer))]), legend: null } } },
          { mark: { type: 'text', align: 'left', dx: 3, fontSize: 10 }, encoding: { x, y, text: { field: 'value', type: 'quantitative', format: ',.0f' } } },
        ],
      };
    };
    const eras = ['listen', 'legacy'].filter((era) => storm.some((r) => r.era === era));
    charts.push({
      file: 'storm.svg',
      title: 'Storm: frames and time per peer',
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        title: { text: `Storm: ${k.toLocaleString('en-US')} tools/list_changed in one turn to N=${n.toLocaleString('en-US')}${mode}`, subtitle: 'frames counted by the clients; lower is better in both' },
        vconcat: eras.map((era) => ({
          title: { text: ERA_TITLE[era], fontSize: 13 },
          hconcat: [bar(era, 'frames', 'frames the clients received'), bar(era, 'ms', 'ms until every stream had its last')],
          resolve: { scale: { x: 'independent' } },
        })),
        ...FONT,
      },
    });
  }
  return charts;
}

/** Renders one Vega-Lite spec to an SVG string, headless. */
export async function renderSvg(spec) {
  // Vega-Lite warns about facets with independent scales (harmless here): errors only.
  const view = new vega.View(vega.parse(compile(spec, { logger: vega.logger(vega.Error) }).spec), { renderer: 'none', logLevel: vega.Error });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Writes every chart of `doc` into `dir`; returns [{file, title}] of those written. */
export async function writeCharts(doc, dir) {
  const written = [];
  for (const { file, title, spec } of chartSpecs(doc)) {
    writeFileSync(path.join(dir, file), await renderSvg(spec));
    written.push({ file, title });
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, outDir] = process.argv.slice(2);
  if (input === undefined) {
    console.error('usage: node bench/charts.mjs <results.json> [out-dir]');
    process.exit(2);
  }
  const { readFileSync } = await import('node:fs');
  const doc = JSON.parse(readFileSync(input, 'utf8'));
  const dir = outDir ?? path.dirname(input);
  const written = await writeCharts(doc, dir);
  console.log(written.map((c) => path.join(dir, c.file)).join('\n'));
}
