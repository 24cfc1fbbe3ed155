// Run fusion: every expected score below is worked out by hand in the comments.
import { describe, expect, it } from 'vitest';
import {
  combMnz,
  combSum,
  describeFusion,
  fuse,
  fusionLabel,
  linearFusion,
  normalizeScores,
  reciprocalRankFusion,
  type FusionOptions,
} from '../../src/lib/core/retrieval/fusion';
import { evaluate } from '../../src/lib/core/eval/metrics';
import type { Run, ScoredDoc } from '../../src/lib/core/types';

/** Builds a run from `{ qid: { docId: score } }`. */
function run(spec: Record<string, Record<string, number>>): Run {
  const r: Run = new Map();
  for (const [q, docs] of Object.entries(spec))
    r.set(
      q,
      Object.entries(docs).map(([docId, score]) => ({ docId, score })),
    );
  return r;
}

/** A fused query as [docId, score] pairs in output order. */
const pairs = (r: Run, q: string) => (r.get(q) ?? []).map((d) => [d.docId, d.score] as const);
const ids = (r: Run, q: string) => (r.get(q) ?? []).map((d) => d.docId);

function expectScores(r: Run, q: string, expected: [string, number][]) {
  const got = pairs(r, q);
  expect(got.map((p) => p[0])).toEqual(expected.map((p) => p[0]));
  got.forEach(([, s], i) => expect(s).toBeCloseTo(expected[i][1], 14));
}

// Run A ranks d1 > d2 > d3; run B ranks d2 > d4 > d1 (d3 only in A, d4 only in B).
// Scores are chosen so min-max and z-score normalisation are exact in binary.
const A = run({ q1: { d1: 3, d2: 2, d3: 1 } });
const B = run({ q1: { d2: 0.75, d4: 0.5, d1: 0.25 }, q2: { x: 1, y: 2 } });

describe('reciprocal rank fusion', () => {
  it('sums 1/(k + rank) over the runs, missing docs contributing nothing', () => {
    const f = reciprocalRankFusion([A, B]);
    // A: d1 r1, d2 r2, d3 r3.  B: d2 r1, d4 r2, d1 r3.  k = 60:
    // d2 = 1/62 + 1/61 = 0.032522…   d1 = 1/61 + 1/63 = 0.032266…
    // d4 = 1/62 = 0.016129…          d3 = 1/63 = 0.015873…
    expectScores(f, 'q1', [
      ['d2', 1 / 61 + 1 / 62],
      ['d1', 1 / 61 + 1 / 63],
      ['d4', 1 / 62],
      ['d3', 1 / 63],
    ]);
    // q2 is only in B: y r1 (score 2), x r2 → 1/61, 1/62.
    expectScores(f, 'q2', [
      ['y', 1 / 61],
      ['x', 1 / 62],
    ]);
    expect([...f.keys()]).toEqual(['q1', 'q2']);
  });

  it('takes k and per-run weights', () => {
    // k = 0: d2 = 1/2 + 1/1 = 1.5, d1 = 1/1 + 1/3 = 1.333…, d4 = 1/2, d3 = 1/3.
    expectScores(reciprocalRankFusion([A, B], { k: 0 }), 'q1', [
      ['d2', 1.5],
      ['d1', 4 / 3],
      ['d4', 0.5],
      ['d3', 1 / 3],
    ]);
    // Weights 3 (A) and 1 (B), k = 1: d1 = 3/2 + 1/4 = 1.75, d2 = 3/3 + 1/2 = 1.5, d3 = 3/4, d4 = 1/3.
    expectScores(reciprocalRankFusion([A, B], { k: 1, weights: [3, 1] }), 'q1', [
      ['d1', 1.75],
      ['d2', 1.5],
      ['d3', 0.75],
      ['d4', 1 / 3],
    ]);
  });

  it('ranks input ties the trec_eval way and breaks fused ties by docno descending', () => {
    // In C, a and b tie at 5: trec_eval order is b (r1), a (r2). In D, a is r1, b r2.
    // Fused: a = 1/62 + 1/61, b = 1/61 + 1/62: equal, so b (larger docno) comes first.
    const C = run({ q: { a: 5, b: 5 } });
    const D = run({ q: { a: 9, b: 1 } });
    const f = reciprocalRankFusion([C, D]);
    expect(ids(f, 'q')).toEqual(['b', 'a']);
    expect(f.get('q')![0].score).toBe(f.get('q')![1].score);
    // Alone with a third run ranking a first: a = 1/62 + 1/61 + 1/61 > b.
    const E = run({ q: { a: 2, b: 1 } });
    expect(ids(reciprocalRankFusion([C, D, E]), 'q')).toEqual(['a', 'b']);
  });

  it('does not depend on the order of the runs', () => {
    const R1 = run({ q: { a: 3, b: 2, c: 1 } });
    const R2 = run({ q: { b: 3, c: 2, a: 1 } });
    const R3 = run({ q: { c: 3, a: 2, b: 1 } });
    // Every doc has ranks {1, 2, 3}: all three tie exactly at 1/61 + 1/62 + 1/63 → c, b, a.
    const f1 = reciprocalRankFusion([R1, R2, R3]);
    const f2 = reciprocalRankFusion([R3, R1, R2]);
    expect(pairs(f1, 'q')).toEqual(pairs(f2, 'q'));
    expect(ids(f1, 'q')).toEqual(['c', 'b', 'a']);
    expect(new Set(f1.get('q')!.map((d) => d.score)).size).toBe(1);
  });

  it('cuts inputs to inputDepth and the output to depth', () => {
    // inputDepth 1: A keeps d1, B keeps d2 → both 1/61, tie → d2 first.
    expectScores(reciprocalRankFusion([A, B], { inputDepth: 1 }), 'q1', [
      ['d2', 1 / 61],
      ['d1', 1 / 61],
    ]);
    expect(ids(reciprocalRankFusion([A, B], { depth: 2 }), 'q1')).toEqual(['d2', 'd1']);
    // A tie at the cut keeps the larger docnos, as trec_eval -M would.
    const T1 = run({ q: { a: 1, b: 1, c: 1 } });
    const T2 = run({ q: {} });
    expect(ids(reciprocalRankFusion([T1, T2], { depth: 2 }), 'q')).toEqual(['c', 'b']);
  });

  it('gives NaN-scored docs their trec_eval rank (last)', () => {
    const N = run({ q: { a: NaN, b: 1 } });
    const M = run({ q: { c: 1 } });
    // N order: b r1, a r2 (NaN last). M: c r1. b = c = 1/61 → c first; a = 1/62.
    expectScores(reciprocalRankFusion([N, M]), 'q', [
      ['c', 1 / 61],
      ['b', 1 / 61],
      ['a', 1 / 62],
    ]);
  });
});

