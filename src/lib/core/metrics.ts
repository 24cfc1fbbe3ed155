// IR measures computed exactly as trec_eval does (nDCG@k, Recall@k, P@k, Success@k, MAP, MAP@k, MRR,
// R-prec and the counters). Spec and file:line references (trec_eval 10.0 unless stated):
// ../shared/golden/metrics/README.md (beside the repo). Pure: no DOM, no Node APIs.
import type { Qrels, Run, ScoredDoc } from './types';

/** How a query's ranking is built from its scored docs. */
export interface RankOptions {
  /** trec_eval -M: keep only the first n docs of the ranking. */
  maxDocs?: number;
  /**
   * Compare scores as float32, like trec_eval 9.x, pytrec_eval, BEIR and MTEB (scores equal in float32
   * tie and are ordered by docno). Default false: compare as double, like trec_eval 10.0.
   */
  float32Ties?: boolean;
}

/** Options of `evaluate`, named after trec_eval's flags. */
export interface EvalOptions extends RankOptions {
  /** trec_eval -l: a doc is relevant iff its grade >= this. Default 1. Not used by ndcg_cut. */
  relevanceLevel?: number;
  /** trec_eval -c: every qrels query counts; a query absent from the run scores 0. */
  complete?: boolean;
  /**
   * Qrels queries absent from the run (without `complete`): 'skip' (default) leaves them out of the
   * average like trec_eval 9.0.8 / pytrec_eval / BEIR / MTEB; 'error' throws, like trec_eval 10.0, which
   * stops with exit status 4 ("result qid ... not found in qrels").
   */
  missingQueries?: 'skip' | 'error';
}

export interface EvalResult {
  /** Per evaluated query: measure name → value (`num_q` is only in `all`, as trec_eval prints it). */
  perQuery: Map<string, Record<string, number>>;
  /** Means over the evaluated queries; `num_q`, `num_ret`, `num_rel`, `num_rel_ret` are sums. */
  all: Record<string, number>;
  /** Evaluated query ids in trec_eval's order (byte order). */
  evaluatedQueries: string[];
}

// ---------------------------------------------------------------------------------------------------
// Ordering

/**
 * C `strcmp` on the UTF-8 encodings of two strings (byte order = code point order), without encoding.
 * UTF-16 code units order surrogates (U+10000 and up) below U+E000..U+FFFF, so they are remapped.
 */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800) x += x >= 0xe000 ? -0x800 : 0x2000;
    if (y >= 0xd800) y += y >= 0xe000 ? -0x800 : 0x2000;
    return x - y;
  }
  return a.length - b.length;
}

/**
 * A query's docs in trec_eval's order: score descending, equal scores by docno descending byte-wise
 * (form_res_rels.c:112-113, comp_sim_docno at :266-275), then cut to `maxDocs` (:115-117).
 * The input's order and rank are ignored. NaN scores (undefined in trec_eval) sort last.
 */
export function rankQuery(docs: readonly ScoredDoc[], opts: RankOptions = {}): ScoredDoc[] {
  const n = docs.length;
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const s = docs[i].score;
    keys[i] = Number.isNaN(s) ? -Infinity : opts.float32Ties ? Math.fround(s) : s;
  }
  const idx = Array.from({ length: n }, (_, i) => i);
  idx.sort((i, j) => {
    const a = keys[i];
    const b = keys[j];
    if (a > b) return -1;
    if (a < b) return 1;
    const na = Number.isNaN(docs[i].score);
    if (na !== Number.isNaN(docs[j].score)) return na ? 1 : -1;
    return compareBytes(docs[j].docId, docs[i].docId);
  });
  const max = opts.maxDocs ?? Infinity;
  const out: ScoredDoc[] = [];
  for (let r = 0; r < n && r < max; r++) out.push(docs[idx[r]]);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Measure names

type CutFamily = 'P' | 'recall' | 'ndcg_cut' | 'map_cut' | 'success';
type Plain = 'num_q' | 'num_ret' | 'num_rel' | 'num_rel_ret' | 'map' | 'Rprec' | 'recip_rank';

/** A measure name split into family and cutoff. */
export type ParsedMeasure = { name: string; family: Plain } | { name: string; family: CutFamily; k: number };

// trec_eval prints measures in its table order (measures.c te_trec_measures), cutoffs ascending.
const FAMILY_ORDER = [
  'num_q',
  'num_ret',
  'num_rel',
  'num_rel_ret',
  'map',
  'Rprec',
  'recip_rank',
  'P',
  'recall',
  'ndcg_cut',
  'map_cut',
  'success',
] as const;
const CUT_FAMILIES: readonly string[] = ['P', 'recall', 'ndcg_cut', 'map_cut', 'success'];
const COUNTERS: readonly string[] = ['num_q', 'num_ret', 'num_rel', 'num_rel_ret'];

