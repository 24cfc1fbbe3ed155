// How long a paired comparison takes as the number of queries grows (issue 18 item 5): two synthetic
// runs' per-query measures through core/eval/compare.ts (the code the stats worker runs), with the
// app's default resampling (2,000 bootstrap, 10,000 randomization), in Node on one core. Prints the
// wall time and the process's CPU time (less moved by a loaded machine). `--reference` also times the
// one-column path of stats.ts (bootstrapMean + compareToBaseline per measure, what compareRuns did
// before resampling.ts) and checks that both give the same numbers.
//
//   npm run bench:compare -- [--queries 1000,10000,100000] [--measures 5] [--reference]
//   (smallest: --queries 100 --measures 1 --pairs-queries 100)
//                            [--pairs-runs 12] [--pairs-queries 1000,100000] [--write-benchmarks]
//
// Then all pairs of 12 synthetic runs (issue 37 item 1) in workers/stats.worker.ts itself, run in a
// Node worker thread (scripts/lib/stats-worker-node.ts; the runs cross by structured clone as in the
// browser): Tukey's HSD and the randomized Tukey HSD (1,000 trials), timed from the call to the answer,
// and the runs table the app and the headless runner print, for the first size. --write-benchmarks puts the
// timings in docs/benchmarks/all-pairs.md (section bench:all-pairs).
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import {
  RUNS_TABLE_HEADER,
  formatTextTable,
  runsTable,
  type AllPairsMethod,
} from '../src/lib/core/eval/all-pairs';
import type { StatsWorkerApi } from '../workers/stats.worker';
import { writeBenchmarksSection } from './lib/benchmarks-md';
import { isDeepStrictEqual } from 'node:util';
import { compareRuns } from '../src/lib/core/eval/compare';
import { Xoshiro128 } from '../src/lib/core/eval/random';
import { bootstrapMean, compareToBaseline } from '../src/lib/core/eval/stats';
import { benchArgs, timed } from './lib/bench-harness';

const args = benchArgs({
  queries: { type: 'string', default: '1000,10000,100000' },
  measures: { type: 'string', default: '5' },
  reference: { type: 'boolean', default: false },
  'pairs-runs': { type: 'string', default: '12' },
  'pairs-queries': { type: 'string', default: '1000,100000' },
});
const MEASURES = ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map', 'P_10'].slice(0, Number(args.measures));
const rng = new Xoshiro128(1);

/** Per-query measures in [0, 1]; `shift` makes the second run a little better on average. */
function run(n: number, shift: number): Map<string, Record<string, number>> {
  const m = new Map<string, Record<string, number>>();
  for (let i = 0; i < n; i++) {
    const r: Record<string, number> = {};
    for (const k of MEASURES) r[k] = Math.min(1, rng.nextFloat() * 0.8 + shift * rng.nextFloat());
    m.set(`q${i}`, r);
  }
  return m;
}

/** The one-column path: each measure's baseline bootstrap, then each system against the baseline. */
function reference(a: Map<string, Record<string, number>>, b: Map<string, Record<string, number>>) {
  return MEASURES.map((m) => {
    const col = (p: typeof a) => new Map([...p].map(([q, v]) => [q, v[m] ?? 0] as [string, number]));
    const [r] = compareToBaseline(col(a), [col(b)]);
    return [bootstrapMean([...col(a).values()]), r.bootstrap.b, r.bootstrap.diff, r.randomization.pValue];
  });
}

