// The fusion methods and normalisations added beside RRF / CombSUM / CombMNZ / linear. Every expected
// score is worked out by hand from the formula in the comment above it (fusion-methods.ts header).
import { describe, expect, it } from 'vitest';
import {
  bordaFuse,
  combAnz,
  combMax,
  combMin,
  combMnz,
  combSum,
  condorcetFuse,
  describeFusion,
  FUSION_METHODS,
  fuse,
  fusionConfig,
  fusionDescriptorOf,
  fusionLabel,
  fusionOptionsFor,
  fusionTerms,
  inverseSquareRank,
  logInverseSquareRank,
  methodParams,
  normalizeScores,
  reciprocalRankFusion,
  weightedRrf,
  type FusionOptions,
} from '../../src/lib/core/retrieval/fusion';
import { rankQuery } from '../../src/lib/core/eval/metrics';
import type { Run, ScoredDoc } from '../../src/lib/core/types';

function run(spec: Record<string, Record<string, number>>): Run {
  const r: Run = new Map();
  for (const [q, docs] of Object.entries(spec))
    r.set(
      q,
      Object.entries(docs).map(([docId, score]) => ({ docId, score })),
    );
  return r;
}

const pairs = (r: Run, q: string) => (r.get(q) ?? []).map((d) => [d.docId, d.score] as const);

function expectScores(r: Run, q: string, expected: [string, number][]) {
  const got = pairs(r, q);
  expect(got.map((p) => p[0])).toEqual(expected.map((p) => p[0]));
  got.forEach(([, s], i) => expect(s).toBeCloseTo(expected[i][1], 14));
}

// A ranks d1 > d2 > d3 (ranks 1, 2, 3); B ranks d2 > d4 > d1. d3 is only in A, d4 only in B.
// Min-max: A d1 1, d2 0.5, d3 0;  B d2 1, d4 0.5, d1 0.
const A = run({ q1: { d1: 3, d2: 2, d3: 1 } });
const B = run({ q1: { d2: 0.75, d4: 0.5, d1: 0.25 } });

