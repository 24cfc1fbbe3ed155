import { describe, expect, it, test } from 'vitest';
import {
  formatFuseSpec,
  formatRunSpec,
  fuseSpecOf,
  fusionRequestOf,
  parseFuseSpec,
  parseRunSpecs,
  PermalinkError,
  specMatches,
  specOf,
} from '../../src/lib/core/eval/permalink';

describe('permalink specs', () => {
  test('round trip through URLSearchParams, with a model id containing separators', () => {
    const specs = parseRunSpecs(
      'bm25(k1=1.2,b=0.75);dense(model=loupe-test/clip-tiny-random,dtype=fp32,fusion=score,alpha=0.3)',
    );
    expect(specs).toEqual([
      { kind: 'bm25', k1: 1.2, b: 0.75 },
      {
        kind: 'dense',
        model: 'loupe-test/clip-tiny-random',
        dtype: 'fp32',
        device: 'auto',
        fusion: 'score',
        alpha: 0.3,
      },
    ]);
    const odd = {
      kind: 'dense' as const,
      model: 'a/b,(c);d',
      dtype: 'q8',
      device: 'wasm',
      fusion: 'both' as const,
      alpha: 0.5,
    };
    const u = new URLSearchParams({ runs: [formatRunSpec(specs[0]), formatRunSpec(odd)].join(';') });
    expect(parseRunSpecs(new URLSearchParams(u.toString()).get('runs')!)).toEqual([specs[0], odd]);
    expect(parseFuseSpec(formatFuseSpec({ method: 'rrf', k: 30 }))).toEqual({ method: 'rrf', k: 30 });
    expect(parseFuseSpec('combmnz(norm=zscore)')).toEqual({ method: 'combmnz', normalization: 'zscore' });
  });

  test('bad specs say what is wrong', () => {
    expect(() => parseRunSpecs('splade(x=1)')).toThrow(PermalinkError);
    expect(() => parseRunSpecs('bm25(k1=abc)')).toThrow(/k1=abc is not a number/);
    expect(() => parseRunSpecs('dense(dtype=fp32)')).toThrow(/needs model/);
    expect(() => parseFuseSpec('rrf(k)')).toThrow(/key=value/);
  });

  test('a stored run matches the spec that produced it, and only that one', () => {
    const bm25 = { kind: 'bm25' as const, k1: 0.9, b: 0.4, lossyLengths: true };
    expect(specMatches(specOf(bm25)!, bm25)).toBe(true);
    expect(specMatches({ kind: 'bm25', k1: 1.2, b: 0.4 }, bm25)).toBe(false);
    const dense = {
      kind: 'dense' as const,
      modelId: 'm',
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
      fusion: { mode: 'score' as const, textWeight: 0.3 },
    };
    expect(specMatches(specOf(dense)!, dense)).toBe(true);
    expect(
      specMatches(
        { kind: 'dense', model: 'm', dtype: 'auto', device: 'auto', fusion: 'both', alpha: 0.3 },
        dense,
      ),
    ).toBe(true);
    expect(
      specMatches(
        { kind: 'dense', model: 'm', dtype: 'auto', device: 'auto', fusion: 'both', alpha: 0.5 },
        dense,
      ),
    ).toBe(false);
    expect(
      specMatches(
        { kind: 'dense', model: 'm', dtype: 'q8', device: 'auto', fusion: 'score', alpha: 0.3 },
        dense,
      ),
    ).toBe(false);
    expect(specOf({ kind: 'import', fileName: 'x', tag: 't' })).toBeNull();
  });
});

