// How long a paired comparison takes as the number of queries grows (issue 18 item 5): two synthetic
// runs' per-query measures through core/eval/compare.ts (the code the stats worker runs), with the
// app's default resampling (2,000 bootstrap, 10,000 randomization), in Node on one core.
//
//   npm run bench:compare -- [--queries 1000,10000,100000] [--measures 5]
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { compareRuns } from '../src/lib/core/eval/compare';
import { Xoshiro128 } from '../src/lib/core/eval/random';

const { values: args } = parseArgs({
  options: {
    queries: { type: 'string', default: '1000,10000,100000' },
    measures: { type: 'string', default: '5' },
  },
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

console.log(`| queries | measures | compare two runs | load average before |`);
console.log(`| ------: | -------: | --------------: | ------------------: |`);
for (const n of args.queries.split(',').map(Number)) {
  const a = run(n, 0);
  const b = run(n, 0.05);
  const load = loadavg()[0].toFixed(1);
  const t0 = performance.now();
  compareRuns({
    inputs: [
      { id: 'a', name: 'a', perQuery: a },
      { id: 'b', name: 'b', perQuery: b },
    ],
    baselineId: 'a',
    measures: MEASURES,
  });
  console.log(`| ${n} | ${MEASURES.length} | ${((performance.now() - t0) / 1000).toFixed(2)} s | ${load} |`);
}