/** trec_eval's default cutoffs when a family is requested without parameters (`-m P`). */
export const DEFAULT_CUTOFFS: Readonly<Record<CutFamily, readonly number[]>> = {
  P: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  recall: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  ndcg_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  map_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  success: [1, 5, 10],
};

/** Parses a printed measure name (`ndcg_cut_10`, `P_5`, `map`); throws on unknown names. */
export function parseMeasure(name: string): ParsedMeasure {
  if ((FAMILY_ORDER as readonly string[]).includes(name) && !CUT_FAMILIES.includes(name)) {
    return { name, family: name as Plain };
  }
  const m = /^(P|recall|ndcg_cut|map_cut|success)_([1-9][0-9]*)$/.exec(name);
  if (m) {
    const k = Number(m[2]);
    if (Number.isSafeInteger(k)) return { name, family: m[1] as CutFamily, k };
  }
  throw new Error(
    `unknown measure '${name}' (supported: ${FAMILY_ORDER.filter((f) => !CUT_FAMILIES.includes(f)).join(', ')}, ` +
      `and P_k, recall_k, ndcg_cut_k, map_cut_k, success_k for k >= 1)`,
  );
}

/**
 * Expands a trec_eval `-m` argument into printed names: `P.1,5,10` → P_1, P_5, P_10; `ndcg_cut` →
 * trec_eval's default cutoffs; `map` → map. Cutoffs must be positive and distinct, as in trec_eval.
 */
export function expandMeasureSpec(spec: string): string[] {
  const dot = spec.indexOf('.');
  const family = dot < 0 ? spec : spec.slice(0, dot);
  if (!CUT_FAMILIES.includes(family)) {
    if (dot >= 0) throw new Error(`measure '${family}' takes no parameters: '${spec}'`);
    return [parseMeasure(spec).name];
  }
  let ks: number[];
  if (dot < 0) ks = [...DEFAULT_CUTOFFS[family as CutFamily]];
  else {
    ks = spec
      .slice(dot + 1)
      .split(',')
      .map((s) => {
        if (!/^[0-9]+$/.test(s) || !(Number(s) > 0)) throw new Error(`bad cutoff '${s}' in '${spec}'`);
        return Number(s);
      });
    if (new Set(ks).size !== ks.length) throw new Error(`duplicate cutoff in '${spec}'`);
    ks.sort((a, b) => a - b);
  }
  return ks.map((k) => `${family}_${k}`);
}

/** Sorts measure names into trec_eval's print order and drops duplicates; throws on unknown names. */
export function sortMeasures(names: readonly string[]): string[] {
  const parsed = [...new Set(names)].map(parseMeasure);
  const rank = (p: ParsedMeasure) => (FAMILY_ORDER as readonly string[]).indexOf(p.family);
  parsed.sort((a, b) => rank(a) - rank(b) || ('k' in a && 'k' in b ? a.k - b.k : 0));
  return parsed.map((p) => p.name);
}

/** Friendly labels of the measures without a cutoff. */
export const MEASURE_LABELS: Readonly<Record<string, string>> = {
  map: 'MAP',
  recip_rank: 'MRR',
  Rprec: 'R-prec',
  num_q: 'Queries',
  num_ret: 'Retrieved',
  num_rel: 'Relevant',
  num_rel_ret: 'Relevant retrieved',
};
const FAMILY_LABELS: Readonly<Record<CutFamily, string>> = {
  ndcg_cut: 'nDCG',
  recall: 'Recall',
  P: 'P',
  success: 'Success',
  map_cut: 'MAP',
};

/** UI label of a measure name: `ndcg_cut_10` → `nDCG@10`, `recip_rank` → `MRR`; unknown names unchanged. */
export function measureLabel(name: string): string {
  if (name in MEASURE_LABELS) return MEASURE_LABELS[name];
  const m = /^(P|recall|ndcg_cut|map_cut|success)_([0-9]+)$/.exec(name);
  return m ? `${FAMILY_LABELS[m[1] as CutFamily]}@${m[2]}` : name;
}

