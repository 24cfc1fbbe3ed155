// Measure names: trec_eval's printed names, their parsing, print order, labels and the UI's measure lists.
// Split out of metrics.ts; metrics.ts re-exports everything here.

import { expNearest, logNearest } from './log-exp';

type CutFamily = 'P' | 'recall' | 'ndcg_cut' | 'map_cut' | 'success' | 'relative_P' | 'unj';
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
  | 'num_nonrel_judged_ret'
  | 'gm_bpref'
  | 'utility'
  | '11pt_avg'
  | 'binG'
  | 'G'
  | 'ndcg_rel'
  | 'Rndcg'
  | 'set_relative_P'
  | 'set_map'
  | 'rbp'
  | 'rbp_resid';

/** A measure name split into family and parameter (cutoff k, recall level, R multiplier, or F's beta). */
export type ParsedMeasure =
  | { name: string; family: Plain }
  | { name: string; family: 'Rprec_mult'; mult: number }
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
  'gm_bpref',
  'Rprec_mult',
  'utility',
  '11pt_avg',
  'binG',
  'G',
  'ndcg',
  'ndcg_rel',
  'Rndcg',
  'ndcg_cut',
  'map_cut',
  'relative_P',
  'success',
  'set_P',
  'set_relative_P',
  'set_recall',
  'set_map',
  'set_F',
  'num_nonrel_judged_ret',
  'rbp',
  'rbp_resid',
  'unj',
  'Judged',
] as const;
const CUT_FAMILIES: readonly string[] = [
  'P',
  'recall',
  'ndcg_cut',
  'map_cut',
  'success',
  'relative_P',
  'unj',
];
const PARAM_FAMILIES: readonly string[] = [
  ...CUT_FAMILIES,
  'iprec_at_recall',
  'Rprec_mult',
  'set_F',
  'Judged',
];
/** Measures whose `all` value is a total over queries, not a mean. */
export const COUNTERS: readonly string[] = [
  'num_q',
  'num_ret',
  'num_rel',
  'num_rel_ret',
  'num_nonrel_judged_ret',
];

/** trec_eval's default cutoffs when a family is requested without parameters (`-m P`). */
export const DEFAULT_CUTOFFS: Readonly<Record<CutFamily, readonly number[]>> = {
  P: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  recall: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  ndcg_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  map_cut: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  success: [1, 5, 10],
  relative_P: [5, 10, 15, 20, 30, 100, 200, 500, 1000],
  unj: [5, 10, 20],
};

/** The default multipliers of R of `Rprec_mult` (m_Rprec_mult.c), as trec_eval prints them. */
export const R_MULTIPLIERS: readonly string[] = [
  '0.20',
  '0.40',
  '0.60',
  '0.80',
  '1.00',
  '1.20',
  '1.40',
  '1.60',
  '1.80',
  '2.00',
];

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
export const INFAP_EPSILON = 0.00001;

