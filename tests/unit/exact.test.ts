import { describe, expect, it } from 'vitest';
import {
  clusteredVectors,
  dequantizeInt8,
  estimateExactBytes,
  exactScore,
  exactSearch,
  indexTieBreak,
  matrix,
  memoryBytes,
  mulberry32,
  normalizeRows,
  popcount32,
  quantizeBinary,
  quantizeInt8,
  recallAtK,
  rescore,
  searchHamming,
  searchInt8,
  trecTieBreak,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';

/** Top-k written out from the definition: every score, one full sort. */
function naive(
  docs: Matrix,
  queries: Matrix,
  k: number,
  tie: (a: number, b: number) => number,
  exclude?: number[][],
) {
  const out: { index: number; score: number }[][] = [];
  for (let q = 0; q < queries.n; q++) {
    const all: { index: number; score: number }[] = [];
    for (let d = 0; d < docs.n; d++) {
      if (exclude?.[q]?.includes(d)) continue;
      let s = 0;
      for (let j = 0; j < docs.dim; j++) s += queries.data[q * docs.dim + j] * docs.data[d * docs.dim + j];
      all.push({ index: d, score: Math.fround(s) });
    }
    all.sort((a, b) => b.score - a.score || tie(b.index, a.index));
    out.push(all.slice(0, k));
  }
  return out;
}

function rows(r: KnnResult): { index: number; score: number }[][] {
  return Array.from({ length: r.nq }, (_, q) =>
    Array.from({ length: r.counts[q] }, (_, i) => ({
      index: r.indices[q * r.k + i],
      score: r.scores[q * r.k + i],
    })),
  );
}

function randomMatrix(n: number, dim: number, seed: number): Matrix {
  const rand = mulberry32(seed);
  return { data: Float32Array.from({ length: n * dim }, () => rand() - 0.5), n, dim };
}

describe('exactSearch', () => {
  it('equals a full sort for odd sizes and every tiling (query tails, document tails)', () => {
    const docs = randomMatrix(257, 19, 1);
    const queries = randomMatrix(7, 19, 2);
    const want = naive(docs, queries, 13, indexTieBreak);
    for (const [queryTile, docTile] of [
      [4, 1],
      [4, 3],
      [8, 64],
      [64, 256],
      [5, 1000],
    ]) {
      const got = exactSearch(docs, queries, { k: 13, queryTile, docTile });
      expect(rows(got)).toEqual(want);
    }
  });

  it('returns float32 scores equal to exactScore and rescore, bit for bit', () => {
    const docs = randomMatrix(300, 384, 3);
    const queries = randomMatrix(9, 384, 4);
    const r = exactSearch(docs, queries, { k: 20 });
    for (let q = 0; q < 9; q++)
      for (let i = 0; i < 20; i++) {
        const d = r.indices[q * 20 + i];
        expect(r.scores[q * 20 + i]).toBe(exactScore(docs, d, queries, q));
      }
    expect(rescore(r, { docs, queries }, { k: 20 })).toEqual(r);
  });

  it('orders equal scores by the tie-break: index order by default, trec_eval (id descending) on request', () => {
    // Four identical documents and one better one.
    const docs = matrix(new Float32Array([1, 0, 1, 0, 2, 0, 1, 0, 1, 0]), 5, 2);
    const queries = matrix(new Float32Array([1, 0]), 1, 2);
    expect(Array.from(exactSearch(docs, queries, { k: 5 }).indices)).toEqual([2, 0, 1, 3, 4]);
    const ids = ['b', 'a', 'x', 'd', 'c'];
    // trec_eval: equal scores by docno descending: d (3), c (4), b (0), a (1).
    expect(Array.from(exactSearch(docs, queries, { k: 5, tieBreak: trecTieBreak(ids) }).indices)).toEqual([
      2, 3, 4, 0, 1,
    ]);
    // The heap keeps the right members when ties straddle the cut.
    expect(Array.from(exactSearch(docs, queries, { k: 3, tieBreak: trecTieBreak(ids) }).indices)).toEqual([
      2, 3, 4,
    ]);
  });

  it('honours per-query exclusions and returns fewer hits when the corpus runs out', () => {
    const docs = randomMatrix(10, 8, 5);
    const queries = randomMatrix(3, 8, 6);
    const exclude = [[0, 1, 2], [], [3, 3, 9]];
    const got = exactSearch(docs, queries, { k: 8, exclude });
    expect(rows(got)).toEqual(naive(docs, queries, 8, indexTieBreak, exclude));
    expect(Array.from(got.counts)).toEqual([7, 8, 8]);
    const few = exactSearch(docs, queries, { k: 12 });
    expect(Array.from(few.counts)).toEqual([10, 10, 10]);
    expect(few.indices[10]).toBe(-1);
    expect(few.scores[11]).toBe(-Infinity);
  });

  it('handles k = 0, empty corpora and rejects mismatched dimensions', () => {
    const docs = randomMatrix(5, 4, 7);
    const queries = randomMatrix(2, 4, 8);
    expect(exactSearch(docs, queries, { k: 0 }).indices.length).toBe(0);
    expect(
      Array.from(exactSearch({ data: new Float32Array(0), n: 0, dim: 4 }, queries, { k: 3 }).counts),
    ).toEqual([0, 0]);
    expect(() => exactSearch(docs, randomMatrix(1, 3, 9), { k: 1 })).toThrow(/dimension 3 differs/);
    expect(() => exactSearch(docs, queries, { k: -1 })).toThrow(RangeError);
    expect(() => matrix(new Float32Array(5), 2, 3)).toThrow(/needs 6 values/);
  });
});

describe('quantization', () => {
  const gen = clusteredVectors(64, { clusters: 8, rank: 8, seed: 11 });
  const docs = gen.generate(2000);
  const queries = gen.generate(50);
  const truth = exactSearch(docs, queries, { k: 10 });

  it('int8 codes reconstruct every value to within half a step, in both schemes', () => {
    for (const scheme of ['per-dimension', 'per-vector'] as const) {
      const q = quantizeInt8(docs, scheme);
      expect(q.scales.length).toBe(scheme === 'per-dimension' ? 64 : 2000);
      const back = dequantizeInt8(q);
      let worst = 0;
      for (let i = 0; i < docs.data.length; i++) {
        const s = scheme === 'per-dimension' ? q.scales[i % 64] : q.scales[Math.floor(i / 64)];
        worst = Math.max(worst, Math.abs(back.data[i] - docs.data[i]) - s / 2);
      }
      expect(worst).toBeLessThanOrEqual(1e-7);
      expect(memoryBytes(q)).toBe(2000 * 64 + q.scales.length * 4);
    }
  });

  it('int8 search approximates exact scores and, rescored from a deeper list, returns the exact top-k', () => {
    for (const scheme of ['per-dimension', 'per-vector'] as const) {
      const q = quantizeInt8(docs, scheme);
      const approx = searchInt8(q, queries, { k: 10 });
      expect(recallAtK(approx, truth, 10)).toBeGreaterThan(0.9);
      for (let i = 0; i < approx.k; i++) {
        const d = approx.indices[i];
        expect(Math.abs(approx.scores[i] - exactScore(docs, d, queries, 0))).toBeLessThan(0.02);
      }
      const deep = searchInt8(q, queries, { k: 40 });
      expect(rescore(deep, { docs, queries }, { k: 10 })).toEqual(truth);
    }
  });

  it('binary codes: popcount, Hamming scores, rescoring recovers most of the exact top-10', () => {
    expect([0, 1, 0xff, 0xffffffff, 0x80000001, 0x12345678].map(popcount32)).toEqual([0, 1, 8, 32, 2, 13]);
    const b = quantizeBinary(docs);
    expect(b.words).toBe(2);
    expect(memoryBytes(b)).toBe(2000 * 8);
    const bq = quantizeBinary(queries);
    const r = searchHamming(b, bq, { k: 100 });
    // Score = agreements − disagreements, checked by hand for one pair.
    const d0 = r.indices[0];
    let agree = 0;
    for (let j = 0; j < 64; j++) if (docs.data[d0 * 64 + j] > 0 === queries.data[j] > 0) agree++;
    expect(r.scores[0]).toBe(agree - (64 - agree));
    // Integer scores tie a lot: equal scores must be in index order (the default tie-break).
    for (let i = 1; i < 100; i++)
      if (r.scores[i] === r.scores[i - 1]) expect(r.indices[i]).toBeGreaterThan(r.indices[i - 1]);
    expect(recallAtK(rescore(r, { docs, queries }, { k: 10 }), truth, 10)).toBeGreaterThan(0.8);
  });

  it('rescore skips -1 padding, duplicates and exclusions', () => {
    const cand: KnnResult = {
      k: 4,
      nq: 1,
      indices: new Int32Array([5, 5, 7, -1]),
      scores: new Float32Array(4),
      counts: new Uint32Array([4]),
    };
    const one = { data: queries.data.slice(0, 64), n: 1, dim: 64 };
    const r = rescore(cand, { docs, queries: one }, { k: 3, exclude: [[7]] });
    expect(Array.from(r.indices)).toEqual([5, -1, -1]);
    expect(r.scores[0]).toBe(exactScore(docs, 5, one, 0));
  });
});

describe('helpers', () => {
  it('recallAtK counts overlaps per query', () => {
    const exact: KnnResult = {
      k: 2,
      nq: 2,
      indices: new Int32Array([1, 2, 3, 4]),
      scores: new Float32Array(4),
      counts: new Uint32Array([2, 2]),
    };
    const approx = { ...exact, indices: new Int32Array([2, 9, 4, 3]) };
    expect(recallAtK(approx, exact, 2)).toBe(0.75);
    expect(recallAtK(approx, exact, 1)).toBe(0);
    expect(recallAtK({ ...exact, indices: new Int32Array([1, 9, 4, 3]) }, exact, 1)).toBe(0.5);
  });

  it('clusteredVectors is deterministic, normalised and clustered', () => {
    const a = clusteredVectors(32, { seed: 3 }).generate(100);
    const b = clusteredVectors(32, { seed: 3 }).generate(100);
    const c = clusteredVectors(32, { seed: 4 }).generate(100);
    expect(a.data).toEqual(b.data);
    expect(a.data).not.toEqual(c.data);
    for (let i = 0; i < 100; i++) {
      let s = 0;
      for (let j = 0; j < 32; j++) s += a.data[i * 32 + j] ** 2;
      expect(s).toBeCloseTo(1, 5);
    }
    expect(normalizeRows(matrix(new Float32Array([3, 4, 0, 0]), 2, 2)).data).toEqual(
      new Float32Array([0.6, 0.8, 0, 0]),
    );
  });

  it('memory estimates match what the structures hold', () => {
    const docs = randomMatrix(100, 16, 1);
    expect(memoryBytes(docs)).toBe(6400);
    const r = exactSearch(docs, randomMatrix(3, 16, 2), { k: 5 });
    expect(memoryBytes(r)).toBe(3 * 5 * 8 + 12);
    expect(estimateExactBytes(1_000_000, 384, 0, 0)).toBe(1_536_000_000);
    expect(estimateExactBytes(1_000_000, 384, 0, 0, 'int8')).toBe(384_000_000 + 384 * 4);
    expect(estimateExactBytes(1_000_000, 384, 0, 0, 'binary')).toBe(48_000_000);
  });
});