/** The measures the UI shows: nDCG, Recall, P, Success at each k, then MAP, MAP@10, MRR, R-prec, counters. */
export function standardMeasures(ks: readonly number[] = [1, 5, 10, 100]): string[] {
  const cut = [...new Set(ks)].sort((a, b) => a - b);
  for (const k of cut) if (!Number.isSafeInteger(k) || k < 1) throw new Error(`bad cutoff ${k}`);
  const out: string[] = [];
  for (const family of ['ndcg_cut', 'recall', 'P', 'success'])
    for (const k of cut) out.push(`${family}_${k}`);
  out.push('map', 'map_cut_10', 'recip_rank', 'Rprec', 'num_q', 'num_ret', 'num_rel', 'num_rel_ret');
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Evaluation

/** Qrels judgment for a doc not listed in the qrels (trec_eval.h:226 RELVALUE_NONPOOL). */
const NONPOOL = -1;
/** Qrels judgment for a listed doc with a negative grade (trec_eval.h:227 RELVALUE_UNJUDGED). */
const UNJUDGED = -2;

/** One query's ranking turned into what every measure needs (trec_eval's RES_RELS). */
interface ResRels {
  /** Judgment value of the doc at each rank (grade, NONPOOL or UNJUDGED). */
  rels: number[];
  numRel: number;
  numRelRet: number;
  /** Grades > 0 of every qrels entry of the query, descending: the ideal ranking for IDCG. */
  idealGains: number[];
}

function formResRels(
  ranked: readonly ScoredDoc[],
  judged: ReadonlyMap<string, number>,
  level: number,
): ResRels {
  const rels: number[] = [];
  let numRelRet = 0;
  const seen = new Set<string>();
  for (const d of ranked) {
    // form_res_rels.c rejects duplicate docnos (checked after -M, like trec_eval).
    if (seen.has(d.docId)) throw new Error(`duplicate doc '${d.docId}' in one query of the run`);
    seen.add(d.docId);
    const g = judged.get(d.docId);
    const v = g === undefined ? NONPOOL : g < 0 ? UNJUDGED : g;
    rels.push(v);
    // num_rel_ret only counts judged docs (form_res_rels.c), even with -l <= -1.
    if (v >= 0 && v >= level) numRelRet++;
  }
  let numRel = 0;
  const idealGains: number[] = [];
  for (const g of judged.values()) {
    // rel_levels count only grades >= 0 (form_res_rels.c:160-194); R = entries with grade >= L (:234-241).
    if (g >= 0 && g >= level) numRel++;
    if (g > 0) idealGains.push(g);
  }
  idealGains.sort((a, b) => b - a);
  return { rels, numRel, numRelRet, idealGains };
}

function computeQuery(
  rr: ResRels,
  measures: readonly ParsedMeasure[],
  level: number,
): Record<string, number> {
  const { rels, numRel: R, idealGains } = rr;
  const N = rels.length;
  // relAt[i] = relevant docs in the top i.
  const relAt = new Int32Array(N + 1);
  for (let i = 0; i < N; i++) relAt[i + 1] = relAt[i] + (rels[i] >= level ? 1 : 0);
  const relTop = (k: number) => relAt[Math.min(k, N)];

  const out: Record<string, number> = {};
  for (const m of measures) {
    switch (m.family) {
      case 'num_q':
        break;
      case 'num_ret':
        out[m.name] = N;
        break;
      case 'num_rel':
        out[m.name] = R;
        break;
      case 'num_rel_ret':
        out[m.name] = rr.numRelRet;
        break;
      case 'P':
        // m_P.c:63-80: always divided by k, missing ranks count as non-relevant.
        out[m.name] = relTop(m.k) / m.k;
        break;
      case 'recall':
        out[m.name] = R ? relTop(m.k) / R : 0;
        break;
      case 'success':
        out[m.name] = relTop(m.k) > 0 ? 1 : 0;
        break;
      case 'Rprec':
        out[m.name] = R ? relTop(R) / R : 0;
        break;
      case 'recip_rank': {
        let v = 0;
        for (let i = 0; i < N; i++) {
          if (rels[i] >= level) {
            v = 1 / (i + 1);
            break;
          }
        }
        out[m.name] = v;
        break;
      }
      case 'map':
      case 'map_cut': {
        // m_map.c:55-66, m_map_cut.c:57-79: precision at each relevant rank, summed in rank order, / R.
        const lim = m.family === 'map_cut' ? Math.min(m.k, N) : N;
        let sum = 0;
        let found = 0;
        for (let i = 0; i < lim; i++) {
          if (rels[i] >= level) {
            found++;
            sum += found / (i + 1);
          }
        }
        out[m.name] = found && R ? sum / R : 0;
        break;
      }
      case 'ndcg_cut': {
        // m_ndcg_cut.c:61-128: linear gain = judgment value if > 0, discount log2(rank + 1); the ideal
        // ranking is every qrels grade > 0 descending, retrieved or not. -l is not used. 0 if IDCG = 0.
        const lim = Math.min(m.k, N);
        let dcg = 0;
        for (let i = 0; i < lim; i++) if (rels[i] > 0) dcg += rels[i] / Math.log2(i + 2);
        const ilim = Math.min(m.k, idealGains.length);
        let idcg = 0;
        for (let i = 0; i < ilim; i++) idcg += idealGains[i] / Math.log2(i + 2);
        out[m.name] = idcg > 0 ? dcg / idcg : dcg;
        break;
      }
    }
  }
  return out;
}

/**
 * Scores `run` against `qrels` like `trec_eval -q -m ...`. Queries only in the run are ignored; qrels
 * queries present in the run are evaluated even with no relevant doc (they score 0 and count).
 * A query "is in the run" when it has at least one doc (an empty list is the same as no lines).
 */
export function evaluate(
  qrels: Qrels,
  run: Run,
  measures: readonly string[],
  opts: EvalOptions = {},
): EvalResult {
  const level = opts.relevanceLevel ?? 1;
  const names = sortMeasures(measures);
  const parsed = names.map(parseMeasure);
  const rankOpts: RankOptions = { maxDocs: opts.maxDocs, float32Ties: opts.float32Ties };

  // A query exists in the qrels with at least one line (even all grade 0).
  const qrelsIds = [...qrels.keys()].filter((q) => (qrels.get(q)?.size ?? 0) > 0).sort(compareBytes);
  const inRun = (q: string) => (run.get(q)?.length ?? 0) > 0;
  const missing = qrelsIds.filter((q) => !inRun(q));
  if (missing.length && !opts.complete && opts.missingQueries === 'error') {
    throw new Error(`qrels query '${missing[0]}' has no results in the run (${missing.length} such queries)`);
  }
  // Default: intersection of qrels and run queries (trec_eval 9.0.8 trec_eval.c:362-374). With -c, every
  // qrels query, a missing one as an empty ranking (10.0 trec_eval.c:383-387, 416-431).
  const evaluated = opts.complete ? qrelsIds : qrelsIds.filter(inRun);

  const perQuery = new Map<string, Record<string, number>>();
  const sums: Record<string, number> = {};
  for (const n of names) sums[n] = 0;
  for (const q of evaluated) {
    const judged = qrels.get(q)!;
    const ranked = rankQuery(run.get(q) ?? [], rankOpts);
    const values = computeQuery(formResRels(ranked, judged, level), parsed, level);
    perQuery.set(q, values);
    for (const n of names) if (n !== 'num_q') sums[n] += values[n];
  }

  // meas_avg.c:37-42, 53-60: means divide by the counted queries (with -c, the number of qrels queries);
  // counters are totals and num_q is the number of queries.
  const numQ = evaluated.length;
  const all: Record<string, number> = {};
  for (const p of parsed) {
    if (p.family === 'num_q') all[p.name] = numQ;
    else if (COUNTERS.includes(p.family)) all[p.name] = sums[p.name];
    else all[p.name] = numQ ? sums[p.name] / numQ : 0;
  }
  if (opts.complete && 'num_rel' in all) {
    // m_num_rel.c:53-69: with -c the total counts grades > 0 over all qrels queries, ignoring -l.
    let total = 0;
    for (const q of qrelsIds) for (const g of qrels.get(q)!.values()) if (g > 0) total++;
    all.num_rel = total;
  }
  return { perQuery, all, evaluatedQueries: evaluated };
}

/** Removes each query's excluded doc ids (e.g. a shard's `exclude_ids`) from a run, before scoring. */
export function applyExclusions(run: Run, excludeByQuery: ReadonlyMap<string, readonly string[]>): Run {
  const out: Run = new Map();
  for (const [q, docs] of run) {
    const ex = excludeByQuery.get(q);
    if (!ex || ex.length === 0) out.set(q, docs);
    else {
      const drop = new Set(ex);
      out.set(
        q,
        docs.filter((d) => !drop.has(d.docId)),
      );
    }
  }
  return out;
}

/**
 * MRR@k: reciprocal rank of the first relevant doc within the top k of trec_eval's ranking, 0 if none
 * (= `trec_eval -M k -m recip_rank`). Same query selection and options as `evaluate`.
 */
export function mrrAtK(
  qrels: Qrels,
  run: Run,
  k: number,
  opts: EvalOptions = {},
): { perQuery: Map<string, number>; mean: number; evaluatedQueries: string[] } {
  if (!Number.isSafeInteger(k) || k < 1) throw new Error(`bad cutoff ${k}`);
  const maxDocs = Math.min(k, opts.maxDocs ?? Infinity);
  const r = evaluate(qrels, run, ['recip_rank'], { ...opts, maxDocs });
  const perQuery = new Map<string, number>();
  for (const [q, v] of r.perQuery) perQuery.set(q, v.recip_rank);
  return { perQuery, mean: r.all.recip_rank, evaluatedQueries: r.evaluatedQueries };
}
