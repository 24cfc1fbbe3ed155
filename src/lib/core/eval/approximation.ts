// Quality under approximation (issue 37 item 2): for one task and one dense model, the exact run and
// its approximate versions (HNSW at several ef, the packed IVF index at several nprobe, the compact
// two-pass scan, other encoder dtypes) side by side: does the approximation change the retrieval
// measure itself, significantly, and at what cost? Pure: the app's state gathers the runs, this
// builds the rows, the panel shows them and `approximationCsv` exports them.
//
// Per row, over the queries every row has (byte order of query id; a query some row lacks is left
// out and counted):
// - the measure's mean with its 95 % percentile bootstrap interval (`bootstrapMean`, seeded);
// - Δ = mean(row) − mean(exact) with its paired bootstrap interval, the two-sided paired
//   randomization test's p (sign flips, seeded) and that p Holm-adjusted over the approximate rows
//   (one family: "does any approximation change the measure?");
// - the item-1 groups: Tukey's HSD over every row (exact included, queries as blocks): whether the
//   row is tied with exact (its pair with exact not significant), tied with the best row, and its rank
//   interval;
// - recall@10 against exact: per query |top10(row) ∩ top10(exact)| / |top10(exact)|, averaged over the
//   queries whose exact top 10 is not empty;
// - cost as given: query latency p50/p99 (numpy's linear percentile of the per-query times), bytes
//   read per query (Range reads), the tab's memory for the index; null where not known.
import { compareUtf8 } from '../retrieval/topk';
import { tukeyHsd, pairIndex, DEFAULT_ALPHA } from './multi-compare';
import { bootstrapMean, holmBonferroni, pairedBootstrap, randomizationTest, samplePercentile } from './stats';

/** Per-query search times of a run, summarised (numpy's linear percentiles), ms. */
export interface QueryLatency {
  /** Queries timed (one at a time). */
  queries: number;
  p50: number;
  p99: number;
  mean: number;
}

/** The summary of per-query times (null when none). */
export function queryLatency(ms: readonly number[]): QueryLatency | null {
  if (!ms.length) return null;
  return {
    queries: ms.length,
    p50: samplePercentile(ms, 50),
    p99: samplePercentile(ms, 99),
    mean: ms.reduce((a, x) => a + x, 0) / ms.length,
  };
}

/**
 * The per-query search times a run's ranked lists carry (RankedList.ms: exact search's scoring and
 * top k in the retrieval worker, the compact store's scan and rescoring in the index worker),
 * summarised; queries that were not searched (no part embedded) carry none and are not counted.
 * Null when no list has a time (a ranker that does not time its queries).
 */
export function latencyOfLists(lists: readonly { ms?: number }[]): QueryLatency | null {
  return queryLatency(
    lists.flatMap((l) => (typeof l.ms === 'number' && Number.isFinite(l.ms) ? [l.ms] : [])),
  );
}

/** What a row approximates. */
export type ApproxKind = 'exact' | 'hnsw' | 'ivf' | 'compact' | 'dtype';

/** One run of the table: its measure per query, its rankings and what it cost. */
export interface ApproxRunInput {
  id: string;
  /** Shown in the table, e.g. "HNSW ef 64". */
  label: string;
  kind: ApproxKind;
  /** The knob's value in words (ef, nprobe, candidates, dtype); absent for exact search. */
  setting?: string;
  /** The chosen measure per query. */
  perQuery: ReadonlyMap<string, number>;
  /** Each query's ranked document ids (at least the top 10). */
  top: ReadonlyMap<string, readonly string[]>;
  /** Per-query search times, ms (absent: not measured). */
  queryMs?: readonly number[];
  /** The same, summarised when the run stored only the summary. */
  latency?: QueryLatency | null;
  /** Mean search time per query, ms, where only that is known (e.g. HNSW's queries/s at this ef). */
  meanMs?: number | null;
  /** Bytes read per query (Range reads), mean over the run's queries (absent: none or unknown). */
  bytesPerQuery?: number | null;
  /** The tab's memory for the index, bytes (absent: unknown). */
  indexBytes?: number | null;
}

