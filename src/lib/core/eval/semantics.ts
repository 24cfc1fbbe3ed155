// Which trec_eval the numbers follow. Loupe's default is trec_eval 10.0 with -c; the other choice is
// trec_eval 9.0.8, the code inside pytrec_eval (and so BEIR, MTEB, ir_measures), which differs in four
// places (../shared/golden/metrics/README.md, "trec_eval versions", and ../shared/golden/metrics-908):
// a qrels query missing from the run is skipped instead of scoring 0; scores are compared as float32, so
// scores equal in float32 tie; a recall level p of iprec_at_recall and 11pt_avg stands for
// (long) (p·R + 0.9) relevant docs, not lround(p·R); and `all_trec` lacks rbp, rbp_resid and unj.
// Pure: no DOM, no Node APIs.
import type { EvalOptions } from './metrics';

export type Semantics = '10.0-c' | '9.0.8';

export interface SemanticsInfo {
  id: Semantics;
  /** Names the tool and flags, for the metrics panel and every export. */
  label: string;
  /** What differs, in a sentence. */
  description: string;
  /** The trec_eval command-line flags that give the same numbers with that version's binary. */
  trecEvalFlags: string[];
  /** What `evaluate` is called with. */
  options: Readonly<EvalOptions>;
}

export const SEMANTICS: Readonly<Record<Semantics, SemanticsInfo>> = {
  '10.0-c': {
    id: '10.0-c',
    label: 'trec_eval 10.0 -c',
    description:
      'every judged query counts; a query missing from the run scores 0; scores compared as doubles, ties by document id descending',
    trecEvalFlags: ['-c'],
    options: { complete: true, float32Ties: false, trecEvalVersion: '10.0' },
  },
  '9.0.8': {
    id: '9.0.8',
    label: 'trec_eval 9.0.8 / pytrec_eval',
    description:
      'queries missing from the run are skipped (as pytrec_eval, BEIR and MTEB do); scores compared as float32, ties by document id descending; interpolated precision at recall p is taken at ⌊p·R + 0.9⌋ relevant documents; no rbp or unj',
    trecEvalFlags: [],
    options: { complete: false, missingQueries: 'skip', float32Ties: true, trecEvalVersion: '9.0.8' },
  },
};

export const DEFAULT_SEMANTICS: Semantics = '10.0-c';

/** The semantics of a command-line value: `10.0-c`, or `9.0.8` (also written `pytrec_eval`). */
export function parseSemantics(value: string): Semantics {
  const v = value.trim().toLowerCase();
  if (v === '10.0-c') return '10.0-c';
  if (v === '9.0.8' || v === 'pytrec_eval') return '9.0.8';
  throw new Error(
    `unknown semantics '${value}': use 10.0-c (trec_eval 10.0 -c, the default) or 9.0.8 (trec_eval 9.0.8 / pytrec_eval)`,
  );
}
