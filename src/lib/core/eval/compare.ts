// Comparison of runs over one task: each measure with a paired bootstrap CI, the difference to a
// baseline with paired randomization and t tests (Holm-corrected across systems), a per-facet
// breakdown and the queries that changed most. Pure: runs in the stats worker and in Node tests.
import { bootstrapMean, compareToBaseline, type CompareOptions, type ConfidenceInterval } from './stats';

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

function column(perQuery: Map<string, Record<string, number>>, measure: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [q, m] of perQuery) out.set(q, m[measure] ?? 0);
  return out;
}

/**
 * Compares runs against `baselineId` on every measure. `facets` maps a query id to its facet
 * values (key → value); `changedLimit` caps the most-changed query list.
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
  const full = { ...args.options, ...opts };
  const measures: MeasureComparison[] = args.measures.map((measure) => {
    const b = column(base.perQuery, measure);
    const bMean = bootstrapMean([...b.values()], { resamples: opts.bootstrapResamples, seed: opts.seed });
    const systems: SystemStat[] = [{ id: base.id, name: base.name, n: b.size, mean: bMean }];
    const results = others.length
      ? compareToBaseline(
          b,
          others.map((o) => column(o.perQuery, measure)),
          full,
        )
      : [];
    results.forEach((r, i) =>
      systems.push({
        id: others[i].id,
        name: others[i].name,
        n: r.n,
        mean: r.bootstrap.b,
        diff: r.bootstrap.diff,
        pRandomization: r.randomization.pValue,
        pTTest: r.tTest.pValue,
        holmRandomization: r.holm.randomization,
        holmTTest: r.holm.tTest,
        wins: r.winTieLoss.wins,
        ties: r.winTieLoss.ties,
        losses: r.winTieLoss.losses,
      }),
    );
    return { measure, systems };
  });

  const primary = args.measures[0];
  const facets: FacetComparison[] = [];
  if (args.facets && primary) {
    const groups = new Map<string, Map<string, string[]>>();
    for (const q of base.perQuery.keys())
      for (const [k, v] of args.facets.get(q) ?? []) {
        const g = groups.get(k) ?? new Map<string, string[]>();
        g.set(v, [...(g.get(v) ?? []), q]);
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

  const changed: ChangedQuery[] = [];
  if (primary)
    for (const [q, m] of base.perQuery) {
      const diffs: Record<string, number> = {};
      for (const o of others) diffs[o.id] = (o.perQuery.get(q)?.[primary] ?? 0) - (m[primary] ?? 0);
      changed.push({ queryId: q, baseline: m[primary] ?? 0, diffs });
    }
  const maxAbs = (c: ChangedQuery) => Math.max(0, ...Object.values(c.diffs).map(Math.abs));
  changed.sort((a, b) => maxAbs(b) - maxAbs(a) || (a.queryId < b.queryId ? -1 : 1));
  return {
    baselineId: base.id,
    measures,
    facets,
    changed: changed.filter((c) => maxAbs(c) > 0).slice(0, args.changedLimit ?? 25),
    options: opts,
  };
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