export interface ApproxOptions {
  /** Significance level of the tests and groups; intervals are 1 − alpha. Default 0.05. */
  alpha?: number;
  /** Bootstrap resamples (default 2000) and randomization resamples (default 10000). */
  bootstrap?: number;
  randomization?: number;
  /** Seed of both (default 42). */
  seed?: number;
}

export interface ApproxRow {
  id: string;
  label: string;
  kind: ApproxKind;
  setting: string;
  mean: number;
  lower: number;
  upper: number;
  /** mean − mean(exact) with its paired bootstrap interval (0 and [0, 0] for the exact row). */
  diff: number;
  diffLower: number;
  diffUpper: number;
  /** Paired randomization test against exact, two-sided, and Holm-adjusted over the rows (null for exact). */
  p: number | null;
  pHolm: number | null;
  /** Tukey HSD: adjusted p of the pair with exact (null for exact, or when fewer than two rows). */
  pTukeyVsExact: number | null;
  tiedWithExact: boolean;
  tiedWithBest: boolean;
  /** Possible ranks from the significant pairs alone (Tukey HSD). */
  rankInterval: [number, number];
  recallAt10: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** Mean search time per query: of `queryMs` when given, else as given. */
  meanMs: number | null;
  bytesPerQuery: number | null;
  indexBytes: number | null;
}

export interface ApproxTable {
  measure: string;
  /** Queries every row has, and those some row lacks (left out). */
  queries: number;
  excludedQueries: number;
  alpha: number;
  bootstrap: number;
  randomization: number;
  seed: number;
  /** The method of the groups, in words. */
  groupsMethod: string;
  /** Exact first, then the approximate rows in the order given. */
  rows: ApproxRow[];
}

/** recall@k of `got` against `truth`'s top k, averaged over queries whose truth is not empty. */
export function recallAgainst(
  truth: ReadonlyMap<string, readonly string[]>,
  got: ReadonlyMap<string, readonly string[]>,
  qids: readonly string[],
  k = 10,
): number {
  let sum = 0;
  let counted = 0;
  for (const q of qids) {
    const t = (truth.get(q) ?? []).slice(0, k);
    if (!t.length) continue;
    const g = new Set((got.get(q) ?? []).slice(0, k));
    sum += t.filter((d) => g.has(d)).length / t.length;
    counted++;
  }
  return counted ? sum / counted : 1;
}

/** The table's rows: `exact` first, each of `approx` compared with it (see the file header). */
export function approximationTable(args: {
  measure: string;
  exact: ApproxRunInput;
  approx: readonly ApproxRunInput[];
  options?: ApproxOptions;
}): ApproxTable {
  const o = args.options ?? {};
  const alpha = o.alpha ?? DEFAULT_ALPHA;
  const B = o.bootstrap ?? 2000;
  const R = o.randomization ?? 10000;
  const seed = o.seed ?? 42;
  const all = [args.exact, ...args.approx];
  if (new Set(all.map((r) => r.id)).size !== all.length) throw new RangeError('two rows share an id');
  const seen = new Set<string>();
  for (const r of all) for (const q of r.perQuery.keys()) seen.add(q);
  const qids = [...seen].filter((q) => all.every((r) => r.perQuery.has(q))).sort(compareUtf8);
  if (!qids.length) throw new RangeError('the runs have no query in common');
  const scores = all.map((r) => Float64Array.from(qids, (q) => r.perQuery.get(q)!));
  const ex = scores[0];

  // Tukey's HSD needs two rows and (rows − 1)(queries − 1) ≥ 2.
  const tukey =
    all.length >= 2 && (all.length - 1) * (qids.length - 1) >= 2
      ? tukeyHsd(
          all.map((r) => r.id),
          scores,
          { alpha },
        )
      : null;
  const tests = args.approx.map((_, i) =>
    randomizationTest(ex, scores[i + 1], { resamples: R, seed: seed + i + 1 }),
  );
  const holm = holmBonferroni(tests.map((t) => t.pValue));
  const rows = all.map((r, i): ApproxRow => {
    const ci = bootstrapMean(scores[i], { resamples: B, seed: seed + i });
    const d = i === 0 ? null : pairedBootstrap(ex, scores[i], { resamples: B, seed: seed + i });
    const lat = (r.queryMs?.length ? queryLatency(r.queryMs) : null) ?? r.latency ?? null;
    const pT = tukey && i > 0 ? tukey.pairs[pairIndex(all.length, 0, i)].pAdj : null;
    return {
      id: r.id,
      label: r.label,
      kind: r.kind,
      setting: r.setting ?? '',
      mean: ci.mean,
      lower: ci.lower,
      upper: ci.upper,
      diff: d ? d.diff.mean : 0,
      diffLower: d ? d.diff.lower : 0,
      diffUpper: d ? d.diff.upper : 0,
      p: i === 0 ? null : tests[i - 1].pValue,
      pHolm: i === 0 ? null : holm[i - 1],
      pTukeyVsExact: pT,
      tiedWithExact: i === 0 || pT === null || !(pT < alpha),
      tiedWithBest: tukey ? tukey.tiedWithBest.includes(r.id) : true,
      rankInterval: tukey ? tukey.rankIntervals[i] : [1, all.length],
      recallAt10: i === 0 ? 1 : recallAgainst(args.exact.top, r.top, qids),
      p50Ms: lat ? lat.p50 : null,
      p99Ms: lat ? lat.p99 : null,
      meanMs: lat ? lat.mean : (r.meanMs ?? null),
      bytesPerQuery: r.bytesPerQuery ?? null,
      indexBytes: r.indexBytes ?? null,
    };
  });
  return {
    measure: args.measure,
    queries: qids.length,
    excludedQueries: seen.size - qids.length,
    alpha,
    bootstrap: B,
    randomization: R,
    seed,
    groupsMethod: tukey ? tukey.method : 'none (fewer than two rows)',
    rows,
  };
}