/** Parses a printed measure name (`ndcg_cut_10`, `P_5`, `iprec_at_recall_0.50`, `Judged@10`); throws on unknown names. */
export function parseMeasure(name: string): ParsedMeasure {
  if ((FAMILY_ORDER as readonly string[]).includes(name) && !PARAM_FAMILIES.includes(name)) {
    return { name, family: name as Plain };
  }
  const m =
    /^(P|recall|ndcg_cut|map_cut|success|relative_P|unj)_([1-9][0-9]*)$/.exec(name) ??
    /^(Judged)@([1-9][0-9]*)$/.exec(name);
  if (m) {
    const k = Number(m[2]);
    if (Number.isSafeInteger(k)) return { name, family: m[1] as CutFamily | 'Judged', k };
  }
  // trec_eval names a recall level with "%3.2f"; the level is taken as printed.
  const ip = /^iprec_at_recall_([0-9]+\.[0-9]{2})$/.exec(name);
  if (ip && Number(ip[1]) <= 1) return { name, family: 'iprec_at_recall', level: Number(ip[1]) };
  // Rprec_mult names its multiplier with "%3.2f" too; taken as printed.
  const rm = /^Rprec_mult_([0-9]+\.[0-9]{2})$/.exec(name);
  if (rm) return { name, family: 'Rprec_mult', mult: Number(rm[1]) };
  // set_F is beta 1; `-m set_F.0.5` prints set_F_0.5 (the parameter as typed, read with atof).
  if (name === 'set_F') return { name, family: 'set_F', beta: 1 };
  const f = /^set_F_([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.exec(name);
  if (f) return { name, family: 'set_F', beta: Number(f[1]) };
  throw new Error(
    `unknown measure '${name}' (supported: ${FAMILY_ORDER.filter((x) => !PARAM_FAMILIES.includes(x)).join(', ')}, ` +
      `set_F, set_F_beta, iprec_at_recall_L for a level L in 0.00..1.00, Rprec_mult_M for M >= 0 ` +
      `(two decimals), Judged@k, and P_k, recall_k, ndcg_cut_k, map_cut_k, success_k, relative_P_k, ` +
      `unj_k for k >= 1)`,
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
  if (family === 'iprec_at_recall' || family === 'Rprec_mult') {
    const recall = family === 'iprec_at_recall';
    if (param === null) return (recall ? RECALL_LEVELS : R_MULTIPLIERS).map((l) => `${family}_${l}`);
    const what = recall ? 'recall level' : 'multiplier';
    const levels = param.split(',').map((s) => {
      if (!/^([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.test(s) || (recall && Number(s) > 1))
        throw new Error(`bad ${what} '${s}' in '${spec}'`);
      return Number(s);
    });
    levels.sort((a, b) => a - b);
    const names = levels.map((l) => `${family}_${l.toFixed(2)}`);
    if (new Set(names).size !== names.length) throw new Error(`duplicate ${what} in '${spec}'`);
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
  return 'k' in p ? p.k : 'level' in p ? p.level : 'mult' in p ? p.mult : 'beta' in p ? p.beta : 0;
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
  gm_bpref: 'GM-bpref',
  utility: 'Utility',
  '11pt_avg': '11-point avg. precision',
  binG: 'binG',
  G: 'G',
  ndcg_rel: 'nDCG (rel. avg.)',
  Rndcg: 'R-nDCG',
  set_relative_P: 'Set relative P',
  set_map: 'Set MAP',
  rbp: 'RBP (p=0.9)',
  rbp_resid: 'RBP residual',
};
const FAMILY_LABELS: Readonly<Record<CutFamily | 'Judged', string>> = {
  ndcg_cut: 'nDCG',
  recall: 'Recall',
  P: 'P',
  success: 'Success',
  map_cut: 'MAP',
  relative_P: 'Relative P',
  unj: 'Unjudged',
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
  if (p.family === 'Rprec_mult') return `P@${name.slice('Rprec_mult_'.length)}R`;
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
  if (p.family === 'Rprec_mult') return { name, flag: `-m Rprec_mult.${p.mult}` };
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
export const SUMMARY_ONLY_MEASURES: readonly string[] = ['gm_map', 'gm_bpref'];

/**
 * trec_eval's measure sets (measures.c te_trec_measure_nicknames) as `-m` arguments, without runid and
 * relstring (strings, not numbers): `official` (the default), `set` and `all_trec`.
 */
export const TREC_EVAL_SETS: Readonly<Record<string, readonly string[]>> = {
  official: [
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
  ],
  set: [
    'num_q',
    'num_ret',
    'num_rel',
    'num_rel_ret',
    'utility',
    'set_P',
    'set_recall',
    'set_relative_P',
    'set_map',
    'set_F',
  ],
  all_trec: [
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
    'unj',
    'rbp',
    'rbp_resid',
    'infAP',
    'gm_bpref',
    'utility',
    '11pt_avg',
    'ndcg',
    'relative_P',
    'Rprec_mult',
    'success',
    'map_cut',
    'ndcg_cut',
    'ndcg_rel',
    'Rndcg',
    'binG',
    'G',
    'set_P',
    'set_recall',
    'set_relative_P',
    'set_map',
    'set_F',
    'num_nonrel_judged_ret',
  ],
};

/** Which trec_eval's definitions are followed where 10.0 and 9.0.8 differ (see `trecEvalSets`, res-rels.ts). */
export type TrecEvalVersion = '10.0' | '9.0.8';

/** Measure families trec_eval 10.0 added to `all_trec`: 9.0.8 has none of them. */
export const ADDED_IN_10: readonly string[] = ['unj', 'rbp', 'rbp_resid'];

/**
 * A version's measure sets: `TREC_EVAL_SETS` for 10.0; for 9.0.8 the same without rbp, rbp_resid and
 * unj (9.0.8's measures.c has no such measures; its `official` and `set` sets are 10.0's).
 */
export function trecEvalSets(version: TrecEvalVersion = '10.0'): Readonly<Record<string, readonly string[]>> {
  if (version === '10.0') return TREC_EVAL_SETS;
  return Object.fromEntries(
    Object.entries(TREC_EVAL_SETS).map(([k, v]) => [k, v.filter((m) => !ADDED_IN_10.includes(m))]),
  );
}

/**
 * Every measure `trec_eval -m all_trec` prints (relstring and runid aside), in its print order: 98 names
 * for trec_eval 10.0, 93 for 9.0.8 (no rbp, rbp_resid, unj_5/10/20).
 */
export function allTrecMeasures(version: TrecEvalVersion = '10.0'): string[] {
  return sortMeasures(trecEvalSets(version).all_trec.flatMap(expandMeasureSpec));
}

/**
 * GMAP of per-query APs: exp of the mean of log(max(AP, GM_EPSILON)) (m_gm_map.c, meas_avg.c), summed in
 * the given order with log and exp rounded to the nearest double (log-exp.ts); 0 for none.
 */
export function geometricMeanAp(aps: Iterable<number>): number {
  let sum = 0;
  let n = 0;
  for (const ap of aps) {
    sum += logNearest(Math.max(ap, GM_EPSILON));
    n++;
  }
  return n ? expNearest(sum / n) : 0;
}
