// Comparing N runs at once over the same queries: a two-way ANOVA without replication (runs ×
// queries, queries as blocks) and Tukey's honestly significant difference over every pair of runs, as
// R's `aov(score ~ run + query)` and `TukeyHSD(fit, "run")` compute them (checked against R 4.2.2 to
// 1e-9, tests/unit/multi-compare.test.ts), plus what a leaderboard reads off them: the best run, the
// runs tied with it, and each run's interval of possible ranks. The randomized version of Tukey's HSD
// is in randomized-tukey.ts; tasks, inputs keyed by query id and CSV/JSON export in all-pairs.ts.
//
// Conventions:
// - `scores[r][q]` is run r's score on query q; every run has the same queries in the same order, all
//   finite. A pair (a, b) is reported as R reports it: a before b in the run order, pairs ordered
//   (1,2), (1,3), …, (1,N), (2,3), …, and diff = mean(b) − mean(a).
// - A pair is significantly different when its adjusted p < alpha (default 0.05); its interval is the
//   simultaneous 1 − alpha interval.
import { ptukey, qtukey } from './studentized-range';
import { regularizedIncompleteBeta } from './special-functions';

export const DEFAULT_ALPHA = 0.05;

/** Two-way ANOVA without replication: runs × queries, queries as blocks. */
export interface AnovaTable {
  dfRun: number;
  dfQuery: number;
  dfResidual: number;
  ssRun: number;
  ssQuery: number;
  ssResidual: number;
  msResidual: number;
  /** (ssRun / dfRun) / msResidual. */
  fRun: number;
  /** P(F(dfRun, dfResidual) ≥ fRun). */
  pRun: number;
}

/** One pair of runs. */
export interface PairComparison {
  a: string;
  b: string;
  /** mean(b) − mean(a). */
  diff: number;
  /** Simultaneous 1 − alpha interval of diff (Tukey's HSD; absent for the randomized test). */
  lwr?: number;
  upr?: number;
  /** p adjusted for all pairs (Tukey's HSD: over the studentized range). */
  pAdj: number;
  /** Randomized test only: Monte Carlo standard error √(p(1 − p)/B) of pAdj (0 when exact). */
  se?: number;
  /** pAdj < alpha. */
  significant: boolean;
}

/** What a leaderboard reads off all pairs. */
export interface RunGroups {
  /** The run with the highest mean (the first of them on a tie, as R's which.max). */
  best: string;
  /** Per run, in run order: p adjusted of its pair with the best run (1 for the best itself). */
  pVsBest: number[];
  /** Runs whose difference from the best is not significant (pVsBest ≥ alpha), best included. */
  tiedWithBest: string[];
  /**
   * Per run: [1 + runs significantly better, N − runs significantly worse], the ranks the run could
   * take given the significant differences alone.
   */
  rankIntervals: [number, number][];
}

/** All pairs of N runs by one method. */
export interface MultiComparison extends RunGroups {
  /** The method in words, e.g. "Tukey HSD (two-way ANOVA, queries as blocks)". */
  method: string;
  alpha: number;
  runs: string[];
  /** Display names per run when given (all-pairs.ts), else absent. */
  names?: string[];
  /** Number of blocks (queries, or (task, query) pairs when pooled over tasks). */
  queries: number;
  means: number[];
  pairs: PairComparison[];
  /** Tukey's HSD: the ANOVA and the critical value of the studentized range. */
  anova?: AnovaTable;
  qCritical?: number;
  /** Randomized test: trials B (arrangements when exact), seed, whether it enumerated them all. */
  trials?: number;
  seed?: number;
  exact?: boolean;
}

export const TUKEY_METHOD = 'Tukey HSD (two-way ANOVA, queries as blocks)';

// ---------------------------------------------------------------------------------------------------
// Input

/** Scores copied query-major (x[q·N + r]), validated, with each run's sum. */
export interface ScoreMatrix {
  runs: number;
  queries: number;
  x: Float64Array;
  sums: Float64Array;
}