const CSV_COLUMNS = [
  'label',
  'kind',
  'setting',
  'mean',
  'ci_lower',
  'ci_upper',
  'diff_vs_exact',
  'diff_ci_lower',
  'diff_ci_upper',
  'p_randomization',
  'p_holm',
  'p_tukey_vs_exact',
  'tied_with_exact',
  'tied_with_best',
  'rank_interval',
  'recall_at_10_vs_exact',
  'query_ms_p50',
  'query_ms_p99',
  'query_ms_mean',
  'bytes_per_query',
  'index_bytes',
] as const;

function cell(v: string | number | boolean | null): string {
  if (v === null) return '';
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The table as CSV: `#` lines naming the measure, the queries and the methods, then one line per row. */
export function approximationCsv(t: ApproxTable): string {
  const head = [
    `# quality under approximation: ${t.measure} over ${t.queries} queries (${t.excludedQueries} left out: not in every run)`,
    `# mean: ${100 * (1 - t.alpha)}% percentile bootstrap, ${t.bootstrap} resamples, seed ${t.seed}; diff: paired bootstrap; p: paired randomization test (${t.randomization} sign flips), Holm over the approximate rows`,
    `# groups: ${t.groupsMethod}, alpha ${t.alpha}`,
    CSV_COLUMNS.join(','),
  ];
  const lines = t.rows.map((r) =>
    [
      r.label,
      r.kind,
      r.setting,
      r.mean,
      r.lower,
      r.upper,
      r.diff,
      r.diffLower,
      r.diffUpper,
      r.p,
      r.pHolm,
      r.pTukeyVsExact,
      r.tiedWithExact,
      r.tiedWithBest,
      `${r.rankInterval[0]}-${r.rankInterval[1]}`,
      r.recallAt10,
      r.p50Ms,
      r.p99Ms,
      r.meanMs,
      r.bytesPerQuery,
      r.indexBytes,
    ]
      .map(cell)
      .join(','),
  );
  return [...head, ...lines].join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------
// Which stored runs are rows

/** What a stored dense run approximates, read from its configuration. */
export interface ApproxRole {
  kind: ApproxKind;
  setting: string;
  label: string;
  /** Sort key within the table: dtypes, then HNSW by ef, IVF by nprobe, the compact scans. */
  order: number;
}

/** The dense configuration fields this needs (a RetrieverConfig of kind 'dense'). */
export interface ApproxConfig {
  dtype: string;
  ann?: {
    efSearch: number;
    M: number;
    curve?: { efSearch: number; qps: number }[];
    latency?: QueryLatency;
  };
  ivf?: { nprobe: number; nlist: number; totalBytes: number; queries: number; latency?: QueryLatency };
  index?: { rerank: number; firstPass?: { bits: number; candidates: number } };
  /** Per-query search times of an exact or compact-store run (each query's scoring and top k). */
  latency?: QueryLatency;
}

/**
 * A dense run's role against the exact run of `exactDtype`: HNSW (by ef), packed IVF (by nprobe), the
 * compact store (two-pass 4-bit or int8 scan), exact search with another encoder dtype, or exact search
 * itself (kind 'exact', setting the dtype).
 */
export function approxRole(c: ApproxConfig, exactDtype: string): ApproxRole {
  const dt = c.dtype === exactDtype ? '' : ` (${c.dtype})`;
  if (c.ann)
    return {
      kind: 'hnsw',
      setting: `ef ${c.ann.efSearch}`,
      label: `HNSW M ${c.ann.M}, ef ${c.ann.efSearch}${dt}`,
      order: 2e6 + c.ann.efSearch,
    };
  if (c.ivf)
    return {
      kind: 'ivf',
      setting: `nprobe ${c.ivf.nprobe}`,
      label: `IVF ${c.ivf.nlist} lists, nprobe ${c.ivf.nprobe}${dt}`,
      order: 3e6 + c.ivf.nprobe,
    };
  if (c.index)
    return c.index.firstPass
      ? {
          kind: 'compact',
          setting: `4-bit → ${c.index.firstPass.candidates} → ${c.index.rerank}`,
          label: `two-pass 4-bit scan, ${c.index.firstPass.candidates} candidates${dt}`,
          order: 4e6 + c.index.firstPass.candidates,
        }
      : {
          kind: 'compact',
          setting: `int8 → ${c.index.rerank}`,
          label: `int8 scan, exact top ${c.index.rerank}${dt}`,
          order: 5e6 + c.index.rerank,
        };
  if (c.dtype === exactDtype)
    return { kind: 'exact', setting: c.dtype, label: `exact (${c.dtype})`, order: 0 };
  return { kind: 'dtype', setting: c.dtype, label: `exact, ${c.dtype} encoder`, order: 1e6 };
}

/**
 * The tab's memory for a row's index, bytes, estimated from the corpus size n × dim: exact search
 * holds the float32 matrix (4·n·dim); HNSW the same vectors plus its level-0 links (2·M neighbours of
 * 4 bytes per row); the compact store its int8 codes (n·dim) and, for the two-pass scan, the 4-bit
 * planes (n·dim / 2), the float32 rows staying in OPFS; the packed IVF index only its centroids in
 * float32 (nlist·dim·4), the lists being read per query.
 */
export function indexMemoryEstimate(c: ApproxConfig, n: number, dim: number): number {
  if (c.ann) return 4 * n * dim + n * 2 * c.ann.M * 4;
  if (c.ivf) return c.ivf.nlist * dim * 4;
  if (c.index) return n * dim + (c.index.firstPass ? (n * dim) / 2 : 0);
  return 4 * n * dim;
}

/**
 * Bytes read per query: the packed IVF index's Range reads (bodies received, mean over the run's
 * queries); the compact store's exact rescoring reads its top rows from OPFS (rerank · dim · 4); 0 for
 * an index held in memory.
 */
export function bytesPerQueryOf(c: ApproxConfig, dim: number): number {
  if (c.ivf) return c.ivf.queries ? c.ivf.totalBytes / c.ivf.queries : 0;
  if (c.index) return c.index.rerank * dim * 4;
  return 0;
}

/**
 * The run's per-query search times as it stored them: HNSW's timing pass, the IVF worker's clock, or
 * (exact search, the compact store's scans, other dtypes) each query's own ranking time in its worker.
 */
export function latencyOf(c: ApproxConfig): QueryLatency | null {
  return c.ann?.latency ?? c.ivf?.latency ?? c.latency ?? null;
}

/** HNSW's mean search time per query at the run's ef, from its recall–QPS curve (null when not on it). */
export function hnswMeanMs(c: ApproxConfig): number | null {
  const p = c.ann?.curve?.find((x) => x.efSearch === c.ann!.efSearch);
  return p && p.qps > 0 ? 1000 / p.qps : null;
}
