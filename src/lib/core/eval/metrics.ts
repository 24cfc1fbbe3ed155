// IR measures computed exactly as trec_eval does (nDCG@k, Recall@k, P@k, Success@k, MAP, MAP@k, MRR,
// R-prec and the counters). Spec and file:line references (trec_eval 10.0 unless stated):
// ../shared/golden/metrics/README.md (beside the repo). Pure: no DOM, no Node APIs.
import type { Qrels, Run, ScoredDoc } from '../types';

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
type Plain =
  | 'num_q'
  | 'num_ret'
  | 'num_rel'
  | 'num_rel_ret'
  | 'map'
  | 'gm_map'
  | 'Rprec'
  | 'bpref'
  | 'recip_rank'
  | 'infAP'
  | 'ndcg'
  | 'set_P'
  | 'set_recall'
  | 'num_nonrel_judged_ret';

/** A measure name split into family and parameter (cutoff k, recall level, or F's beta). */
export type ParsedMeasure =
  | { name: string; family: Plain }
  | { name: string; family: CutFamily | 'Judged'; k: number }
  | { name: string; family: 'iprec_at_recall'; level: number }
  | { name: string; family: 'set_F'; beta: number };

// trec_eval prints measures in its table order (measures.c te_trec_measures), parameters ascending.
// Judged@k is ir_measures', not trec_eval's: it goes last.
const FAMILY_ORDER = [
  'num_q',
  'num_ret',
  'num_rel',
  'num_rel_ret',
  'map',
  'gm_map',
  'Rprec',
  'bpref',
  'recip_rank',
  'iprec_at_recall',
  'P',
  'recall',
  'infAP',
  'ndcg',
  'ndcg_cut',
  'map_cut',
  'success',
  'set_P',
  'set_recall',
  'set_F',
  'num_nonrel_judged_ret',
  'Judged',
] as const;
const CUT_FAMILIES: readonly string[] = ['P', 'recall', 'ndcg_cut', 'map_cut', 'success'];
const PARAM_FAMILIES: readonly string[] = [...CUT_FAMILIES, 'iprec_at_recall', 'set_F', 'Judged'];
/** Measures whose `all` value is a total over queries, not a mean. */
const COUNTERS: readonly string[] = ['num_q', 'num_ret', 'num_rel', 'num_rel_ret', 'num_nonrel_judged_ret'];

/** trec_eval's default cutoffs when a family is requested without parameters (`-m P`). */
export const DEFAULT_CUTOFFS: Readonly<Record<CutFamily, readonly number[]>> = {
  P: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  recall: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  ndcg_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  map_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  success: [1, 5, 10],
};

/** The 11 standard recall levels of `iprec_at_recall` (m_iprec_at_recall.c), as trec_eval prints them. */
export const RECALL_LEVELS: readonly string[] = [
  '0.00',
  '0.10',
  '0.20',
  '0.30',
  '0.40',
  '0.50',
  '0.60',
  '0.70',
  '0.80',
  '0.90',
  '1.00',
];

/** Floor added to each query's AP before the log in gm_map (trec_eval.h MIN_GEO_MEAN). */
export const GM_EPSILON = 0.00001;
/** Smoothing constant of infAP's precision estimate (trec_eval.h INFAP_EPSILON). */
const INFAP_EPSILON = 0.00001;

