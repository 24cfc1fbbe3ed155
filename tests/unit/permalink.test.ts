import { describe, expect, test } from 'vitest';
import {
  formatFuseSpec,
  formatRunSpec,
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
