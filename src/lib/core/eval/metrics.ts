// IR measures computed exactly as trec_eval does: every measure of `trec_eval -m all_trec` (nDCG@k,
// Recall@k, P@k, Success@k, MAP, MAP@k, MRR, R-prec, bpref, infAP, rbp, G, ... and the counters). Spec
// and file:line references (trec_eval 10.0 unless stated): ../shared/golden/metrics/README.md (beside
// the repo). Measure names live in measure-names.ts, the shared per-query pieces in res-rels.ts, the
// newer families in measures-gain.ts and measures-set.ts. Pure: no DOM, no Node APIs.
import type { Qrels, Run, ScoredDoc } from '../types';
import {
  COUNTERS,
  GM_EPSILON,
  INFAP_EPSILON,
  parseMeasure,
  SUMMARY_ONLY_MEASURES,
  sortMeasures,
  type ParsedMeasure,
  type TrecEvalVersion,
} from './measure-names';
import { expNearest, logNearest } from './log-exp';
import { NONPOOL, UNJUDGED, formResRels, iprecAtRecall, ndcgAt, type ResRels } from './res-rels';
import { binG, gMeasure, ndcgRel, rbp, rbpResidual, rndcg } from './measures-gain';
import {
  elevenPointAverage,
  relativeP,
  rprecMult,
  setMap,
  setRelativeP,
  unjudgedAt,
  utility,
} from './measures-set';

export * from './measure-names';

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
  /**
   * Whose definition where trec_eval 10.0 and 9.0.8 compute a measure differently: the rank standing
   * for a recall level in `iprec_at_recall_*` and `11pt_avg` (res-rels.ts `recallCutoff`). Default
   * '10.0'. (Which measures exist is the caller's business: `trecEvalSets`.)
   */
  trecEvalVersion?: TrecEvalVersion;
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

/** trec_eval 10.0's ranking for a qrels query missing from the run with -c (trec_eval.c:154-156). */
const BOGUS_RANKING: readonly ScoredDoc[] = [{ docId: 'ceci_nest_pas_un_docno', score: 1 }];
/** Measures trec_eval resets to 0 after scoring the bogus ranking (trec_eval.c:416-431). */
const BOGUS_RESET: readonly string[] = ['num_ret', 'utility', 'unj', 'rbp_resid'];

/** What `computeQuery` needs to know about the requested measures, prepared once per evaluation. */
interface Plan {
  measures: readonly ParsedMeasure[];
  /** Recall levels of the requested iprec_at_recall measures, in `measures` order. */
  iprecLevels: number[];
  version: TrecEvalVersion;
}

