// All pairs of N runs as the app and the stats worker use them: one entry point for the three methods
// (Tukey's HSD, its randomized and exact randomized versions), runs given as per-query measures keyed
// by query id, several tasks at once (each alone, and pooled), and CSV / JSON export.
//
// Pooling tasks — the model. Each (task, query) pair is its own block: score = run + block + error,
// i.e. the queries of all tasks are concatenated and compared as one two-way layout without
// replication. This is the same fit as "task as a block, queries nested in tasks"
// (score = run + task + query(task)): the task effect lies inside the span of the (task, query)
// blocks, so the run sums of squares, the residuals and therefore F, Tukey's intervals and p are
// identical; only the block sum of squares would be split in two. Consequences: every query weighs
// the same, so a task with more queries weighs more (averaging the per-task means instead would be a
// different, weighted model, not offered here); a constant added to every score of one task changes
// nothing; there is no run × task interaction term, so a run that wins on one task and loses on
// another shows up as residual noise, not as an effect. The randomized test pools the same way:
// scores are permuted within each (task, query) block.
import { compareUtf8 } from '../retrieval/topk';
import { tukeyHsd, type MultiComparison } from './multi-compare';
import { exactRandomizedTukeyHsd, randomizedTukeyHsd } from './randomized-tukey';

export type AllPairsMethod = 'tukey' | 'randomized' | 'exact-randomized';

export interface AllPairsOptions {
  /** Default 'tukey'. */
  method?: AllPairsMethod;
  /** Significance level. Default 0.05. */
  alpha?: number;
  /** Randomized: trials B (default 1000) and seed (default 0). */
  trials?: number;
  seed?: number;
}

