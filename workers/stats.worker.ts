// Statistics worker: paired bootstrap / randomization comparisons and metric@k curves, so
// thousands of resamples never block the page.
import * as Comlink from 'comlink';
import { compareRuns, curveMeans, type CompareInput } from '../src/lib/core/eval/compare';
import { evaluate, type EvalOptions } from '../src/lib/core/eval/metrics';
import type { CompareOptions } from '../src/lib/core/eval/stats';
import type { Qrels, Run } from '../src/lib/core/types';

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
};

export type StatsWorkerApi = typeof api;
Comlink.expose(api);