function computeQuery(rr: ResRels, plan: Plan, level: number): Record<string, number> {
  const { rels, numRel: R, idealGains } = rr;
  const N = rels.length;
  // relAt[i] = relevant docs in the top i.
  const relAt = new Int32Array(N + 1);
  for (let i = 0; i < N; i++) relAt[i + 1] = relAt[i] + (rels[i] >= level ? 1 : 0);
  const relTop = (k: number) => relAt[Math.min(k, N)];
  const iprec = plan.iprecLevels.length ? iprecAtRecall(rr, plan.iprecLevels, level, plan.version) : [];
  let iprecIndex = 0;

  const out: Record<string, number> = {};
  for (const m of plan.measures) {
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
      case 'num_nonrel_judged_ret':
        out[m.name] = N - rr.numNonpool - rr.numUnjudged - rr.numRelRet;
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
      case 'gm_map':
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
        const ap = found && R ? sum / R : 0;
        // m_gm_map.c: the per-query value is log(max(AP, epsilon)); `evaluate` averages and exponentiates.
        out[m.name] = m.family === 'gm_map' ? logNearest(Math.max(ap, GM_EPSILON)) : ap;
        break;
      }
      case 'ndcg_cut':
        out[m.name] = ndcgAt(rels, idealGains, m.k);
        break;
      case 'ndcg':
        out[m.name] = ndcgAt(rels, idealGains, Infinity);
        break;
      case 'bpref':
      case 'gm_bpref':
      case 'infAP': {
        // m_bpref.c, m_infap.c: only judged docs take part. Unpooled docs are skipped; pooled-but-unjudged
        // docs (qrels value < 0) are skipped by bpref and counted by infAP's sampling estimate.
        let nonrel = 0;
        let relSoFar = 0;
        let unjudged = 0;
        let v = 0;
        const nonrelCap = Math.min(rr.numNonrel, R);
        for (let j = 0; j < N; j++) {
          const x = rels[j];
          if (x === NONPOOL) continue;
          if (x === UNJUDGED) {
            unjudged++;
            continue;
          }
          if (x >= 0 && x < level) {
            nonrel++;
            continue;
          }
          relSoFar++;
          if (m.family !== 'infAP') {
            // Judged non-relevant docs above count up to R of them (bpref's cap).
            v += nonrel > 0 ? 1 - Math.min(nonrel, R) / nonrelCap : 1;
          } else if (j === 0) v += 1;
          else {
            // Expected precision above rank j+1: unpooled docs count as non-relevant, pooled ones are
            // assumed relevant in the proportion of the judged ones (smoothed by epsilon).
            const fj = j;
            v +=
              1 / (fj + 1) +
              (fj / (fj + 1)) *
                ((relSoFar - 1 + nonrel + unjudged) / fj) *
                ((relSoFar - 1 + INFAP_EPSILON) / (relSoFar - 1 + nonrel + 2 * INFAP_EPSILON));
          }
        }
        const value = R ? v / R : v;
        // m_gm_bpref.c: like gm_map, the per-query value is log(max(bpref, epsilon)).
        out[m.name] = m.family === 'gm_bpref' ? logNearest(Math.max(value, GM_EPSILON)) : value;
        break;
      }
      case 'relative_P':
        out[m.name] = relativeP(relTop, R, m.k);
        break;
      case 'Rprec_mult':
        out[m.name] = rprecMult(relTop, R, m.mult);
        break;
      case 'unj':
        out[m.name] = unjudgedAt(rels, m.k);
        break;
      case 'utility':
        out[m.name] = utility(rr);
        break;
      case '11pt_avg':
        out[m.name] = elevenPointAverage(rr, level, plan.version);
        break;
      case 'binG':
        out[m.name] = binG(rr, level);
        break;
      case 'G':
        out[m.name] = gMeasure(rr);
        break;
      case 'ndcg_rel':
        out[m.name] = ndcgRel(rr);
        break;
      case 'Rndcg':
        out[m.name] = rndcg(rr);
        break;
      case 'set_relative_P':
        out[m.name] = setRelativeP(rr);
        break;
      case 'set_map':
        out[m.name] = setMap(rr);
        break;
      case 'rbp':
        out[m.name] = rbp(rr);
        break;
      case 'rbp_resid':
        out[m.name] = rbpResidual(rr);
        break;
      case 'iprec_at_recall':
        out[m.name] = iprec[iprecIndex++];
        break;
      case 'set_P':
        out[m.name] = N ? rr.numRelRet / N : 0;
        break;
      case 'set_recall':
        out[m.name] = R ? rr.numRelRet / R : 0;
        break;
      case 'set_F': {
        // m_set_F.c: (beta + 1) P R / (beta P + R), 0 when nothing relevant is retrieved.
        if (!rr.numRelRet) out[m.name] = 0;
        else {
          const p = rr.numRelRet / N;
          const r = rr.numRelRet / R;
          out[m.name] = ((m.beta + 1) * p * r) / (m.beta * p + r);
        }
        break;
      }
      case 'Judged': {
        // ir_measures' Judged@k: share of the top min(k, N) docs that appear in the qrels with any value.
        const lim = Math.min(m.k, N);
        let n = 0;
        for (let i = 0; i < lim; i++) if (rels[i] !== NONPOOL) n++;
        out[m.name] = lim ? n / lim : 0;
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
 * gm_map has no per-query value (trec_eval prints none): it is only in `all`.
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
  const plan: Plan = {
    measures: parsed,
    iprecLevels: parsed.flatMap((p) => (p.family === 'iprec_at_recall' ? [p.level] : [])),
    version: opts.trecEvalVersion ?? '10.0',
  };
  const rankOpts: RankOptions = { maxDocs: opts.maxDocs, float32Ties: opts.float32Ties };

  // A query exists in the qrels with at least one line (even all grade 0).
  const qrelsIds = [...qrels.keys()].filter((q) => (qrels.get(q)?.size ?? 0) > 0).sort(compareBytes);
  const inRun = (q: string) => (run.get(q)?.length ?? 0) > 0;
  const missing = qrelsIds.filter((q) => !inRun(q));
  if (missing.length && !opts.complete && opts.missingQueries === 'error') {
    throw new Error(`qrels query '${missing[0]}' has no results in the run (${missing.length} such queries)`);
  }
  // Default: intersection of qrels and run queries (trec_eval 9.0.8 trec_eval.c:362-374). With -c, every
  // qrels query; a missing one is scored on trec_eval's bogus ranking of one unpooled doc, and the
  // measures that would count that doc are then reset to 0 (10.0 trec_eval.c:154-156, 383-431).
  const evaluated = opts.complete ? qrelsIds : qrelsIds.filter(inRun);

  const perQuery = new Map<string, Record<string, number>>();
  const sums: Record<string, number> = {};
  for (const n of names) sums[n] = 0;
  for (const q of evaluated) {
    const judged = qrels.get(q)!;
    const bogus = !inRun(q);
    const ranked = rankQuery(bogus ? BOGUS_RANKING : run.get(q)!, rankOpts);
    const values = computeQuery(formResRels(ranked, judged, level), plan, level);
    if (bogus) for (const p of parsed) if (BOGUS_RESET.includes(p.family)) values[p.name] = 0;
    for (const n of names) if (n !== 'num_q') sums[n] += values[n];
    for (const n of SUMMARY_ONLY_MEASURES) delete values[n];
    perQuery.set(q, values);
  }

  // meas_avg.c:37-42, 53-60: means divide by the counted queries (with -c, the number of qrels queries);
  // counters are totals and num_q is the number of queries. gm_map: exp of the mean log (every counted
  // query, a missing one included, contributed log(epsilon) or more). log and exp are rounded to the
  // nearest double (log-exp.ts), as glibc's nearly always are: Math.log/Math.exp can be an ulp off.
  const numQ = evaluated.length;
  const all: Record<string, number> = {};
  for (const p of parsed) {
    if (p.family === 'num_q') all[p.name] = numQ;
    else if (COUNTERS.includes(p.family)) all[p.name] = sums[p.name];
    else if (p.family === 'gm_map' || p.family === 'gm_bpref')
      all[p.name] = numQ ? expNearest(sums[p.name] / numQ) : 0;
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