export function scoreMatrix(runs: readonly string[], scores: readonly ArrayLike<number>[]): ScoreMatrix {
  const N = runs.length;
  if (N < 2) throw new RangeError(`comparing runs needs at least 2 runs, got ${N}`);
  if (scores.length !== N) throw new RangeError(`${runs.length} run names but ${scores.length} score arrays`);
  if (new Set(runs).size !== N) throw new RangeError('run names must be distinct');
  const Q = scores[0].length;
  if (Q < 1) throw new RangeError('no queries to compare');
  const x = new Float64Array(N * Q);
  const sums = new Float64Array(N);
  for (let r = 0; r < N; r++) {
    const s = scores[r];
    if (s.length !== Q)
      throw new RangeError(`run ${runs[r]} has ${s.length} scores, expected ${Q} (the same queries)`);
    let sum = 0;
    for (let q = 0; q < Q; q++) {
      const v = s[q];
      if (!Number.isFinite(v)) throw new RangeError(`run ${runs[r]}, query ${q}: not a finite number: ${v}`);
      x[q * N + r] = v;
      sum += v;
    }
    sums[r] = sum;
  }
  return { runs: N, queries: Q, x, sums };
}

export function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
}

// ---------------------------------------------------------------------------------------------------
// ANOVA

/** Upper tail P(F ≥ f) of the F distribution with (d1, d2) degrees of freedom. */
export function fUpperTail(f: number, d1: number, d2: number): number {
  if (Number.isNaN(f)) return NaN;
  if (f <= 0) return 1;
  if (f === Infinity) return 0;
  // P(F ≥ f) = I_{d2/(d2 + d1 f)}(d2/2, d1/2).
  return regularizedIncompleteBeta(d2 / (d2 + d1 * f), d2 / 2, d1 / 2);
}

function anovaOf(m: ScoreMatrix): { table: AnovaTable; means: Float64Array } {
  const { runs: N, queries: Q, x, sums } = m;
  const runMeans = new Float64Array(N);
  let total = 0;
  for (let r = 0; r < N; r++) {
    runMeans[r] = sums[r] / Q;
    total += sums[r];
  }
  const grand = total / (N * Q);
  const queryMeans = new Float64Array(Q);
  for (let q = 0; q < Q; q++) {
    let s = 0;
    for (let r = 0; r < N; r++) s += x[q * N + r];
    queryMeans[q] = s / N;
  }
  let ssRun = 0;
  for (let r = 0; r < N; r++) ssRun += (runMeans[r] - grand) ** 2;
  ssRun *= Q;
  let ssQuery = 0;
  for (let q = 0; q < Q; q++) ssQuery += (queryMeans[q] - grand) ** 2;
  ssQuery *= N;
  // The residuals directly (not total − run − query, which would cancel).
  let ssResidual = 0;
  for (let q = 0; q < Q; q++) {
    const c = queryMeans[q] - grand;
    for (let r = 0; r < N; r++) ssResidual += (x[q * N + r] - runMeans[r] - c) ** 2;
  }
  const dfRun = N - 1;
  const dfQuery = Q - 1;
  const dfResidual = dfRun * dfQuery;
  const msResidual = dfResidual > 0 ? ssResidual / dfResidual : NaN;
  const fRun = ssRun / dfRun / msResidual;
  const table: AnovaTable = {
    dfRun,
    dfQuery,
    dfResidual,
    ssRun,
    ssQuery,
    ssResidual,
    msResidual,
    fRun,
    pRun: dfResidual > 0 ? fUpperTail(fRun, dfRun, dfResidual) : NaN,
  };
  return { table, means: runMeans };
}

/**
 * Two-way ANOVA without replication of `scores[r][q]` (runs × queries, queries as blocks), as R's
 * `summary(aov(score ~ run + query))`. Residual sums of squares of 0 give F = Infinity (p = 0) or NaN
 * when the runs' means are equal too; one query leaves no residual degrees of freedom (NaN).
 */
export function twoWayAnova(scores: readonly ArrayLike<number>[]): AnovaTable {
  return anovaOf(
    scoreMatrix(
      scores.map((_, i) => `run${i}`),
      scores,
    ),
  ).table;
}

// ---------------------------------------------------------------------------------------------------
// Groups

/**
 * The best run, p against it, the runs tied with it and rank intervals, from every pair's adjusted p
 * (`pairs` in the order of `pairIndex`).
 */
