// Comparison of runs over one task: each measure with a paired bootstrap CI, the difference to a
// baseline with paired randomization and t tests (Holm-corrected across systems), a per-facet
// breakdown and the queries that changed most. Pure: runs in the stats worker and in Node tests.
import { bootstrapIntervals, byteOrder, randomizationCounts, type BootstrapColumn } from './resampling';
import {
  MAX_EXACT_RANDOMIZATION_N,
  MAX_INT_RANGE,
  MIN_BOOTSTRAP_RESAMPLES,
  exactRandomizationTest,
  extremeThreshold,
  holmBonferroni,
  intervalPercentiles,
  pairedTTest,
  winTieLoss,
  type CompareOptions,
  type ConfidenceInterval,
} from './stats';

export interface CompareInput {
  id: string;
  name: string;
  /** Per-query measures (every judged query of the task, trec_eval -c). */
  perQuery: Map<string, Record<string, number>>;
}

export interface SystemStat {
  id: string;
  name: string;
  n: number;
  /** Mean with its bootstrap CI (paired resamples for non-baseline systems). */
  mean: ConfidenceInterval;
  /** Against the baseline; absent for the baseline itself. */
  diff?: ConfidenceInterval;
  pRandomization?: number;
  pTTest?: number;
  /** Holm–Bonferroni adjusted over all systems compared with the baseline. */
  holmRandomization?: number;
  holmTTest?: number;
  wins?: number;
  ties?: number;
  losses?: number;
}

export interface MeasureComparison {
  measure: string;
  systems: SystemStat[];
}

export interface FacetComparison {
  key: string;
  values: { value: string; queries: number; means: Record<string, number> }[];
}

export interface ChangedQuery {
  queryId: string;
  baseline: number;
  /** Per system id: its value minus the baseline's. */
  diffs: Record<string, number>;
}

export interface Comparison {
  baselineId: string;
  measures: MeasureComparison[];
  /** Breakdown of the primary measure (the first) by each facet. */
  facets: FacetComparison[];
  /** Queries sorted by the largest absolute change of the primary measure, most changed first. */
  changed: ChangedQuery[];
  options: Required<Pick<CompareOptions, 'seed' | 'bootstrapResamples' | 'randomizationResamples'>>;
}

/**
 * Compares runs against `baselineId` on every measure. `facets` maps a query id to its facet
 * values (key → value); `changedLimit` caps the most-changed query list.
 *
 * The numbers are those of stats.ts's `bootstrapMean` (the baseline's mean, over its queries in their
 * order, 95%) and `compareToBaseline` (every other run over the queries it shares with the baseline),
 * to the bit, for the same seed; they are computed for all measures and runs at once by
 * resampling.ts, so 100,000 queries take seconds, not minutes.
 */