/** All pairs of `runs` (`scores[r][q]`, the same queries in the same order) by `opts.method`. */
export function comparePairs(
  runs: readonly string[],
  scores: readonly ArrayLike<number>[],
  opts: AllPairsOptions = {},
): MultiComparison {
  const method = opts.method ?? 'tukey';
  switch (method) {
    case 'tukey':
      return tukeyHsd(runs, scores, { alpha: opts.alpha });
    case 'randomized':
      return randomizedTukeyHsd(runs, scores, { alpha: opts.alpha, trials: opts.trials, seed: opts.seed });
    case 'exact-randomized':
      return exactRandomizedTukeyHsd(runs, scores, { alpha: opts.alpha });
    default:
      throw new RangeError(`unknown all-pairs method '${method as string}'`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Runs keyed by query id

/** A run's per-query measures, as the reports give them (every judged query, trec_eval -c). */
export interface AllPairsRun {
  id: string;
  name?: string;
  perQuery: ReadonlyMap<string, Readonly<Record<string, number>>>;
}

/** The comparison with the queries it used. */
export interface AllPairsResult extends MultiComparison {
  measure: string;
  /** Queries some run has but not every run (left out). */
  excludedQueries: number;
}

/**
 * One measure's scores of every run over the queries all runs have (byte order of query id). A query
 * some run lacks is left out and counted; a query without the measure is an error.
 */
export function alignRuns(
  inputs: readonly AllPairsRun[],
  measure: string,
): { qids: string[]; scores: Float64Array[]; excluded: number } {
  if (inputs.length === 0) throw new RangeError('no runs to compare');
  const seen = new Set<string>();
  for (const inp of inputs) for (const q of inp.perQuery.keys()) seen.add(q);
  const qids = [...seen].filter((q) => inputs.every((i) => i.perQuery.has(q))).sort(compareUtf8);
  const scores = inputs.map((inp) =>
    Float64Array.from(qids, (q) => {
      const v = inp.perQuery.get(q)![measure];
      if (typeof v !== 'number') throw new Error(`run '${inp.id}', query '${q}': no value for '${measure}'`);
      return v;
    }),
  );
  return { qids, scores, excluded: seen.size - qids.length };
}

/** All pairs of the runs on one measure, over the queries they all have. */
export function allPairs(args: {
  inputs: readonly AllPairsRun[];
  measure: string;
  options?: AllPairsOptions;
}): AllPairsResult {
  const { qids, scores, excluded } = alignRuns(args.inputs, args.measure);
  if (qids.length === 0) throw new RangeError('the runs have no query in common');
  const res = comparePairs(
    args.inputs.map((i) => i.id),
    scores,
    args.options,
  );
  return { ...res, ...withNames(args.inputs), measure: args.measure, excludedQueries: excluded };
}

function withNames(inputs: readonly AllPairsRun[]): { names?: string[] } {
  return inputs.some((i) => i.name !== undefined) ? { names: inputs.map((i) => i.name ?? i.id) } : {};
}

// ---------------------------------------------------------------------------------------------------
// Several tasks

/** One task's scores of the runs (in the runs' order), queries in the same order for every run. */
export interface TaskScores {
  task: string;
  scores: readonly ArrayLike<number>[];
}

export interface TaskComparison {
  task: string;
  /** Absent when the task alone cannot be compared (see `error`). */
  comparison?: MultiComparison;
  error?: string;
}

export interface AcrossTasks {
  perTask: TaskComparison[];
  /** Every (task, query) a block (the file header). */
  pooled: MultiComparison;
}

/**
 * The runs compared on each task alone and on all tasks pooled, each (task, query) pair a block (the
 * model is explained in the file header). A task that cannot be compared alone (e.g. too few queries
 * for Tukey's HSD) carries its error instead; the pooled comparison must succeed.
 */
export function compareAcrossTasks(
  runs: readonly string[],
  tasks: readonly TaskScores[],
  opts: AllPairsOptions = {},
): AcrossTasks {
  if (tasks.length === 0) throw new RangeError('no tasks to compare');
  if (new Set(tasks.map((t) => t.task)).size !== tasks.length)
    throw new RangeError('task names must be distinct');
  const perTask = tasks.map(({ task, scores }): TaskComparison => {
    try {
      return { task, comparison: comparePairs(runs, scores, opts) };
    } catch (e) {
      return { task, error: e instanceof Error ? e.message : String(e) };
    }
  });
  const pooledScores = runs.map((_, r) => {
    let total = 0;
    for (const t of tasks) {
      if (t.scores.length !== runs.length)
        throw new RangeError(`task ${t.task} has ${t.scores.length} runs' scores, expected ${runs.length}`);
      total += t.scores[r].length;
    }
    const out = new Float64Array(total);
    let at = 0;
    for (const t of tasks) {
      out.set(Array.from(t.scores[r]), at);
      at += t.scores[r].length;
    }
    return out;
  });
  const pooled = comparePairs(runs, pooledScores, opts);
  pooled.method += `, ${tasks.length} tasks pooled, each (task, query) a block`;
  return { perTask, pooled };
}

/** `compareAcrossTasks` for runs keyed by id and query id (every task must have the same run ids). */
export function allPairsAcrossTasks(args: {
  tasks: readonly { task: string; inputs: readonly AllPairsRun[] }[];
  measure: string;
  options?: AllPairsOptions;
}): AcrossTasks & { measure: string; excludedQueries: Record<string, number> } {
  if (args.tasks.length === 0) throw new RangeError('no tasks to compare');
  const first = args.tasks[0].inputs;
  const ids = first.map((i) => i.id);
  const excluded: Record<string, number> = {};
  const tasks = args.tasks.map(({ task, inputs }) => {
    const byId = new Map(inputs.map((i) => [i.id, i]));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length || byId.size !== ids.length)
      throw new RangeError(`task ${task} does not have the same runs as task ${args.tasks[0].task}`);
    const { scores, excluded: ex } = alignRuns(
      ids.map((id) => byId.get(id)!),
      args.measure,
    );
    excluded[task] = ex;
    return { task, scores };
  });
  const res = compareAcrossTasks(ids, tasks, args.options);
  const names = withNames(first);
  for (const t of res.perTask) if (t.comparison) Object.assign(t.comparison, names);
  Object.assign(res.pooled, names);
  return { ...res, measure: args.measure, excludedQueries: excluded };
}

// ---------------------------------------------------------------------------------------------------
// Export

const esc = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const num = (v: number | undefined) => (v === undefined ? '' : String(v));

/** The comment lines that open both CSV tables: method and alpha, sizes, the ANOVA or the trials. */
function csvPreamble(c: MultiComparison): string[] {
  const lines = [
    `# method: ${c.method}, alpha ${c.alpha}`,
    `# runs: ${c.runs.length}, queries: ${c.queries}, best: ${c.best}`,
  ];
  const a = c.anova;
  if (a)
    lines.push(
      `# anova: F(${a.dfRun}, ${a.dfResidual}) = ${a.fRun}, p = ${a.pRun}, residual mean square ${a.msResidual}` +
        `, studentized range critical value ${c.qCritical}`,
    );
  if (c.trials !== undefined)
    lines.push(
      c.exact
        ? `# arrangements: ${c.trials} (exact), p = count / arrangements`
        : `# trials: ${c.trials}, seed: ${c.seed}, p = (count + 1) / (trials + 1), se = sqrt(p (1 - p) / trials)`,
    );
  return lines;
}

/** CSV of every pair: `a,b,diff_b_minus_a,lwr,upr,p_adj,se,significant` after the `# method:` lines. */
export function pairsCsv(c: MultiComparison): string {
  const rows = [...csvPreamble(c), 'a,b,diff_b_minus_a,lwr,upr,p_adj,se,significant'];
  for (const p of c.pairs)
    rows.push(
      [
        esc(p.a),
        esc(p.b),
        num(p.diff),
        num(p.lwr),
        num(p.upr),
        num(p.pAdj),
        num(p.se),
        String(p.significant),
      ].join(','),
    );
  return rows.join('\n') + '\n';
}

/** CSV of every run: `run,name,mean,rank_lo,rank_hi,p_adj_vs_best,tied_with_best` after the `# method:` lines. */
export function runsCsv(c: MultiComparison): string {
  const rows = [...csvPreamble(c), 'run,name,mean,rank_lo,rank_hi,p_adj_vs_best,tied_with_best'];
  const tied = new Set(c.tiedWithBest);
  c.runs.forEach((r, i) =>
    rows.push(
      [
        esc(r),
        esc(c.names?.[i] ?? r),
        num(c.means[i]),
        String(c.rankIntervals[i][0]),
        String(c.rankIntervals[i][1]),
        num(c.pVsBest[i]),
        String(tied.has(r)),
      ].join(','),
    ),
  );
  return rows.join('\n') + '\n';
}

/**
 * The comparison as JSON text, with the field names of the R golden files (`tukey_hsd` becomes
 * `pairs`, `diff_b_minus_a`, `p_adj`, `p_adj_vs_best`, `tied_with_best`) and the method spelled out.
 * Non-finite numbers become strings ("NaN", "Infinity").
 */
export function multiComparisonJson(c: MultiComparison): string {
  const out = {
    method: c.method,
    alpha: c.alpha,
    runs: c.runs,
    ...(c.names ? { names: c.names } : {}),
    queries: c.queries,
    means: c.means,
    ...(c.anova
      ? {
          anova: {
            df_run: c.anova.dfRun,
            df_query: c.anova.dfQuery,
            df_residual: c.anova.dfResidual,
            ss_run: c.anova.ssRun,
            ss_query: c.anova.ssQuery,
            ss_residual: c.anova.ssResidual,
            ms_residual: c.anova.msResidual,
            f_run: c.anova.fRun,
            p_run: c.anova.pRun,
          },
          q_critical: c.qCritical,
        }
      : {}),
    ...(c.trials !== undefined
      ? { trials: c.trials, exact: c.exact, ...(c.exact ? {} : { seed: c.seed }) }
      : {}),
    pairs: c.pairs.map((p) => ({
      a: p.a,
      b: p.b,
      diff_b_minus_a: p.diff,
      ...(p.lwr !== undefined ? { lwr: p.lwr, upr: p.upr } : {}),
      p_adj: p.pAdj,
      ...(p.se !== undefined ? { se: p.se } : {}),
      significant: p.significant,
    })),
    best: c.best,
    p_adj_vs_best: c.pVsBest,
    tied_with_best: c.tiedWithBest,
    rank_intervals: c.rankIntervals,
  };
  return (
    JSON.stringify(
      out,
      (_, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v),
      2,
    ) + '\n'
  );
}

// ---------------------------------------------------------------------------------------------------
// The table the app, the headless runner and bench:compare print

/** Run indexes ordered by mean, best first (stable on ties). */
export function orderByMean(c: MultiComparison): number[] {
  return c.runs.map((_, i) => i).sort((i, j) => c.means[j] - c.means[i] || i - j);
}

/** A p value as the tables print it. */
export const formatP = (p: number) => (Number.isNaN(p) ? '–' : p < 0.0001 ? '<0.0001' : p.toFixed(4));

export const RUNS_TABLE_HEADER = ['#', 'Run', 'Mean', 'Rank interval', 'p vs best', 'Tied with best'];

/** One text row per run, best first: mean, rank interval, adjusted p against the best, tied or not. */
export function runsTable(c: MultiComparison): string[][] {
  const tied = new Set(c.tiedWithBest);
  return orderByMean(c).map((i, k) => {
    const [lo, hi] = c.rankIntervals[i];
    const id = c.runs[i];
    return [
      String(k + 1),
      c.names?.[i] ?? id,
      c.means[i].toFixed(4),
      lo === hi ? String(lo) : `${lo}–${hi}`,
      id === c.best ? '' : formatP(c.pVsBest[i]),
      id === c.best ? 'best' : tied.has(id) ? 'yes' : 'no',
    ];
  });
}

/** Rows as padded text columns (the run name column left-aligned, the others right-aligned). */
export function formatTextTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((c, i) => (i === 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '))
    .join('\n');
}
