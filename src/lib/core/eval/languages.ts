// Per-language views of a run: language names for labels, and the cross-lingual gap (the reference
// language, English by default, minus each other language, per measure). When a task asks the same
// queries in several languages (xling-med's case-to-explanation: `cq-en-test-001`, `cq-es-test-001`…)
// the queries are paired across languages and the gap gets a paired bootstrap CI; otherwise (each
// language with its own queries, as in term-to-article) only the difference of means is defined.
import { pairedBootstrap, type BootstrapOptions, type ConfidenceInterval } from './stats';
import type { Qrels } from '../types';

/** The relevant documents of a query (grade > 0), as a sorted, joined key. */
function relevantKey(qrels: Qrels, id: string): string {
  const rows = qrels.get(id);
  if (!rows) return '';
  return [...rows]
    .filter(([, g]) => g > 0)
    .map(([d]) => d)
    .sort()
    .join('\u0000');
}

/**
 * A language's name for display ("de" → "German"), in `displayLocale` (English by default); the tag
 * itself when the runtime has no Intl.DisplayNames or does not know the tag.
 */
export function languageName(tag: string, displayLocale = 'en'): string {
  try {
    const names = new Intl.DisplayNames([displayLocale], { type: 'language', fallback: 'none' });
    return names.of(tag) ?? tag;
  } catch {
    // RangeError for a malformed tag; a runtime without DisplayNames throws a TypeError.
    return tag;
  }
}

/**
 * The id a query shares with its translations: its id with its own language tag removed as one
 * dash/underscore/dot-separated part (`cq-es-test-001` → `cq-test-001`, `es_q7` → `q7`); null when
 * the id does not contain the tag as a part, so it cannot be paired.
 */
export function parallelQueryKey(queryId: string, language: string): string | null {
  const tag = language.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`(^|[-_.])${tag}(?:[-_.]|$)`, 'i').exec(queryId);
  if (!m) return null;
  const before = queryId.slice(0, m.index);
  const after = queryId.slice(m.index + m[0].length);
  // Keep one separator where the tag stood between two parts.
  return (before && after ? before + m[1] + after : before + after) || null;
}

/** One measure's gap for one language. */
export interface MeasureGap {
  /** Mean of the reference language (over the paired queries when paired, else all of them). */
  reference: number;
  /** Mean of this language, over the same queries. */
  language: number;
  /** reference − language. */
  gap: number;
  /** Paired bootstrap interval of the gap; null when the queries are not parallel across languages. */
  ci: ConfidenceInterval | null;
}

/** The cross-lingual gap of one language against the reference language. */
export interface LanguageGap {
  language: string;
  /** Queries of this language that were scored. */
  queries: number;
  /** Queries paired with a reference-language translation (0 when unpaired). */
  paired: number;
  byMeasure: Record<string, MeasureGap>;
}

/** Inputs of crossLingualGap. */
export interface CrossLingualGapArgs {
  /** The task's queries with their language; queries without a score in `perQuery` are skipped. */
  queries: readonly { id: string; language: string }[];
  /** Per-query measure values (a TaskReport's perQuery). */
  perQuery: ReadonlyMap<string, Readonly<Record<string, number>>>;
  measures: readonly string[];
  /** The language the gaps are taken from. Default "en". */
  reference?: string;
  /** How a query's translations are recognised. Default parallelQueryKey. */
  pairKey?: (queryId: string, language: string) => string | null;
  /**
   * The task's judgements. When given, two queries pair only if they judge the same documents
   * relevant: ids that look parallel but ask different things (xling-med's term-to-article: tq-de-001
   * and tq-en-001 are different terms) then stay unpaired.
   */
  qrels?: Qrels;
  /** Bootstrap settings (resamples, confidence, seed) for the paired CIs. */
  bootstrap?: BootstrapOptions;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/**
 * Reference-language mean minus each other language's mean, per measure. Languages whose queries
 * all pair one-to-one with reference queries (same pairKey; same relevant documents when qrels are
 * given; at least two pairs) are compared on those pairs, with a paired bootstrap CI (stats.pairedBootstrap: `diff` = reference − language); other
 * languages get the difference of their means over all their queries and no CI. Sorted by language.
 */
export function crossLingualGap(args: CrossLingualGapArgs): LanguageGap[] {
  const reference = args.reference ?? 'en';
  const key = args.pairKey ?? parallelQueryKey;
  const byLanguage = new Map<string, string[]>();
  for (const q of args.queries) {
    if (!args.perQuery.has(q.id) || !q.language) continue;
    const list = byLanguage.get(q.language) ?? [];
    list.push(q.id);
    byLanguage.set(q.language, list);
  }
  const refIds = byLanguage.get(reference);
  if (!refIds) return [];
  const refByKey = new Map<string, string>();
  const refDup = new Set<string>();
  for (const id of refIds) {
    const k = key(id, reference);
    if (k === null) continue;
    if (refByKey.has(k)) refDup.add(k);
    refByKey.set(k, id);
  }
  const score = (id: string, m: string) => args.perQuery.get(id)?.[m] ?? 0;

  const out: LanguageGap[] = [];
  for (const [language, ids] of [...byLanguage].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (language === reference) continue;
    // Pairs (reference id, this language's id); a key seen twice on either side pairs nothing.
    const pairs: [string, string][] = [];
    const seen = new Map<string, number>();
    for (const id of ids) {
      const k = key(id, language);
      if (k !== null) seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    for (const id of ids) {
      const k = key(id, language);
      if (k === null || seen.get(k) !== 1 || refDup.has(k)) continue;
      const ref = refByKey.get(k);
      if (ref) pairs.push([ref, id]);
    }
    // A language is paired only when every one of its queries has its translation (and, with qrels,
    // the same relevant documents): a partial match would compare a biased subset.
    const sameJudgements = (r: string, id: string) =>
      !args.qrels || relevantKey(args.qrels, r) === relevantKey(args.qrels, id);
    const isPaired =
      pairs.length >= 2 && pairs.length === ids.length && pairs.every(([r, id]) => sameJudgements(r, id));
    const byMeasure: Record<string, MeasureGap> = {};
    for (const m of args.measures) {
      if (isPaired) {
        const other = pairs.map(([, id]) => score(id, m));
        const ref = pairs.map(([r]) => score(r, m));
        // a = this language, b = reference: the bootstrap's diff (b − a) is the gap.
        const boot = pairedBootstrap(other, ref, args.bootstrap);
        byMeasure[m] = { reference: boot.b.mean, language: boot.a.mean, gap: boot.diff.mean, ci: boot.diff };
      } else {
        const r = mean(refIds.map((id) => score(id, m)));
        const l = mean(ids.map((id) => score(id, m)));
        byMeasure[m] = { reference: r, language: l, gap: r - l, ci: null };
      }
    }
    out.push({ language, queries: ids.length, paired: isPaired ? pairs.length : 0, byMeasure });
  }
  return out;
}