describe('normalisations: sum, max, rank', () => {
  const docs = (...s: number[]): ScoredDoc[] => s.map((score, i) => ({ docId: `d${i}`, score }));
  const scores = (x: ScoredDoc[]) => x.map((d) => d.score);

  it('sum: (s − min) / Σ(s − min); a constant list shares 1 equally', () => {
    // (3, 2, 1): min 1 → (2, 1, 0), Σ = 3 → (2/3, 1/3, 0).
    const s = scores(normalizeScores(docs(3, 2, 1), 'sum'));
    [2 / 3, 1 / 3, 0].forEach((v, i) => expect(s[i]).toBeCloseTo(v, 15));
    // (7, 7): Σ(s − min) = 0 → 1/2 each (still sums to 1); one doc → 1.
    expect(scores(normalizeScores(docs(7, 7), 'sum'))).toEqual([0.5, 0.5]);
    expect(scores(normalizeScores(docs(-3), 'sum'))).toEqual([1]);
  });

  it('max: s / max; a negative max divides by |max| (order kept), a zero max leaves scores', () => {
    // (3, 2, 1) / 3 = (1, 2/3, 1/3).
    const s = scores(normalizeScores(docs(3, 2, 1), 'max'));
    [1, 2 / 3, 1 / 3].forEach((v, i) => expect(s[i]).toBeCloseTo(v, 15));
    // (−1, −2): max −1 → divide by 1 → (−1, −2): d0 still above d1 (ranx's s / max would give 1, 2).
    expect(scores(normalizeScores(docs(-1, -2), 'max'))).toEqual([-1, -2]);
    // (0, −4): max 0 → unchanged.
    expect(scores(normalizeScores(docs(0, -4), 'max'))).toEqual([0, -4]);
  });

  it('rank: 1 − (p − 1)/m by trec_eval position, ties by docno descending', () => {
    // Input order (1, 3, 2): trec_eval order d1 (3), d2 (2), d0 (1) → 1, 2/3, 1/3, returned in input order.
    const s = scores(normalizeScores(docs(1, 3, 2), 'rank'));
    [1 / 3, 1, 2 / 3].forEach((v, i) => expect(s[i]).toBeCloseTo(v, 15));
    // (7, 7) tie: trec_eval order d1, d0 → d1 gets 1, d0 gets 1 − 1/2 = 0.5.
    expect(scores(normalizeScores(docs(7, 7), 'rank'))).toEqual([0.5, 1]);
    // NaN dropped first: (NaN, 4, 2) → d1 1, d2 1/2.
    expect(normalizeScores(docs(NaN, 4, 2), 'rank')).toEqual([
      { docId: 'd1', score: 1 },
      { docId: 'd2', score: 0.5 },
    ]);
  });

  it('CombSUM under each of them', () => {
    // sum: A (3,2,1) → (2/3, 1/3, 0); B (0.75,0.5,0.25) → (0.5, 0.25, 0)/0.75 = (2/3, 1/3, 0).
    // d2 = 1/3 + 2/3 = 1, d1 = 2/3 + 0, d4 = 1/3, d3 = 0.
    expectScores(combSum([A, B], { normalization: 'sum' }), 'q1', [
      ['d2', 1],
      ['d1', 2 / 3],
      ['d4', 1 / 3],
      ['d3', 0],
    ]);
    // rank: A d1 1, d2 2/3, d3 1/3; B d2 1, d4 2/3, d1 1/3.
    // d2 = 2/3 + 1 = 5/3, d1 = 1 + 1/3 = 4/3, d4 = 2/3, d3 = 1/3.
    expectScores(combSum([A, B], { normalization: 'rank' }), 'q1', [
      ['d2', 5 / 3],
      ['d1', 4 / 3],
      ['d4', 2 / 3],
      ['d3', 1 / 3],
    ]);
    // max with C = {d1: 4, d5: 1} → d1 1, d5 0.25; A → d1 1, d2 2/3, d3 1/3.
    // CombMNZ: d1 = (1 + 1)·2 = 4, d2 = 2/3·1, d3 = 1/3·1, d5 = 0.25·1.
    const C = run({ q1: { d1: 4, d5: 1 } });
    expectScores(combMnz([A, C], { normalization: 'max' }), 'q1', [
      ['d1', 4],
      ['d2', 2 / 3],
      ['d3', 1 / 3],
      ['d5', 0.25],
    ]);
  });
});

describe('CombMAX, CombMIN, CombANZ (over the runs that returned the doc)', () => {
  it('CombMAX takes the largest normalised score', () => {
    // d1 = max(1, 0) = 1, d2 = max(0.5, 1) = 1 (tie with d1 → d2 first, docno descending),
    // d4 = 0.5 (B only), d3 = 0 (A only).
    expectScores(combMax([A, B]), 'q1', [
      ['d2', 1],
      ['d1', 1],
      ['d4', 0.5],
      ['d3', 0],
    ]);
  });

  it('CombMIN takes the smallest, ignoring runs that did not return the doc', () => {
    // d1 = min(1, 0) = 0, d2 = min(0.5, 1) = 0.5, d4 = 0.5 (A's absence is not a 0), d3 = 0.
    // Ties: d4 = d2 → d4 first; d3 = d1 → d3 first.
    expectScores(combMin([A, B]), 'q1', [
      ['d4', 0.5],
      ['d2', 0.5],
      ['d3', 0],
      ['d1', 0],
    ]);
  });

  it('CombANZ divides the sum by the number of runs that returned the doc', () => {
    // d2 = (0.5 + 1)/2 = 0.75, d1 = (1 + 0)/2 = 0.5, d4 = 0.5/1, d3 = 0/1. d4 = d1 → d4 first.
    expectScores(combAnz([A, B]), 'q1', [
      ['d2', 0.75],
      ['d4', 0.5],
      ['d1', 0.5],
      ['d3', 0],
    ]);
    // z-score: A (+s, 0, −s), B (+s, 0, −s), s = √1.5. d2 = (0 + s)/2, d4 = 0/1, d1 = (s − s)/2 = 0,
    // d3 = −s/1.
    const s = Math.sqrt(1.5);
    expectScores(combAnz([A, B], { normalization: 'zscore' }), 'q1', [
      ['d2', s / 2],
      ['d4', 0],
      ['d1', 0],
      ['d3', -s],
    ]);
  });
});