describe('score normalisation', () => {
  const docs = (...s: number[]): ScoredDoc[] => s.map((score, i) => ({ docId: `d${i}`, score }));
  const scores = (x: ScoredDoc[]) => x.map((d) => d.score);

  it('min-max maps to [0, 1]; a constant list maps to 1', () => {
    expect(scores(normalizeScores(docs(3, 2, 1), 'minmax'))).toEqual([1, 0.5, 0]);
    expect(scores(normalizeScores(docs(7, 7), 'minmax'))).toEqual([1, 1]);
    expect(scores(normalizeScores(docs(-4), 'minmax'))).toEqual([1]);
  });

  it('z-score uses the population sd; a constant list maps to 0', () => {
    // mean 2, sd = √((1 + 0 + 1)/3) = √(2/3) → ±1/√(2/3) = ±1.2247…
    const z = scores(normalizeScores(docs(3, 2, 1), 'zscore'));
    expect(z[0]).toBeCloseTo(Math.sqrt(1.5), 14);
    expect(z[1]).toBe(0);
    expect(z[2]).toBeCloseTo(-Math.sqrt(1.5), 14);
    expect(scores(normalizeScores(docs(7, 7, 7), 'zscore'))).toEqual([0, 0, 0]);
    expect(scores(normalizeScores(docs(0.1), 'zscore'))).toEqual([0]);
  });

  it("'none' keeps raw scores; non-finite scores are dropped", () => {
    expect(scores(normalizeScores(docs(3, -2), 'none'))).toEqual([3, -2]);
    const n = normalizeScores(docs(NaN, 4, Infinity, 2), 'minmax');
    expect(n).toEqual([
      { docId: 'd1', score: 1 },
      { docId: 'd3', score: 0 },
    ]);
    expect(normalizeScores([], 'zscore')).toEqual([]);
  });
});

