// How long a paired comparison takes as the number of queries grows (issue 18 item 5): two synthetic
// runs' per-query measures through core/eval/compare.ts (the code the stats worker runs), with the
// app's default resampling (2,000 bootstrap, 10,000 randomization), in Node on one core. Prints the
// wall time and the process's CPU time (less moved by a loaded machine). `--reference` also times the
// one-column path of stats.ts (bootstrapMean + compareToBaseline per measure, what compareRuns did
// before resampling.ts) and checks that both give the same numbers.
//
//   npm run bench:compare -- [--queries 1000,10000,100000] [--measures 5] [--reference]
//   (smallest: --queries 100 --measures 1)
import { loadavg } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { compareRuns } from '../src/lib/core/eval/compare';
import { Xoshiro128 } from '../src/lib/core/eval/random';
import { bootstrapMean, compareToBaseline } from '../src/lib/core/eval/stats';
import { benchArgs, timed } from './lib/bench-harness';

const args = benchArgs({
  queries: { type: 'string', default: '1000,10000,100000' },
  measures: { type: 'string', default: '5' },
  reference: { type: 'boolean', default: false },
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