describe('weighted RRF, ISR, log-ISR', () => {
  it('weighted RRF: Σ w / (k + rank)', () => {
    // Weights 3 (A), 1 (B), k = 1: d1 = 3/2 + 1/4 = 1.75, d2 = 3/3 + 1/2 = 1.5, d3 = 3/4, d4 = 1/3.
    expectScores(weightedRrf([A, B], { k: 1, weights: [3, 1] }), 'q1', [
      ['d1', 1.75],
      ['d2', 1.5],
      ['d3', 0.75],
      ['d4', 1 / 3],
    ]);
    // Default k = 60, weights 1 and 2: d2 = 1/62 + 2/61, d1 = 1/61 + 2/63, d4 = 2/62, d3 = 1/63.
    expectScores(weightedRrf([A, B], { weights: [1, 2] }), 'q1', [
      ['d2', 1 / 62 + 2 / 61],
      ['d1', 1 / 61 + 2 / 63],
      ['d4', 2 / 62],
      ['d3', 1 / 63],
    ]);
    expect(() => fuse([A, B], { method: 'wrrf' } as FusionOptions)).toThrow(/needs one weight per run/);
  });

  it('ISR: |R(d)| · Σ 1/rank²', () => {
    // d2 = 2·(1/2² + 1/1²) = 2·1.25 = 2.5, d1 = 2·(1/1² + 1/3²) = 2·10/9 = 20/9,
    // d4 = 1·1/2² = 0.25, d3 = 1·1/3² = 1/9.
    expectScores(inverseSquareRank([A, B]), 'q1', [
      ['d2', 2.5],
      ['d1', 20 / 9],
      ['d4', 0.25],
      ['d3', 1 / 9],
    ]);
  });

  it('log-ISR: ln|R(d)| · Σ 1/rank²; a doc one run returned scores ln 1 = 0', () => {
    // d2 = ln2·1.25, d1 = ln2·10/9, d4 = ln1·0.25 = 0, d3 = 0 → tie, d4 first (docno descending).
    expectScores(logInverseSquareRank([A, B]), 'q1', [
      ['d2', Math.LN2 * 1.25],
      ['d1', Math.LN2 * (10 / 9)],
      ['d4', 0],
      ['d3', 0],
    ]);
  });
});

describe('Borda count', () => {
  it('n − rank + 1 points, unranked docs sharing the rest: (n − m + 1)/2', () => {
    // Union n = 4. A (m = 3): d1 4, d2 3, d3 2, d4 unranked (4 − 3 + 1)/2 = 1.
    //              B (m = 3): d2 4, d4 3, d1 2, d3 unranked 1.
    // d2 = 3 + 4 = 7, d1 = 4 + 2 = 6, d4 = 1 + 3 = 4, d3 = 2 + 1 = 3.
    expectScores(bordaFuse([A, B]), 'q1', [
      ['d2', 7],
      ['d1', 6],
      ['d4', 4],
      ['d3', 3],
    ]);
    // Weights 3 (A), 1 (B): d1 = 12 + 2 = 14, d2 = 9 + 4 = 13, d3 = 6 + 1 = 7, d4 = 3 + 3 = 6.
    expectScores(bordaFuse([A, B], { weights: [3, 1] }), 'q1', [
      ['d1', 14],
      ['d2', 13],
      ['d3', 7],
      ['d4', 6],
    ]);
  });

  it('counts the docs kept after inputDepth, and keeps NaN-scored docs at their rank (last)', () => {
    // inputDepth 2: A keeps d1, d2; B keeps d2, d4; n = 3.
    // A: d1 3, d2 2, d4 (3 − 2 + 1)/2 = 1.  B: d2 3, d4 2, d1 1.  d2 = 5, d1 = 4, d4 = 3.
    expectScores(bordaFuse([A, B], { inputDepth: 2 }), 'q1', [
      ['d2', 5],
      ['d1', 4],
      ['d4', 3],
    ]);
    // N: b r1, a r2 (NaN last), m = 2; M: c r1, m = 1; n = 3.
    // N: b 3, a 2, c (3 − 2 + 1)/2 = 1.  M: c 3, a and b (3 − 1 + 1)/2 = 1.5 each.
    // b = 4.5, c = 4, a = 3.5.
    const N = run({ q: { a: NaN, b: 1 } });
    const M = run({ q: { c: 1 } });
    expectScores(bordaFuse([N, M]), 'q', [
      ['b', 4.5],
      ['c', 4],
      ['a', 3.5],
    ]);
  });
});