describe('CombSUM and CombMNZ', () => {
  // Min-max: A d1 3→1, d2 2→0.5, d3 1→0;  B d2 0.75→1, d4 0.5→0.5, d1 0.25→0.
  it('CombSUM adds normalised scores, a missing doc adding 0', () => {
    // d2 = 0.5 + 1 = 1.5, d1 = 1 + 0 = 1, d4 = 0 + 0.5 = 0.5, d3 = 0 + 0 = 0.
    expectScores(combSum([A, B]), 'q1', [
      ['d2', 1.5],
      ['d1', 1],
      ['d4', 0.5],
      ['d3', 0],
    ]);
  });

  it('CombMNZ multiplies by the number of runs that returned the doc', () => {
    // d2 = 1.5·2 = 3, d1 = 1·2 = 2, d4 = 0.5·1 = 0.5, d3 = 0·1 = 0.
    expectScores(combMnz([A, B]), 'q1', [
      ['d2', 3],
      ['d1', 2],
      ['d4', 0.5],
      ['d3', 0],
    ]);
  });

  it('z-score: below-mean docs go negative, below docs the run did not return', () => {
    // A: (3,2,1) → (+s, 0, −s), B: (0.75,0.5,0.25) → (+s, 0, −s), s = √1.5 (B is A/4 − 0.25: exact).
    // CombSUM: d2 = 0 + s, d1 = s − s = 0, d4 = 0 + 0 = 0, d3 = −s + 0. d1 and d4 tie at 0 → d4 first.
    const s = Math.sqrt(1.5);
    expectScores(combSum([A, B], { normalization: 'zscore' }), 'q1', [
      ['d2', s],
      ['d4', 0],
      ['d1', 0],
      ['d3', -s],
    ]);
    // CombMNZ: d2 = 2s, d4 = 0·1, d1 = 0·2, d3 = −s·1.
    expectScores(combMnz([A, B], { normalization: 'zscore' }), 'q1', [
      ['d2', 2 * s],
      ['d4', 0],
      ['d1', 0],
      ['d3', -s],
    ]);
  });

  it('a constant-score run: min-max gives every doc 1, z-score 0, and MNZ still counts it', () => {
    const C = run({ q1: { d1: 7, d5: 7 } });
    // min-max: C → d1 1, d5 1.  CombSUM: d1 = 1 + 1 = 2, d5 = 1, d2 = 0.5, d3 = 0.
    expectScores(combSum([A, C]), 'q1', [
      ['d1', 2],
      ['d5', 1],
      ['d2', 0.5],
      ['d3', 0],
    ]);
    // CombMNZ: d1 = 2·2 = 4, d5 = 1·1, d2 = 0.5·1, d3 = 0.
    expectScores(combMnz([A, C]), 'q1', [
      ['d1', 4],
      ['d5', 1],
      ['d2', 0.5],
      ['d3', 0],
    ]);
    // z-score: C → 0, 0. A → (+s, 0, −s). CombSUM: d1 = s, then d2 = d5 = 0 (tie → d5 first), d3 = −s.
    const s = Math.sqrt(1.5);
    expectScores(combSum([A, C], { normalization: 'zscore' }), 'q1', [
      ['d1', s],
      ['d5', 0],
      ['d2', 0],
      ['d3', -s],
    ]);
    // CombMNZ z-score: d1 = s·2, d5 = 0·1, d2 = 0·1, d3 = −s·1.
    expectScores(combMnz([A, C], { normalization: 'zscore' }), 'q1', [
      ['d1', 2 * s],
      ['d5', 0],
      ['d2', 0],
      ['d3', -s],
    ]);
  });

  it('leaves non-finite scores out (not counted by MNZ)', () => {
    const N = run({ q1: { d1: NaN, d2: 4, d4: 2 } });
    // N min-max without d1: d2 1, d4 0. CombMNZ with A: d2 = (0.5 + 1)·2 = 3, d1 = 1·1, d4 = 0·1, d3 = 0.
    expectScores(combMnz([A, N]), 'q1', [
      ['d2', 3],
      ['d1', 1],
      ['d4', 0],
      ['d3', 0],
    ]);
  });

  it('throws on a doc twice in one query', () => {
    const dup: Run = new Map([
      [
        'q1',
        [
          { docId: 'd1', score: 1 },
          { docId: 'd1', score: 2 },
        ],
      ],
    ]);
    expect(() => combSum([A, dup])).toThrow(/duplicate doc 'd1' in query 'q1' of run 2/);
  });
});