export function runGroups(
  runs: readonly string[],
  means: ArrayLike<number>,
  pairs: readonly PairComparison[],
  alpha: number,
): RunGroups {
  const N = runs.length;
  let best = 0;
  for (let r = 1; r < N; r++) if (means[r] > means[best]) best = r;
  const pVsBest: number[] = [];
  const better = new Array<number>(N).fill(0);
  const worse = new Array<number>(N).fill(0);
  for (let i = 0; i < N; i++) {
    pVsBest.push(i === best ? 1 : pairs[pairIndex(N, Math.min(i, best), Math.max(i, best))].pAdj);
    for (let j = i + 1; j < N; j++) {
      const p = pairs[pairIndex(N, i, j)];
      if (!p.significant) continue;
      // diff = mean(j) − mean(i): positive when j is the better run.
      if (p.diff > 0) {
        better[i]++;
        worse[j]++;
      } else if (p.diff < 0) {
        better[j]++;
        worse[i]++;
      }
    }
  }
  return {
    best: runs[best],
    pVsBest,
    tiedWithBest: runs.filter((_, i) => !(pVsBest[i] < alpha)),
    rankIntervals: runs.map((_, i) => [1 + better[i], N - worse[i]] as [number, number]),
  };
}

/** Index of pair (i, j), i < j, in R's order (1,2), (1,3), …, (1,N), (2,3), … of N runs. */
export function pairIndex(N: number, i: number, j: number): number {
  return i * N - (i * (i + 1)) / 2 + (j - i - 1);
}

// ---------------------------------------------------------------------------------------------------
// Tukey's HSD

export interface TukeyOptions {
  /** Significance level; intervals are simultaneous 1 − alpha. Default 0.05. */
  alpha?: number;
}

/**
 * Tukey's HSD over every pair of runs after the two-way ANOVA (as R's `TukeyHSD(aov(score ~ run +
 * query), "run", conf.level = 1 − alpha)`): with MSE the residual mean square and Q queries, each pair's
 * standard error is √(MSE/Q), p = P(studentized range(N, df) > |diff| / √(MSE/Q)) and the interval is
 * diff ± qtukey(1 − alpha, N, df)·√(MSE/Q), df = (N − 1)(Q − 1) ≥ 2. When MSE = 0 (the runs differ by
 * a constant on every query) a pair with diff ≠ 0 has p = 0 and the interval [diff, diff], diff = 0
 * has p = 1.
 */
export function tukeyHsd(
  runs: readonly string[],
  scores: readonly ArrayLike<number>[],
  opts: TukeyOptions = {},
): MultiComparison {
  const alpha = opts.alpha ?? DEFAULT_ALPHA;
  checkAlpha(alpha);
  const m = scoreMatrix(runs, scores);
  const { table, means } = anovaOf(m);
  const N = m.runs;
  const df = table.dfResidual;
  if (!(df >= 2))
    throw new RangeError(
      `Tukey HSD needs (runs − 1)(queries − 1) >= 2 residual degrees of freedom, got ${df}`,
    );
  // R: sqrt((MSE / 2) * (1/n_a + 1/n_b)) with n = Q replications of each run.
  const se = Math.sqrt((table.msResidual / 2) * (2 / m.queries));
  const qCritical = qtukey(1 - alpha, N, df);
  const width = qCritical * se;
  const pairs: PairComparison[] = [];
  for (let i = 0; i < N; i++)
    for (let j = i + 1; j < N; j++) {
      const diff = means[j] - means[i];
      let pAdj: number;
      if (se > 0) pAdj = ptukey(Math.abs(diff) / se, N, df, false);
      else pAdj = diff === 0 ? 1 : 0;
      pairs.push({
        a: runs[i],
        b: runs[j],
        diff,
        lwr: diff - width,
        upr: diff + width,
        pAdj,
        significant: pAdj < alpha,
      });
    }
  return {
    method: TUKEY_METHOD,
    alpha,
    runs: [...runs],
    queries: m.queries,
    means: Array.from(means),
    pairs,
    anova: table,
    qCritical,
    ...runGroups(runs, means, pairs, alpha),
  };
}