describe('Condorcet', () => {
  // C ranks d2 > d1. Pairwise majorities over A, B, C: d2 beats d1 (B, C vs A), d3 and d4 (every run);
  // d1 beats d3 (all three: B and C rank d1 and not d3) and d4 (A, C vs B); d3 vs d4: A prefers d3
  // (ranks it, not d4), B prefers d4, C neither → tie, kept in docno-descending order (d4 first).
  const C = run({ q1: { d2: 2, d1: 1 } });

  it('orders by pairwise majority, missing docs below ranked ones; scores n … 1', () => {
    expectScores(condorcetFuse([A, B, C]), 'q1', [
      ['d2', 4],
      ['d1', 3],
      ['d4', 2],
      ['d3', 1],
    ]);
    expect(condorcetFuse([C, A, B])).toEqual(condorcetFuse([A, B, C]));
  });

  it('weighted: the runs preferring a doc are summed by weight', () => {
    // Weights A 3, B 1, C 1: d1 beats d2 (3 vs 2), d3 beats d4 (3 vs 1), d1 beats d4 (4 vs 1),
    // d2 beats d3 and d4 (every run) → d1, d2, d3, d4.
    expectScores(condorcetFuse([A, B, C], { weights: [3, 1, 1] }), 'q1', [
      ['d1', 4],
      ['d2', 3],
      ['d3', 2],
      ['d4', 1],
    ]);
  });

  it('a majority cycle gets the merge sort’s deterministic order', () => {
    // X: a > b > c, Y: b > c > a, Z: c > a > b: a beats b, b beats c, c beats a (each 2 to 1).
    // Start c, b, a (docno descending). Merge [c] [b]: b beats c → b, c. Merge [b, c] [a]: a beats b
    // → a, then b, c. Result a, b, c.
    const X = run({ q: { a: 3, b: 2, c: 1 } });
    const Y = run({ q: { b: 3, c: 2, a: 1 } });
    const Z = run({ q: { c: 3, a: 2, b: 1 } });
    expectScores(condorcetFuse([X, Y, Z]), 'q', [
      ['a', 3],
      ['b', 2],
      ['c', 1],
    ]);
    expect(condorcetFuse([Z, X, Y])).toEqual(condorcetFuse([X, Y, Z]));
  });
});