const s = (ms: number) => (ms / 1000).toFixed(2);
const ref = args.reference ? ' one-column path (wall / CPU) | same numbers |' : '';
console.log(`| queries | measures | compare two runs (wall / CPU) |${ref} load average before |`);
console.log(
  `| ------: | -------: | ----------------------------: |${ref ? ' ---: | ---: |' : ''} ------------------: |`,
);
for (const n of args.queries.split(',').map(Number)) {
  const a = run(n, 0);
  const b = run(n, 0.05);
  const load = loadavg()[0].toFixed(1);
  const fast = await timed(() =>
    compareRuns({
      inputs: [
        { id: 'a', name: 'a', perQuery: a },
        { id: 'b', name: 'b', perQuery: b },
      ],
      baselineId: 'a',
      measures: MEASURES,
    }),
  );
  let cells = '';
  if (args.reference) {
    const slow = await timed(() => reference(a, b));
    const got = fast.value.measures.map((m) => [
      m.systems[0].mean,
      m.systems[1].mean,
      m.systems[1].diff,
      m.systems[1].pRandomization,
    ]);
    cells = ` ${s(slow.wallMs)} s / ${s(slow.cpuMs)} s | ${isDeepStrictEqual(got, slow.value) ? 'yes' : 'NO'} |`;
  }
  console.log(`| ${n} | ${MEASURES.length} | ${s(fast.wallMs)} s / ${s(fast.cpuMs)} s |${cells} ${load} |`);
}

// --- All pairs of N runs in the stats worker ---------------------------------------------------------
const entry = new URL('./lib/stats-worker-node.ts', import.meta.url).href;
const worker = new Worker(
  `import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(entry)}); });`,
  { eval: true },
);
const stats = Comlink.wrap<StatsWorkerApi>(nodeEndpoint(worker));
const nRuns = Number(args['pairs-runs']);
// The worker's first call compiles its modules: a small warm-up call, not timed.
await stats.allPairs({
  inputs: ['a', 'b', 'c'].map((id) => ({
    id,
    perQuery: new Map([
      ['q', { m: 0 }],
      ['r', { m: 1 }],
    ]),
  })),
  measure: 'm',
});
const lines = [
  `| runs × queries | method | all pairs in the stats worker (wall / CPU) | target | load average before |`,
  `| -------------: | ------ | -----------------------------------------: | -----: | ------------------: |`,
];
console.log('');
let printedTable = false;
for (const n of args['pairs-queries'].split(',').map(Number)) {
  // Run r is a little better the larger r: 12 runs at 0.01 steps, some tied, some not.
  const inputs = Array.from({ length: nRuns }, (_, r) => {
    const perQuery = new Map<string, Record<string, number>>();
    for (let q = 0; q < n; q++)
      perQuery.set(`q${q}`, { ndcg_cut_10: Math.min(1, rng.nextFloat() * 0.8 + 0.01 * r) });
    return { id: `run-${String(r + 1).padStart(2, '0')}`, perQuery };
  });
  for (const method of ['tukey', 'randomized'] as AllPairsMethod[]) {
    const load = loadavg()[0].toFixed(1);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = await stats.allPairs({
      inputs,
      measure: 'ndcg_cut_10',
      options: { method, trials: 1000, seed: 42 },
    });
    const secs = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6;
    const target = n <= 1000 ? 2 : 20;
    const row = `| ${nRuns} × ${n.toLocaleString('en')} | ${res.method} | ${secs.toFixed(2)} s / ${cpu.toFixed(2)} s | ≤ ${target} s | ${load} |`;
    lines.push(row);
    if (!printedTable) {
      console.log(`${res.method}, ${nRuns} runs × ${n} queries (synthetic ndcg_cut_10):\n`);
      console.log(formatTextTable([RUNS_TABLE_HEADER, ...runsTable(res)]) + '\n');
      printedTable = true;
    }
  }
}
await worker.terminate();
console.log(lines.join('\n'));
if (args['write-benchmarks'])
  writeBenchmarksSection(
    'all-pairs',
    [
      `## All pairs of N runs (issue 37 item 1, ${new Date().toISOString().slice(0, 10)})`,
      '',
      `\`npm run bench:compare -- --write-benchmarks\` on ${new Date().toISOString().slice(0, 10)}: ${nRuns} synthetic runs' per-query ` +
        'measures sent to workers/stats.worker.ts (run in a Node worker thread, arguments by structured clone), ' +
        'timed from the call to the answer (wall, and the process CPU time, less moved by a loaded machine): Tukey HSD (two-way ANOVA, queries as blocks) and the randomized ' +
        'Tukey HSD with 1,000 trials. Node ' +
        process.version +
        ', 2 shared cores.',
      '',
      ...lines,
    ].join('\n'),
  );