describe('fuse specs for every fusion method, weights and cross-validated tuning', () => {
  it('reads and writes methods, normalisations, weights and tunings', () => {
    expect(parseFuseSpec('combmax(norm=rank)')).toEqual({ method: 'combmax', normalization: 'rank' });
    expect(parseFuseSpec('wrrf(k=20,w=0.7:0.3)')).toEqual({ method: 'wrrf', k: 20, weights: [0.7, 0.3] });
    const tuned = parseFuseSpec('linear(norm=minmax,cv=5,seed=7,measure=ndcg_cut_10,step=0.1)');
    expect(tuned).toEqual({
      method: 'linear',
      normalization: 'minmax',
      cv: { folds: 5, seed: 7, measure: 'ndcg_cut_10', step: 0.1 },
    });
    for (const f of [
      tuned,
      parseFuseSpec('rrf(cv=3,measure=P_5,ks=10:60)'),
      parseFuseSpec('combsum(cv=2,seed=1,measure=map,norms=minmax:zscore:sum)'),
      { method: 'borda' as const, weights: [1, 2, 3] },
      { method: 'condorcet' as const },
    ])
      expect(parseFuseSpec(new URLSearchParams({ fuse: formatFuseSpec(f) }).get('fuse')!)).toEqual(f);
    // seed defaults to 42.
    expect(parseFuseSpec('rrf(cv=3,measure=P_5)').cv!.seed).toBe(42);
  });

  it('says what is wrong with a bad fuse spec', () => {
    expect(() => parseFuseSpec('combfoo')).toThrow(/unknown fusion "combfoo"/);
    expect(() => parseFuseSpec('combsum(norm=l2)')).toThrow(/norm must be one of/);
    expect(() => parseFuseSpec('linear(w=0.5:x)')).toThrow(/not a list of non-negative numbers/);
    expect(() => parseFuseSpec('linear(cv=1,measure=map)')).toThrow(/2 or more folds/);
    expect(() => parseFuseSpec('linear(cv=5)')).toThrow(/needs measure/);
    expect(() => parseFuseSpec('linear(cv=5,measure=ndcg_at_10)')).toThrow(/unknown measure/);
  });

  it('turns a spec into the fusion to run over n runs', () => {
    // Linear without weights: 1/n each, as links always did.
    expect(fusionRequestOf({ method: 'linear', normalization: 'zscore' }, 4)).toEqual({
      kind: 'fixed',
      options: { method: 'linear', normalization: 'zscore', weights: [0.25, 0.25, 0.25, 0.25] },
    });
    expect(fusionRequestOf({ method: 'rrf', k: 30, normalization: 'rank' }, 2)).toEqual({
      kind: 'fixed',
      options: { method: 'rrf', k: 30 },
    });
    const t = fusionRequestOf(parseFuseSpec('wrrf(cv=5,measure=P_5,step=0.5,ks=20:60)'), 2);
    expect(t).toMatchObject({ kind: 'tuned', base: { method: 'wrrf' }, measure: 'P_5', folds: 5, seed: 42 });
    expect(t.kind === 'tuned' && t.grid).toHaveLength(6);
    expect(() => fusionRequestOf({ method: 'linear', weights: [1, 2] }, 3)).toThrow(/2 weights for 3 runs/);
  });

  it('writes a stored fusion back as a spec, tunings included', () => {
    const old = { kind: 'fusion' as const, method: 'rrf', params: { k: 60 }, inputs: ['a', 'b'] };
    expect(formatFuseSpec(fuseSpecOf(old)!)).toBe('rrf(k=60)');
    const lin = {
      kind: 'fusion' as const,
      method: 'linear',
      params: { method: 'linear', depth: 1000, normalization: 'zscore', weights: '0.7,0.3' },
      inputs: ['a', 'b'],
    };
    expect(formatFuseSpec(fuseSpecOf(lin)!)).toBe('linear(norm=zscore,w=0.7:0.3)');
    const tuning = {
      measure: 'ndcg_cut_10',
      seed: 9,
      grid: [{ weights: [1, 0] }, { weights: [0, 1] }],
      gridSpec: { step: 1 },
      folds: [
        { queries: ['q1'], params: { weights: [1, 0] }, trainScore: 1, testScore: 0 },
        { queries: ['q2'], params: { weights: [0, 1] }, trainScore: 1, testScore: 0 },
      ],
      heldOutScore: 0,
    };
    const tuned = { ...lin, params: { method: 'linear', depth: 1000, normalization: 'minmax' }, tuning };
    expect(formatFuseSpec(fuseSpecOf(tuned)!)).toBe(
      'linear(norm=minmax,cv=2,seed=9,measure=ndcg_cut_10,step=1)',
    );
    // A grid not made by fusionGrid cannot be written in a link.
    const { gridSpec: _, ...custom } = tuning;
    expect(fuseSpecOf({ ...tuned, tuning: custom })).toBeNull();
  });
});