describe('every method', () => {
  // Three runs over two queries with ties, a NaN and docs missing from some runs.
  const R1 = run({ q1: { a: 5, b: 4, c: 4, d: 1 }, q2: { x: 2, y: 1 } });
  const R2 = run({ q1: { c: 0.9, e: 0.8, a: 0.1, f: NaN }, q2: { y: 3 } });
  const R3 = run({ q1: { b: 10, e: 10, g: 7, a: 2 } });
  const withOpts = (m: (typeof FUSION_METHODS)[number], w: number[]): FusionOptions => {
    const p = methodParams(m);
    return { method: m, ...(p.weights !== 'none' ? { weights: w } : {}) } as FusionOptions;
  };

  it('does not depend on the order of the runs (weights follow their runs)', () => {
    for (const m of FUSION_METHODS) {
      const f1 = fuse([R1, R2, R3], withOpts(m, [0.5, 0.25, 0.25]));
      const f2 = fuse([R3, R1, R2], withOpts(m, [0.25, 0.5, 0.25]));
      expect(f2, m).toEqual(f1);
      expect([...f1.keys()], m).toEqual(['q1', 'q2']);
    }
  });

  it('cuts to depth exactly as rankQuery would, for short cuts (heap) and long ones (quickselect)', () => {
    // 60 docs, scores with many ties (i mod 7), so most cuts fall inside a tie. Depths 1, 2, 3 select
    // with a heap (16·depth ≤ 60), 5, 20, 59 by the depth-th largest score; 60 and 100 keep all.
    const big = (shift: number) =>
      new Map([['q', Array.from({ length: 60 }, (_, i) => ({ docId: `doc${i}`, score: (i + shift) % 7 }))]]);
    for (const m of FUSION_METHODS) {
      const o = withOpts(m, [1, 2]);
      const full = fuse([big(0), big(3)], o).get('q')!;
      expect(rankQuery(full), m).toEqual(full);
      for (const depth of [1, 2, 3, 5, 20, 59, 60, 100])
        expect(fuse([big(0), big(3)], { ...o, depth }).get('q'), `${m} depth ${depth}`).toEqual(
          full.slice(0, depth),
        );
    }
  });

  it('rejects parameters a method does not take', () => {
    expect(() => fuse([A, B], { method: 'combsum', weights: [1, 1] } as FusionOptions)).toThrow(
      /takes no weights/,
    );
    expect(() => fuse([A, B], { method: 'isr', k: 3 } as FusionOptions)).toThrow(/takes no k/);
    expect(() => fuse([A, B], { method: 'rrf', normalization: 'zscore' } as FusionOptions)).toThrow(
      /takes no normalisation/,
    );
    expect(() => combSum([A, B], { normalization: 'l2' as 'sum' })).toThrow(/unknown score normalisation/);
    expect(() => fuse([A, B], { method: 'combfoo' } as unknown as FusionOptions)).toThrow(/unknown fusion/);
    expect(() => bordaFuse([A, B], { weights: [1] })).toThrow(/2 weights/);
  });
});

describe('descriptors and stored configurations', () => {
  it('describes the new methods with their defaults', () => {
    const w = describeFusion({ method: 'wrrf', weights: [0.7, 0.3] }, ['a', 'b']);
    expect(w).toEqual({ method: 'wrrf', runs: ['a', 'b'], depth: 1000, k: 60, weights: [0.7, 0.3] });
    expect(fusionLabel(w)).toBe('wRRF k=60 0.7/0.3');
    const mx = describeFusion({ method: 'combmax', normalization: 'sum' }, ['a', 'b']);
    expect(mx).toEqual({ method: 'combmax', runs: ['a', 'b'], depth: 1000, normalization: 'sum' });
    expect(fusionLabel(mx)).toBe('CombMAX sum');
    expect(describeFusion({ method: 'isr' }, ['a', 'b'])).toEqual({
      method: 'isr',
      runs: ['a', 'b'],
      depth: 1000,
    });
    expect(fusionLabel(describeFusion({ method: 'condorcet', weights: [2, 1] }, ['a', 'b']))).toBe(
      'Condorcet 2/1',
    );
  });

  it('stores the same params as before for the old methods, and reads every method back', () => {
    // What compare.fuse stored before this change, for RRF and linear fusion.
    expect(fusionConfig(describeFusion({ method: 'rrf' }, ['A', 'B']), ['id1', 'id2'])).toEqual({
      kind: 'fusion',
      method: 'rrf',
      params: { method: 'rrf', depth: 1000, k: 60 },
      inputs: ['id1', 'id2'],
    });
    const lin = describeFusion({ method: 'linear', weights: [0.5, 0.5], normalization: 'zscore' }, [
      'A',
      'B',
    ]);
    expect(fusionConfig(lin, ['i', 'j']).params).toEqual({
      method: 'linear',
      depth: 1000,
      weights: '0.5,0.5',
      normalization: 'zscore',
    });
    for (const m of FUSION_METHODS) {
      const opts = {
        method: m,
        depth: 50,
        inputDepth: 20,
        ...(methodParams(m).weights !== 'none' ? { weights: [0.25, 0.75] } : {}),
        ...(methodParams(m).k ? { k: 10 } : {}),
        ...(methodParams(m).normalization ? { normalization: 'rank' as const } : {}),
      } as FusionOptions;
      const d = describeFusion(opts, ['A', 'B']);
      const back = fusionDescriptorOf(fusionConfig(d, ['A', 'B']));
      expect(back, m).toEqual(d);
      // The options recovered from a stored run fuse exactly as the original ones.
      expect(fuse([A, B], fusionOptionsFor(back)!), m).toEqual(fuse([A, B], opts));
    }
    // float32Ties survives the round trip too.
    const f32 = describeFusion({ method: 'combsum', float32Ties: true }, ['A', 'B']);
    expect(fusionDescriptorOf(fusionConfig(f32, ['A', 'B']))).toEqual(f32);
  });

  it('gives RRF results identical to before for a stored old-style config', () => {
    const old = { kind: 'fusion' as const, method: 'rrf', params: { k: 60 }, inputs: ['x', 'y'] };
    const d = fusionDescriptorOf(old, ['X', 'Y']);
    expect(d).toEqual({ method: 'rrf', runs: ['X', 'Y'], depth: 1000, k: 60 });
    expect(fuse([A, B], fusionOptionsFor(d)!)).toEqual(reciprocalRankFusion([A, B]));
  });
});