/** Parses a printed measure name (`ndcg_cut_10`, `P_5`, `iprec_at_recall_0.50`, `Judged@10`); throws on unknown names. */
export function parseMeasure(name: string): ParsedMeasure {
  if ((FAMILY_ORDER as readonly string[]).includes(name) && !PARAM_FAMILIES.includes(name)) {
    return { name, family: name as Plain };
  }
  const m =
    /^(P|recall|ndcg_cut|map_cut|success)_([1-9][0-9]*)$/.exec(name) ?? /^(Judged)@([1-9][0-9]*)$/.exec(name);
  if (m) {
    const k = Number(m[2]);
    if (Number.isSafeInteger(k)) return { name, family: m[1] as CutFamily | 'Judged', k };
  }
  // trec_eval names a recall level with "%3.2f"; the level is taken as printed.
  const ip = /^iprec_at_recall_([0-9]+\.[0-9]{2})$/.exec(name);
  if (ip && Number(ip[1]) <= 1) return { name, family: 'iprec_at_recall', level: Number(ip[1]) };
  // set_F is beta 1; `-m set_F.0.5` prints set_F_0.5 (the parameter as typed, read with atof).
  if (name === 'set_F') return { name, family: 'set_F', beta: 1 };
  const f = /^set_F_([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.exec(name);
  if (f) return { name, family: 'set_F', beta: Number(f[1]) };
  throw new Error(
    `unknown measure '${name}' (supported: ${FAMILY_ORDER.filter((x) => !PARAM_FAMILIES.includes(x)).join(', ')}, ` +
      `set_F, set_F_beta, iprec_at_recall_L for a level L in 0.00..1.00, Judged@k, ` +
      `and P_k, recall_k, ndcg_cut_k, map_cut_k, success_k for k >= 1)`,
  );
}

/**
 * Expands a trec_eval `-m` argument into printed names: `P.1,5,10` → P_1, P_5, P_10; `ndcg_cut` →
 * trec_eval's default cutoffs; `iprec_at_recall` → the 11 recall levels; `set_F.0.5` → set_F_0.5;
 * `map` → map. Cutoffs must be positive and distinct, as in trec_eval.
 */
export function expandMeasureSpec(spec: string): string[] {
  const dot = spec.indexOf('.');
  const family = dot < 0 ? spec : spec.slice(0, dot);
  const param = dot < 0 ? null : spec.slice(dot + 1);
  if (family === 'iprec_at_recall') {
    if (param === null) return RECALL_LEVELS.map((l) => `iprec_at_recall_${l}`);
    const levels = param.split(',').map((s) => {
      if (!/^([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.test(s) || Number(s) > 1)
        throw new Error(`bad recall level '${s}' in '${spec}'`);
      return Number(s);
    });
    levels.sort((a, b) => a - b);
    const names = levels.map((l) => `iprec_at_recall_${l.toFixed(2)}`);
    if (new Set(names).size !== names.length) throw new Error(`duplicate recall level in '${spec}'`);
    return names;
  }
  if (family === 'set_F') {
    if (param === null) return ['set_F'];
    if (!/^([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.test(param)) throw new Error(`bad beta '${param}' in '${spec}'`);
    return [`set_F_${param}`];
  }
  if (!CUT_FAMILIES.includes(family)) {
    if (param !== null) throw new Error(`measure '${family}' takes no parameters: '${spec}'`);
    return [parseMeasure(spec).name];
  }
  let ks: number[];
  if (param === null) ks = [...DEFAULT_CUTOFFS[family as CutFamily]];
  else {
    ks = param.split(',').map((s) => {
      if (!/^[0-9]+$/.test(s) || !(Number(s) > 0)) throw new Error(`bad cutoff '${s}' in '${spec}'`);
      return Number(s);
    });
    if (new Set(ks).size !== ks.length) throw new Error(`duplicate cutoff in '${spec}'`);
    ks.sort((a, b) => a - b);
  }
  return ks.map((k) => `${family}_${k}`);
}

function paramOf(p: ParsedMeasure): number {
  return 'k' in p ? p.k : 'level' in p ? p.level : 'beta' in p ? p.beta : 0;
}

/** Sorts measure names into trec_eval's print order and drops duplicates; throws on unknown names. */
export function sortMeasures(names: readonly string[]): string[] {
  const parsed = [...new Set(names)].map(parseMeasure);
  const rank = (p: ParsedMeasure) => (FAMILY_ORDER as readonly string[]).indexOf(p.family);
  parsed.sort((a, b) => rank(a) - rank(b) || paramOf(a) - paramOf(b));
  return parsed.map((p) => p.name);
}

/** Human labels of the measures without a parameter. */
export const MEASURE_LABELS: Readonly<Record<string, string>> = {
  map: 'MAP',
  gm_map: 'GMAP',
  recip_rank: 'MRR',
  Rprec: 'R-precision',
  bpref: 'bpref',
  infAP: 'infAP',
  ndcg: 'nDCG',
  set_P: 'Set precision',
  set_recall: 'Set recall',
  set_F: 'Set F1',
  num_q: 'Queries',
  num_ret: 'Retrieved',
  num_rel: 'Relevant',
  num_rel_ret: 'Relevant retrieved',
  num_nonrel_judged_ret: 'Judged non-relevant retrieved',
};
const FAMILY_LABELS: Readonly<Record<CutFamily | 'Judged', string>> = {
  ndcg_cut: 'nDCG',
  recall: 'Recall',
  P: 'P',
  success: 'Success',
  map_cut: 'MAP',
  Judged: 'Judged',
};

/**
 * UI label of a measure name: `ndcg_cut_10` → `nDCG@10`, `recip_rank` → `MRR`, `Rprec` → `R-precision`,
 * `iprec_at_recall_0.50` → `iPrec@recall 0.50`, `set_F_0.5` → `Set F(β=0.5)`; unknown names unchanged.
 */
export function measureLabel(name: string): string {
  if (name in MEASURE_LABELS) return MEASURE_LABELS[name];
  let p: ParsedMeasure;
  try {
    p = parseMeasure(name);
  } catch {
    return name;
  }
  if (p.family === 'iprec_at_recall') return `iPrec@recall ${name.slice('iprec_at_recall_'.length)}`;
  if (p.family === 'set_F') return `Set F(β=${name.slice('set_F_'.length)})`;
  return 'k' in p ? `${FAMILY_LABELS[p.family]}@${p.k}` : name;
}

/**
 * trec_eval's printed name of a measure and the `-m` argument that asks for it, for a tooltip;
 * null for a measure trec_eval does not have (Judged@k comes from ir_measures).
 */
export function trecEvalName(name: string): { name: string; flag: string } | null {
  const p = parseMeasure(name);
  if (p.family === 'Judged') return null;
  if ('k' in p) return { name, flag: `-m ${p.family}.${p.k}` };
  if (p.family === 'iprec_at_recall') return { name, flag: `-m iprec_at_recall.${p.level}` };
  if (p.family === 'set_F') return { name, flag: name === 'set_F' ? '-m set_F' : `-m set_F.${paramOf(p)}` };
  return { name, flag: `-m ${name}` };
}

/** What a table column or an export says about a measure: its name, human label and trec_eval name. */
export interface MeasureInfo {
  name: string;
  label: string;
  /** trec_eval's printed name, null for a measure trec_eval lacks (Judged@k). */
  trecEval: string | null;
  /** The trec_eval argument that computes it (`-m ndcg_cut.10`), null like `trecEval`. */
  flag: string | null;
}

/** `MeasureInfo` of each name, in the given order (e.g. a report's measures, for JSON exports and tooltips). */
export function describeMeasures(names: readonly string[]): MeasureInfo[] {
  return names.map((name) => {
    const t = trecEvalName(name);
    return { name, label: measureLabel(name), trecEval: t?.name ?? null, flag: t?.flag ?? null };
  });
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

/**
 * The optional measures for incompletely judged collections and full-depth curves, computed only when
 * asked for: bpref, infAP, GMAP, nDCG (no cut), interpolated precision at the 11 recall levels, set
 * P/recall/F1, judged non-relevant retrieved, and Judged@k for each k (ir_measures' judgement rate).
 */
export function extraMeasures(judgedKs: readonly number[] = [10]): string[] {
  const ks = [...new Set(judgedKs)].sort((a, b) => a - b);
  for (const k of ks) if (!Number.isSafeInteger(k) || k < 1) throw new Error(`bad cutoff ${k}`);
  return [
    'bpref',
    'infAP',
    'gm_map',
    'ndcg',
    ...RECALL_LEVELS.map((l) => `iprec_at_recall_${l}`),
    'set_P',
    'set_recall',
    'set_F',
    'num_nonrel_judged_ret',
    ...ks.map((k) => `Judged@${k}`),
  ];
}

/** `extraMeasures()`: the optional columns of the metrics table (Judged@10). */
export const EXTRA_MEASURES: readonly string[] = extraMeasures();

/** Measures reported only as an average over queries, with no per-query value (trec_eval prints none). */
export const SUMMARY_ONLY_MEASURES: readonly string[] = ['gm_map'];

/** GMAP of per-query APs: exp of the mean of log(max(AP, GM_EPSILON)) (m_gm_map.c, meas_avg.c); 0 for none. */
export function geometricMeanAp(aps: Iterable<number>): number {
  let sum = 0;
  let n = 0;
  for (const ap of aps) {
    sum += Math.log(Math.max(ap, GM_EPSILON));
    n++;
  }
  return n ? Math.exp(sum / n) : 0;
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
  /** Judged entries of the query below the relevance level (grades 0..L-1): bpref's non-relevant pool. */
  numNonrel: number;
  /** Ranked docs absent from the qrels, and ranked docs listed with a negative value. */
  numNonpool: number;
  numUnjudged: number;
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
  let numNonpool = 0;
  let numUnjudged = 0;
  const seen = new Set<string>();
  for (const d of ranked) {
    // form_res_rels.c rejects duplicate docnos (checked after -M, like trec_eval).
    if (seen.has(d.docId)) throw new Error(`duplicate doc '${d.docId}' in one query of the run`);
    seen.add(d.docId);
    const g = judged.get(d.docId);
    const v = g === undefined ? NONPOOL : g < 0 ? UNJUDGED : g;
    rels.push(v);
    if (v === NONPOOL) numNonpool++;
    else if (v === UNJUDGED) numUnjudged++;
    // num_rel_ret only counts judged docs (form_res_rels.c), even with -l <= -1.
    else if (v >= level) numRelRet++;
  }
  let numRel = 0;
  let numNonrel = 0;
  const idealGains: number[] = [];
  for (const g of judged.values()) {
    // rel_levels count only grades >= 0 (form_res_rels.c:160-194); R = entries with grade >= L (:234-241).
    if (g >= 0 && g >= level) numRel++;
    else if (g >= 0) numNonrel++;
    if (g > 0) idealGains.push(g);
  }
  idealGains.sort((a, b) => b - a);
  return { rels, numRel, numRelRet, numNonrel, numNonpool, numUnjudged, idealGains };
}

/** nDCG over the top `k` (Infinity: the whole ranking), trec_eval's linear gain (m_ndcg_cut.c, m_ndcg.c). */
function ndcgAt(rels: readonly number[], idealGains: readonly number[], k: number): number {
  // Linear gain = judgment value if > 0, discount log2(rank + 1); the ideal ranking is every qrels grade
  // > 0 descending, retrieved or not. -l is not used. 0 if IDCG = 0.
  const lim = Math.min(k, rels.length);
  let dcg = 0;
  for (let i = 0; i < lim; i++) if (rels[i] > 0) dcg += rels[i] / Math.log2(i + 2);
  const ilim = Math.min(k, idealGains.length);
  let idcg = 0;
  for (let i = 0; i < ilim; i++) idcg += idealGains[i] / Math.log2(i + 2);
  return idcg > 0 ? dcg / idcg : dcg;
}

/**
 * Interpolated precision at each recall level (m_iprec_at_recall.c): the level becomes a number of
 * relevant docs with lround(level * R), and the value is the best precision at or after the rank where
 * that many relevant docs have been seen; levels beyond the relevant docs retrieved are 0.
 */
function iprecAtRecall(rr: ResRels, levels: readonly number[], level: number): number[] {
  const { rels, numRel: R, numRelRet } = rr;
  const N = rels.length;
  const out = levels.map(() => 0);
  // lround on a non-negative value = Math.round (half away from zero).
  const cut = levels.map((p) => Math.round(p * R));
  let cur = levels.length - 1;
  while (cur >= 0 && cut[cur] > numRelRet) cur--;
  // An empty ranking (a query missing from the run with -c) scores 0: trec_eval ranks one unpooled doc.
  if (N === 0) return out;
  let best = numRelRet / N;
  let relSoFar = numRelRet;
  // Walk the ranking backwards so `best` is the maximum precision at or below each rank.
  for (let i = N; i > 0 && relSoFar > 0; i--) {
    const p = relSoFar / i;
    if (best < p) best = p;
    if (rels[i - 1] >= level) {
      while (cur >= 0 && relSoFar === cut[cur]) out[cur--] = best;
      relSoFar--;
    }
  }
  while (cur >= 0) out[cur--] = best;
  return out;
}

/** What `computeQuery` needs to know about the requested measures, prepared once per evaluation. */
interface Plan {
  measures: readonly ParsedMeasure[];
  /** Recall levels of the requested iprec_at_recall measures, in `measures` order. */
  iprecLevels: number[];
}

function computeQuery(rr: ResRels, plan: Plan, level: number): Record<string, number> {
  const { rels, numRel: R, idealGains } = rr;
  const N = rels.length;
  // relAt[i] = relevant docs in the top i.
  const relAt = new Int32Array(N + 1);
  for (let i = 0; i < N; i++) relAt[i + 1] = relAt[i] + (rels[i] >= level ? 1 : 0);
  const relTop = (k: number) => relAt[Math.min(k, N)];
  const iprec = plan.iprecLevels.length ? iprecAtRecall(rr, plan.iprecLevels, level) : [];
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
        out[m.name] = m.family === 'gm_map' ? Math.log(Math.max(ap, GM_EPSILON)) : ap;
        break;
      }
      case 'ndcg_cut':
        out[m.name] = ndcgAt(rels, idealGains, m.k);
        break;
      case 'ndcg':
        out[m.name] = ndcgAt(rels, idealGains, Infinity);
        break;
      case 'bpref':
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
          if (m.family === 'bpref') {
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
        out[m.name] = R ? v / R : v;
        break;
      }
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
  // qrels query, a missing one as an empty ranking (10.0 trec_eval.c:383-387, 416-431).
  const evaluated = opts.complete ? qrelsIds : qrelsIds.filter(inRun);

  const perQuery = new Map<string, Record<string, number>>();
  const sums: Record<string, number> = {};
  for (const n of names) sums[n] = 0;
  const gm = names.includes('gm_map');
  for (const q of evaluated) {
    const judged = qrels.get(q)!;
    const ranked = rankQuery(run.get(q) ?? [], rankOpts);
    const values = computeQuery(formResRels(ranked, judged, level), plan, level);
    for (const n of names) if (n !== 'num_q') sums[n] += values[n];
    if (gm) delete values.gm_map;
    perQuery.set(q, values);
  }

  // meas_avg.c:37-42, 53-60: means divide by the counted queries (with -c, the number of qrels queries);
  // counters are totals and num_q is the number of queries. gm_map: exp of the mean log (every counted
  // query, a missing one included, contributed log(epsilon) or more).
  const numQ = evaluated.length;
  const all: Record<string, number> = {};
  for (const p of parsed) {
    if (p.family === 'num_q') all[p.name] = numQ;
    else if (COUNTERS.includes(p.family)) all[p.name] = sums[p.name];
    else if (p.family === 'gm_map') all[p.name] = numQ ? Math.exp(sums[p.name] / numQ) : 0;
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
