// Statistics worker: paired bootstrap / randomization comparisons, all pairs of N runs (Tukey's HSD and
// its randomized version), metric@k curves, the range of the measures over tie orders and fusion tuning
// by cross-validation, so thousands of resamples or whole re-evaluations never block the page.
import * as Comlink from 'comlink';
import {
  allPairs,
  allPairsAcrossTasks,
  type AllPairsOptions,
  type AllPairsRun,
} from '../src/lib/core/eval/all-pairs';
import {
  approximationTable,
  type ApproxOptions,
  type ApproxRunInput,
} from '../src/lib/core/eval/approximation';
import { compareRuns, curveMeans, type CompareInput } from '../src/lib/core/eval/compare';
import { evaluate, type EvalOptions } from '../src/lib/core/eval/metrics';
import type { CompareOptions } from '../src/lib/core/eval/stats';
import { tieRange } from '../src/lib/core/eval/ties';
import { tuneFusion, type TuneFusionOptions } from '../src/lib/core/retrieval/fusion-tuning';
import type { ProgressFn, Qrels, Run } from '../src/lib/core/types';

const api = {
  compare(args: {
    inputs: CompareInput[];
    baselineId: string;
    measures: string[];
    facets?: Map<string, Map<string, string>>;
    options?: CompareOptions;
  }) {
    return compareRuns(args);
  },

  /**
   * Every pair of runs on one measure, over the queries all runs have: Tukey's HSD after the two-way
   * ANOVA (default), the randomized Tukey HSD (`options.trials`, `options.seed`) or its exact version
   * (src/lib/core/eval/all-pairs.ts). Export with `pairsCsv` / `runsCsv` / `multiComparisonJson`.
   */
  allPairs(args: { inputs: AllPairsRun[]; measure: string; options?: AllPairsOptions }) {
    return allPairs(args);
  },

  /**
   * Quality under approximation: the exact run and its approximate versions as the table's rows
   * (src/lib/core/eval/approximation.ts).
   */
  approximation(args: {
    measure: string;
    exact: ApproxRunInput;
    approx: ApproxRunInput[];
    options?: ApproxOptions;
  }) {
    return approximationTable(args);
  },

  /** `allPairs` on each task alone and on all tasks pooled, each (task, query) a block. */
  allPairsAcrossTasks(args: {
    tasks: { task: string; inputs: AllPairsRun[] }[];
    measure: string;
    options?: AllPairsOptions;
  }) {
    return allPairsAcrossTasks(args);
  },

  /**
   * Mean of each family (e.g. ndcg_cut, recall) at k = 1..maxK for each run, evaluated with `options`
   * (the reports' semantics; default trec_eval -c).
   */
  curves(
    runs: { id: string; run: Run }[],
    qrels: Qrels,
    families: string[],
    maxK: number,
    options: EvalOptions = { complete: true },
  ) {
    const measures = families.flatMap((f) => Array.from({ length: maxK }, (_, i) => `${f}_${i + 1}`));
    return runs.map(({ id, run }) => {
      const { perQuery } = evaluate(qrels, run, measures, options);
      return { id, curves: Object.fromEntries(families.map((f) => [f, curveMeans(perQuery, f, maxK)])) };
    });
  },

  /** The overall means with ties broken best-first and worst-first (src/lib/core/eval/ties.ts). */
  tieRange(qrels: Qrels, run: Run, measures: string[], opts: EvalOptions) {
    const { best, worst } = tieRange(qrels, run, measures, opts);
    return { best: best.all, worst: worst.all };
  },

  /** A fusion tuned by k-fold cross-validation (core/retrieval/fusion-tuning.ts), grid points counted. */
  tuneFusion(
    runs: Run[],
    qrels: Qrels,
    opts: Omit<TuneFusionOptions, 'onProgress'>,
    onProgress?: ProgressFn,
  ) {
    let last = 0;
    return tuneFusion(runs, qrels, {
      ...opts,
      onProgress: (done, total) => {
        // A few ticks a second at most.
        if (done < total && performance.now() - last < 200) return;
        last = performance.now();
        onProgress?.({ kind: 'status', message: `Tuning the fusion: grid point ${done} / ${total}` });
      },
    });
  },
};

export type StatsWorkerApi = typeof api;
Comlink.expose(api);