describe('fusionTerms (what each input adds, for explanations)', () => {
  it('gives each run its term for the doc, null where it did not return it', () => {
    // d1: A rank 1 (min-max 1), B rank 3 (min-max 0). d3: only A, rank 3 (min-max 0).
    expect(fusionTerms([A, B], { method: 'combmax' }, 'q1', 'd1')).toEqual([1, 0]);
    expect(fusionTerms([A, B], { method: 'combsum' }, 'q1', 'd3')).toEqual([0, null]);
    expect(fusionTerms([A, B], { method: 'linear', weights: [0.75, 0.25] }, 'q1', 'd2')).toEqual([
      0.375, 0.25,
    ]);
    // RRF: 1/(60 + 1), 1/(60 + 3).  ISR: 1/1², 1/3².
    expect(fusionTerms([A, B], { method: 'rrf' }, 'q1', 'd1')).toEqual([1 / 61, 1 / 63]);
    expect(fusionTerms([A, B], { method: 'isr' }, 'q1', 'd1')).toEqual([1, 1 / 9]);
    // Borda (n = 4): A d1 4 points, B d1 2 points; d3 gets A's 2 and B's unranked share 1.
    expect(fusionTerms([A, B], { method: 'borda' }, 'q1', 'd1')).toEqual([4, 2]);
    expect(fusionTerms([A, B], { method: 'borda' }, 'q1', 'd3')).toEqual([2, 1]);
    expect(fusionTerms([A, B], { method: 'condorcet' }, 'q1', 'd1')).toEqual([null, null]);
    expect(fusionTerms([A, B], { method: 'rrf' }, 'q1', 'nope')).toEqual([null, null]);
  });

  it('adds up to the fused score for the additive methods', () => {
    for (const o of [
      { method: 'combsum', normalization: 'zscore' },
      { method: 'rrf', k: 5 },
      { method: 'borda', weights: [2, 1] },
      { method: 'linear', weights: [0.3, 0.7], normalization: 'sum' },
    ] as FusionOptions[])
      for (const d of fuse([A, B], o).get('q1')!) {
        const sum = fusionTerms([A, B], o, 'q1', d.docId).reduce<number>((s, x) => s + (x ?? 0), 0);
        expect(sum, `${o.method} ${d.docId}`).toBeCloseTo(d.score, 14);
      }
  });
});
