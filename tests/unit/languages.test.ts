import { describe, expect, it } from 'vitest';
import { crossLingualGap, languageName, parallelQueryKey } from '../../src/lib/core/eval/languages';
import { pairedBootstrap } from '../../src/lib/core/eval/stats';

describe('languageName', () => {
  it('names languages with Intl.DisplayNames and falls back to the tag', () => {
    expect(languageName('de')).toBe('German');
    expect(languageName('zh')).toBe('Chinese');
    expect(languageName('pt-BR')).toBe('Brazilian Portuguese');
    expect(languageName('th', 'fr')).toBe('thaï');
    // Unknown but well-formed, and malformed tags.
    expect(languageName('qaa')).toBe('qaa');
    expect(languageName('not a tag!')).toBe('not a tag!');
  });
});

describe('parallelQueryKey', () => {
  it("removes the query's own language tag as one id part", () => {
    expect(parallelQueryKey('cq-es-test-001', 'es')).toBe('cq-test-001');
    expect(parallelQueryKey('cq-en-test-001', 'en')).toBe('cq-test-001');
    expect(parallelQueryKey('es_q7', 'es')).toBe('q7');
    expect(parallelQueryKey('q7.FR', 'fr')).toBe('q7');
    // "es" inside another part is not the tag.
    expect(parallelQueryKey('tests-001', 'es')).toBeNull();
    expect(parallelQueryKey('es', 'es')).toBeNull();
  });
});

describe('crossLingualGap', () => {
  // Four parallel queries per language (ids as in xling-med's case task) and two unpaired ones.
  const scores: Record<string, number> = {
    'cq-en-test-001': 1,
    'cq-en-test-002': 0.5,
    'cq-en-test-003': 1,
    'cq-en-test-004': 0,
    'cq-es-test-001': 0,
    'cq-es-test-002': 0.5,
    'cq-es-test-003': 0.25,
    'cq-es-test-004': 0,
    'tq-th-001': 0,
    'tq-th-002': 0.5,
  };
  const perQuery = new Map(
    Object.entries(scores).map(([id, v]) => [id, { ndcg_cut_10: v, recip_rank: v / 2 }]),
  );
  const queries = Object.keys(scores).map((id) => ({ id, language: id.split('-')[1] }));

  it('pairs parallel queries and gives the paired bootstrap CI of English minus the language', () => {
    const [es, th] = crossLingualGap({ queries, perQuery, measures: ['ndcg_cut_10', 'recip_rank'] });
    expect(es.language).toBe('es');
    expect(es.paired).toBe(4);
    const g = es.byMeasure.ndcg_cut_10;
    expect(g.reference).toBeCloseTo(0.625, 12);
    expect(g.language).toBeCloseTo(0.1875, 12);
    expect(g.gap).toBeCloseTo(0.4375, 12);
    // The same numbers as stats.pairedBootstrap on the aligned pairs.
    const boot = pairedBootstrap([0, 0.5, 0.25, 0], [1, 0.5, 1, 0]);
    expect(g.ci).toEqual(boot.diff);
    expect(g.ci!.lower).toBeLessThanOrEqual(g.gap);
    expect(g.ci!.upper).toBeGreaterThanOrEqual(g.gap);
    expect(es.byMeasure.recip_rank.gap).toBeCloseTo(0.21875, 12);

    // Thai has its own queries: a difference of means over all of them, no CI.
    expect(th.language).toBe('th');
    expect(th.paired).toBe(0);
    expect(th.byMeasure.ndcg_cut_10).toEqual({ reference: 0.625, language: 0.25, gap: 0.375, ci: null });
  });

  it('leaves ids that look parallel unpaired when their judgements differ (term-to-article)', () => {
    const qrels = new Map<string, Map<string, number>>();
    for (const id of Object.keys(scores))
      qrels.set(id, new Map([[`doc-${id.split('-').slice(2).join('-')}`, 1]]));
    // Same relevant documents for the parallel case queries: still paired.
    expect(crossLingualGap({ queries, perQuery, qrels, measures: ['ndcg_cut_10'] })[0].paired).toBe(4);
    // Different terms behind the same id stem: unpaired, difference of means only.
    qrels.set('cq-es-test-002', new Map([['other', 1]]));
    const [es] = crossLingualGap({ queries, perQuery, qrels, measures: ['ndcg_cut_10'] });
    expect(es.paired).toBe(0);
    expect(es.byMeasure.ndcg_cut_10.ci).toBeNull();
    expect(es.byMeasure.ndcg_cut_10.gap).toBeCloseTo(0.625 - 0.1875, 12);
  });

  it('skips unscored queries, honours another reference and is empty without the reference', () => {
    const partial = new Map(perQuery);
    partial.delete('cq-es-test-004');
    const [es] = crossLingualGap({ queries, perQuery: partial, measures: ['ndcg_cut_10'] });
    expect(es.paired).toBe(3);
    expect(es.queries).toBe(3);
    const fromEs = crossLingualGap({ queries, perQuery, measures: ['ndcg_cut_10'], reference: 'es' });
    expect(fromEs.map((g) => g.language)).toEqual(['en', 'th']);
    expect(fromEs[0].byMeasure.ndcg_cut_10.gap).toBeCloseTo(-0.4375, 12);
    expect(crossLingualGap({ queries, perQuery, measures: ['ndcg_cut_10'], reference: 'ko' })).toEqual([]);
  });
});