export function compareRuns(args: {
  inputs: CompareInput[];
  baselineId: string;
  measures: string[];
  facets?: Map<string, Map<string, string>>;
  options?: CompareOptions;
  changedLimit?: number;
}): Comparison {
  const base = args.inputs.find((i) => i.id === args.baselineId);
  if (!base) throw new Error(`baseline ${args.baselineId} is not among the runs compared`);
  const others = args.inputs.filter((i) => i !== base);
  const opts: Comparison['options'] = {
    seed: args.options?.seed ?? 0,
    bootstrapResamples: args.options?.bootstrapResamples ?? 2000,
    randomizationResamples: args.options?.randomizationResamples ?? 10000,
  };
  const measures = compareMeasures(base, others, args.measures, { ...args.options, ...opts });
  const primary = args.measures[0];
  const facets: FacetComparison[] = [];
  if (args.facets && primary) {
    const groups = new Map<string, Map<string, string[]>>();
    for (const q of base.perQuery.keys())
      for (const [k, v] of args.facets.get(q) ?? []) {
        const g = groups.get(k) ?? new Map<string, string[]>();
        const list = g.get(v);
        if (list) list.push(q);
        else g.set(v, [q]);
        groups.set(k, g);
      }
    for (const [key, g] of groups) {
      if (g.size < 2 || g.size > 40) continue;
      const values = [...g]
        .map(([value, qids]) => {
          const means: Record<string, number> = {};
          for (const inp of args.inputs) {
            let s = 0;
            for (const q of qids) s += inp.perQuery.get(q)?.[primary] ?? 0;
            means[inp.id] = s / qids.length;
          }
          return { value, queries: qids.length, means };
        })
        .sort((a, b) => b.queries - a.queries || (a.value < b.value ? -1 : 1));
      facets.push({ key, values });
    }
    facets.sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  // The most changed queries: each query's largest absolute change, sorted through its index.
  const ids = [...base.perQuery.keys()];
  const largest = new Float64Array(ids.length);
  const primaryOf = (m: Record<string, number> | undefined) => m?.[primary] ?? 0;
  if (primary)
    ids.forEach((q, i) => {
      const b = primaryOf(base.perQuery.get(q));
      let max = 0;
      for (const o of others) max = Math.max(max, Math.abs(primaryOf(o.perQuery.get(q)) - b));
      largest[i] = max;
    });
  // Only queries at or above the limit-th largest change can make the list: sort those alone.
  const limit = args.changedLimit ?? 25;
  const cut = limit > 0 ? (Float64Array.from(largest).sort().at(-limit) ?? 0) : Infinity;
  const order: number[] = [];
  if (primary) for (let i = 0; i < ids.length; i++) if (largest[i] > 0 && largest[i] >= cut) order.push(i);
  order.sort((i, j) => largest[j] - largest[i] || (ids[i] < ids[j] ? -1 : 1));
  const changed: ChangedQuery[] = order.slice(0, limit).map((i) => {
    const q = ids[i];
    const b = primaryOf(base.perQuery.get(q));
    const diffs: Record<string, number> = {};
    for (const o of others) diffs[o.id] = primaryOf(o.perQuery.get(q)) - b;
    return { queryId: q, baseline: b, diffs };
  });
  return { baselineId: base.id, measures, facets, changed, options: opts };
}

/** `input`'s per-query records over `ids` (looked up once, read once per measure). */
function recordsOf(input: CompareInput, ids: string[]) {
  return { input, ids, records: ids.map((q) => input.perQuery.get(q)) };
}

/** One measure's values of the records (0 where a query lacks it), checked finite. */
function values(r: ReturnType<typeof recordsOf>, measure: string): Float64Array {
  const out = new Float64Array(r.ids.length);
  for (let i = 0; i < out.length; i++) {
    const v = r.records[i]?.[measure] ?? 0;
    if (!Number.isFinite(v))
      throw new RangeError(
        `run '${r.input.name}', query '${r.ids[i]}': ${measure} is not a finite number: ${v}`,
      );
    out[i] = v;
  }
  return out;
}

/** The statistics of every measure and run (see `compareRuns`). */
function compareMeasures(
  base: CompareInput,
  others: CompareInput[],
  measureNames: string[],
  opts: CompareOptions & Comparison['options'],
): MeasureComparison[] {
  const B = opts.bootstrapResamples;
  if (!(Number.isSafeInteger(B) && B >= MIN_BOOTSTRAP_RESAMPLES))
    throw new RangeError(`bootstrap resamples must be an integer >= ${MIN_BOOTSTRAP_RESAMPLES}, got ${B}`);
  const R = opts.randomizationResamples;
  const confidence = opts.confidence ?? 0.95;
  intervalPercentiles(confidence);
  const exactMax = Math.min(
    opts.exactRandomizationMaxN ?? MAX_EXACT_RANDOMIZATION_N,
    MAX_EXACT_RANDOMIZATION_N,
  );
  const baseIds = [...base.perQuery.keys()];
  if (baseIds.length === 0) throw new RangeError('no paired queries to compare');
  const sorted = byteOrder(baseIds);
  const shared = others.map((o) => {
    const ids = sorted.filter((q) => o.perQuery.has(q));
    if (ids.length === 0) throw new RangeError('the two runs have no query in common');
    return ids;
  });
  for (const n of [baseIds.length, ...shared.map((ids) => ids.length)])
    if (n > MAX_INT_RANGE) throw new RangeError(`bootstrap supports at most ${MAX_INT_RANGE} queries`);
  if (shared.some((ids) => ids.length > exactMax) && !(Number.isSafeInteger(R) && R >= 1))
    throw new RangeError(`randomization resamples must be a positive integer, got ${R}`);

  // Every column's interval and test, grouped by length: one length, one stream of resamples.
  const boot = new Map<number, { column: BootstrapColumn; ci?: ConfidenceInterval }[]>();
  const flips = new Map<number, { d: Float64Array; extreme?: number }[]>();
  const bootstrap = (column: BootstrapColumn) => {
    const job: { column: BootstrapColumn; ci?: ConfidenceInterval } = { column };
    const list = boot.get(column.values.length) ?? [];
    list.push(job);
    boot.set(column.values.length, list);
    return job;
  };
  const baseRecords = recordsOf(base, baseIds);
  const pairs = others.map((o, s) => [recordsOf(base, shared[s]), recordsOf(o, shared[s])]);
  const plan = measureNames.map((measure) => ({
    measure,
    base: bootstrap({ values: values(baseRecords, measure), confidence: 0.95 }),
    systems: others.map((o, s) => {
      const a = values(pairs[s][0], measure);
      const b = values(pairs[s][1], measure);
      const d = new Float64Array(a.length);
      for (let i = 0; i < d.length; i++) d[i] = b[i] - a[i];
      let flip: { d: Float64Array; extreme?: number } | undefined;
      if (a.length > exactMax) {
        flip = { d };
        const list = flips.get(d.length) ?? [];
        list.push(flip);
        flips.set(d.length, list);
      }
      return {
        a,
        b: bootstrap({ values: b, confidence }),
        diff: bootstrap({ values: d, confidence }),
        flip,
      };
    }),
  }));
  for (const jobs of boot.values()) {
    const cis = bootstrapIntervals(
      jobs.map((j) => j.column),
      B,
      opts.seed,
    );
    jobs.forEach((j, i) => (j.ci = cis[i]));
  }
  for (const jobs of flips.values()) {
    const counts = randomizationCounts(
      jobs.map((j) => j.d),
      jobs.map((j) => extremeThreshold(j.d)),
      R,
      opts.seed,
    );
    jobs.forEach((j, i) => (j.extreme = counts[i]));
  }

  return plan.map(({ measure, base: b, systems }) => {
    const results = systems.map((s) => {
      const values = s.b.column.values;
      const tTest = pairedTTest(s.a, values);
      const pRandomization = s.flip
        ? (s.flip.extreme! + 1) / (R + 1)
        : exactRandomizationTest(s.a, values).pValue;
      return { s, tTest, pRandomization, wtl: winTieLoss(s.a, values, opts.tieTolerance ?? 0) };
    });
    const ht = holmBonferroni(results.map((r) => r.tTest.pValue));
    const hr = holmBonferroni(results.map((r) => r.pRandomization));
    const stats: SystemStat[] = [{ id: base.id, name: base.name, n: baseIds.length, mean: b.ci! }];
    results.forEach((r, i) =>
      stats.push({
        id: others[i].id,
        name: others[i].name,
        n: r.s.a.length,
        mean: r.s.b.ci!,
        diff: r.s.diff.ci!,
        pRandomization: r.pRandomization,
        pTTest: r.tTest.pValue,
        holmRandomization: hr[i],
        holmTTest: ht[i],
        wins: r.wtl.wins,
        ties: r.wtl.ties,
        losses: r.wtl.losses,
      }),
    );
    return { measure, systems: stats };
  });
}

/** Mean of a measure family at every cutoff 1..maxK (for metric@k curves), from per-query values. */
export function curveMeans(
  perQuery: Map<string, Record<string, number>>,
  family: string,
  maxK: number,
): number[] {
  const out = new Array<number>(maxK).fill(0);
  if (perQuery.size === 0) return out;
  for (const m of perQuery.values()) for (let k = 1; k <= maxK; k++) out[k - 1] += m[`${family}_${k}`] ?? 0;
  return out.map((s) => s / perQuery.size);
}