describe('linear fusion', () => {
  it('weights the normalised scores', () => {
    // Weights 0.75 (A), 0.25 (B), min-max:
    // d1 = 0.75·1 + 0.25·0 = 0.75, d2 = 0.75·0.5 + 0.25·1 = 0.625, d4 = 0.25·0.5 = 0.125, d3 = 0.
    expectScores(linearFusion([A, B], { weights: [0.75, 0.25] }), 'q1', [
      ['d1', 0.75],
      ['d2', 0.625],
      ['d4', 0.125],
      ['d3', 0],
    ]);
  });

  it("with normalisation 'none' weights the raw scores", () => {
    // d1 = 0.75·3 + 0.25·0.25 = 2.3125, d2 = 0.75·2 + 0.25·0.75 = 1.6875, d3 = 0.75·1 = 0.75,
    // d4 = 0.25·0.5 = 0.125.
    expectScores(linearFusion([A, B], { weights: [0.75, 0.25], normalization: 'none' }), 'q1', [
      ['d1', 2.3125],
      ['d2', 1.6875],
      ['d3', 0.75],
      ['d4', 0.125],
    ]);
  });

  it('equal weights of 1 are CombSUM', () => {
    expect(linearFusion([A, B], { weights: [1, 1] })).toEqual(combSum([A, B]));
  });
});

describe('fuse, descriptors, validation', () => {
  it('dispatches on the method', () => {
    expect(fuse([A, B], { method: 'rrf', k: 10 })).toEqual(reciprocalRankFusion([A, B], { k: 10 }));
    expect(fuse([A, B], { method: 'combsum', normalization: 'zscore' })).toEqual(
      combSum([A, B], { normalization: 'zscore' }),
    );
    expect(fuse([A, B], { method: 'combmnz' })).toEqual(combMnz([A, B]));
    expect(fuse([A, B], { method: 'linear', weights: [2, 1] })).toEqual(
      linearFusion([A, B], { weights: [2, 1] }),
    );
  });

  it('describes a fusion with its defaults resolved', () => {
    const rrf: FusionOptions = { method: 'rrf' };
    expect(describeFusion(rrf, ['bm25', 'dense'])).toEqual({
      method: 'rrf',
      runs: ['bm25', 'dense'],
      depth: 1000,
      k: 60,
    });
    const lin: FusionOptions = { method: 'linear', weights: [0.7, 0.3], depth: 100, inputDepth: 50 };
    const d = describeFusion(lin, ['bm25', 'dense']);
    expect(d).toEqual({
      method: 'linear',
      runs: ['bm25', 'dense'],
      depth: 100,
      inputDepth: 50,
      normalization: 'minmax',
      weights: [0.7, 0.3],
    });
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
    expect(fusionLabel(describeFusion(rrf, ['a', 'b']))).toBe('RRF k=60');
    expect(fusionLabel(d)).toBe('Linear minmax 0.7/0.3');
    expect(fusionLabel(describeFusion({ method: 'combmnz', normalization: 'zscore' }, ['a', 'b']))).toBe(
      'CombMNZ zscore',
    );
  });

  it('rejects bad parameters', () => {
    expect(() => reciprocalRankFusion([A])).toThrow(/at least two runs/);
    expect(() => reciprocalRankFusion([A, B], { k: -1 })).toThrow(/k must be/);
    expect(() => reciprocalRankFusion([A, B], { weights: [1] })).toThrow(/2 weights/);
    expect(() => linearFusion([A, B], { weights: [1, -1] })).toThrow(/non-negative/);
    expect(() => combSum([A, B], { depth: 0 })).toThrow(/depth/);
    expect(() => combSum([A, B], { inputDepth: 1.5 })).toThrow(/inputDepth/);
  });

  it('produces a run that evaluate scores like any other', () => {
    const qrels = new Map([['q1', new Map([['d4', 1]])]]);
    // CombSUM order d2, d1, d4, d3: the one relevant doc at rank 3 → MRR 1/3.
    const r = evaluate(qrels, combSum([A, B]), ['recip_rank']);
    expect(r.all.recip_rank).toBeCloseTo(1 / 3, 15);
    // RRF order d2, d1, d4, d3 as well.
    expect(evaluate(qrels, fuse([A, B], { method: 'rrf' }), ['recip_rank']).all.recip_rank).toBeCloseTo(
      1 / 3,
      15,
    );
  });
});
