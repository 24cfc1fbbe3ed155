// Cross-validated tuning of fusion parameters (fusion-tuning.ts): grids, folds, the held-out run, and
// that held-out scores are what gets reported.
import { describe, expect, it } from 'vitest';
import {
  assignFolds,
  DEFAULT_RRF_KS,
  fusionGrid,
  simplexGrid,
  tuneFusion,
} from '../../src/lib/core/retrieval/fusion-tuning';
import {
  describeFusion,
  fuse,
  fusionConfig,
  fusionDescriptorOf,
  fusionLabel,
  fusionOptionsFor,
  type FusionBase,
  type FusionOptions,
  type FusionParams,
} from '../../src/lib/core/retrieval/fusion';
import { compareBytes, evaluate } from '../../src/lib/core/eval/metrics';
import { Xoshiro128 } from '../../src/lib/core/eval/random';
import type { Qrels, Run } from '../../src/lib/core/types';

describe('grids', () => {
  it('simplex grids: multiples of the step summing to 1, first weight descending', () => {
    expect(simplexGrid(2, 0.5)).toEqual([
      [1, 0],
      [0.5, 0.5],
      [0, 1],
    ]);
    expect(simplexGrid(3, 0.5)).toEqual([
      [1, 0, 0],
      [0.5, 0.5, 0],
      [0.5, 0, 0.5],
      [0, 1, 0],
      [0, 0.5, 0.5],
      [0, 0, 1],
    ]);
    // 2 runs, step 0.1: 11 points; 3 runs: C(10 + 2, 2) = 66. 3/10 is the double 0.3 exactly.
    expect(simplexGrid(2, 0.1)).toHaveLength(11);
    expect(simplexGrid(2, 0.1)[7]).toEqual([0.3, 0.7]);
    expect(simplexGrid(3, 0.1)).toHaveLength(66);
    expect(() => simplexGrid(2, 0.3)).toThrow(/divide 1/);
  });

  it('fusionGrid varies what each method takes', () => {
    expect(fusionGrid('rrf', 2)).toEqual(DEFAULT_RRF_KS.map((k) => ({ k })));
    expect(fusionGrid('linear', 2)).toEqual(simplexGrid(2, 0.1).map((weights) => ({ weights })));
    // Weighted RRF with ks: k outer, weights inner.
    expect(fusionGrid('wrrf', 2, { step: 0.5, ks: [20, 60] })).toEqual([
      { k: 20, weights: [1, 0] },
      { k: 20, weights: [0.5, 0.5] },
      { k: 20, weights: [0, 1] },
      { k: 60, weights: [1, 0] },
      { k: 60, weights: [0.5, 0.5] },
      { k: 60, weights: [0, 1] },
    ]);
    expect(fusionGrid('combsum', 3, { normalizations: ['minmax', 'rank'] })).toEqual([
      { normalization: 'minmax' },
      { normalization: 'rank' },
    ]);
    expect(fusionGrid('borda', 2)).toEqual([{}]);
    expect(fusionGrid('borda', 2, { step: 0.5 })).toHaveLength(3);
    expect(fusionGrid('isr', 2, { ks: [1] })).toEqual([{}]);
  });
});

describe('folds', () => {
  const qs = Array.from({ length: 23 }, (_, i) => `q${i}`);

  it('partitions the queries into near-equal folds, by a seeded shuffle', () => {
    const f = assignFolds(qs, 5, 7);
    expect(f.map((x) => x.length)).toEqual([4, 5, 4, 5, 5]);
    expect(f.flat().sort(compareBytes)).toEqual([...qs].sort(compareBytes));
    for (const x of f) expect(x).toEqual([...x].sort(compareBytes));
    // Deterministic for a seed and independent of the input order; another seed differs.
    expect(assignFolds([...qs].reverse(), 5, 7)).toEqual(f);
    expect(assignFolds(qs, 5, 8)).not.toEqual(f);
  });

  it('is Fisher–Yates over the byte order with Xoshiro128', () => {
    // 3 queries a, b, c, seed 1: i = 2 swaps with j = nextInt(3), then i = 1 with nextInt(2).
    const rng = new Xoshiro128(1);
    const ids = ['a', 'b', 'c'];
    for (let i = 2; i > 0; i--) {
      const j = rng.nextInt(i + 1);
      [ids[i], ids[j]] = [ids[j], ids[i]];
    }
    expect(assignFolds(['c', 'a', 'b'], 3, 1)).toEqual(ids.map((q) => [q]));
  });

  it('needs 2 ≤ folds ≤ queries', () => {
    expect(() => assignFolds(qs, 1, 1)).toThrow(/at least 2 folds/);
    expect(() => assignFolds(['a', 'b'], 3, 1)).toThrow(/need at least 3 queries/);
  });
});

/** Two docs per query: `rel` (judged relevant) and `x`. A puts rel first on `aGood` queries, B elsewhere. */
function splitRuns(aGood: string[], bGood: string[]) {
  const A: Run = new Map();
  const B: Run = new Map();
  const qrels: Qrels = new Map();
  const top = [
    { docId: 'rel', score: 2 },
    { docId: 'x', score: 1 },
  ];
  const bottom = [
    { docId: 'rel', score: 1 },
    { docId: 'x', score: 2 },
  ];
  for (const q of aGood) {
    A.set(q, top);
    B.set(q, bottom);
  }
  for (const q of bGood) {
    A.set(q, bottom);
    B.set(q, top);
  }
  for (const q of [...aGood, ...bGood]) qrels.set(q, new Map([['rel', 1]]));
  return { A, B, qrels };
}

describe('tuneFusion', () => {
  it('reports the held-out score, not the (higher) score of tuning on every query', () => {
    // A answers a1..a3 (P_1 = 1) and misses b1, b2; B the reverse. Grid: B alone, then A alone.
    const { A, B, qrels } = splitRuns(['a1', 'a2', 'a3'], ['b1', 'b2']);
    const grid: FusionParams[] = [{ weights: [0, 1] }, { weights: [1, 0] }];
    const base: FusionBase = { method: 'linear' };
    // Tuned on all five queries: B alone P_1 = 2/5, A alone 3/5 → 0.6. This number leaks.
    const inSample = Math.max(
      ...grid.map((g) => evaluate(qrels, fuse([A, B], { ...base, ...g } as FusionOptions), ['P_1']).all.P_1),
    );
    expect(inSample).toBe(0.6);
    // Leave-one-out (5 folds of one query):
    // - holding out a_i: training a, a, b, b → B alone 2/4 = A alone 2/4; the tie keeps the first
    //   (B alone), which misses a_i → 0.
    // - holding out b_j: training a, a, a, b → A alone 3/4 beats 1/4, and A misses b_j → 0.
    // Held-out P_1 = 0. (Choosing with the held-out query in the training set would give 3/5.)
    const r = tuneFusion([A, B], qrels, { fusion: base, grid, measure: 'P_1', folds: 5, seed: 3 });
    expect(r.score).toBe(0);
    expect(r.score).toBeLessThan(inSample);
    expect(evaluate(qrels, r.run, ['P_1']).all.P_1).toBe(0);
    expect(r.tuning.heldOutScore).toBe(0);
    expect([...r.perQuery.values()]).toEqual([0, 0, 0, 0, 0]);
    expect(r.tuning.folds).toHaveLength(5);
    for (const f of r.tuning.folds) {
      expect(f.queries).toHaveLength(1);
      const heldA = f.queries[0].startsWith('a');
      expect(f.params).toEqual(heldA ? { weights: [0, 1] } : { weights: [1, 0] });
      expect(f.trainScore).toBe(heldA ? 0.5 : 0.75);
      expect(f.testScore).toBe(0);
    }
    expect([...r.run.keys()]).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
  });

  it('equals a naive cross-validation that fuses each fold separately', () => {
    // 60 random queries, three runs that agree with the qrels to different degrees.
    const rng = new Xoshiro128(11);
    const runs: Run[] = [new Map(), new Map(), new Map()];
    const qrels: Qrels = new Map();
    for (let q = 0; q < 60; q++) {
      const qid = `q${q}`;
      const rel = new Map<string, number>();
      for (let d = 0; d < 30; d++) if (rng.nextFloat() < 0.2) rel.set(`d${d}`, 1 + rng.nextInt(2));
      if (rel.size) qrels.set(qid, rel);
      runs.forEach((r, s) => {
        const docs = [];
        for (let d = 0; d < 30; d++) {
          if (rng.nextFloat() < 0.3) continue;
          const signal = rel.has(`d${d}`) ? (s + 1) * 0.3 : 0;
          docs.push({ docId: `d${d}`, score: Math.round((rng.nextFloat() + signal) * 8) / 8 });
        }
        r.set(qid, docs);
      });
    }
    const cases: { base: FusionBase; grid: FusionParams[]; measure: string }[] = [
      {
        base: { method: 'linear', depth: 20 },
        grid: fusionGrid('linear', 3, { step: 0.5 }),
        measure: 'ndcg_cut_5',
      },
      { base: { method: 'rrf' }, grid: fusionGrid('rrf', 3, { ks: [0, 5, 60] }), measure: 'map' },
      {
        base: { method: 'combmnz' },
        grid: fusionGrid('combmnz', 3, { normalizations: ['minmax', 'zscore', 'rank'] }),
        measure: 'recip_rank',
      },
      // P_10 on lists of about 30 docs: the tuning runs are cut to 10 docs without a heap.
      { base: { method: 'condorcet' }, grid: fusionGrid('condorcet', 3, { step: 0.5 }), measure: 'P_10' },
    ];
    for (const { base, grid, measure } of cases) {
      const r = tuneFusion(runs, qrels, { fusion: base, grid, measure, folds: 4, seed: 5 });
      const only = (qs: string[]) => runs.map((run) => new Map(qs.map((q) => [q, run.get(q)!])));
      const qrelsOnly = (qs: string[]) => new Map(qs.map((q) => [q, qrels.get(q)!]));
      const all = [...qrels.keys()].sort(compareBytes);
      const expected: Run = new Map();
      r.tuning.folds.forEach((fold, f) => {
        const train = all.filter((q) => !fold.queries.includes(q));
        let best = -1;
        let bestScore = -Infinity;
        grid.forEach((g, gi) => {
          const opts = { ...base, ...g } as FusionOptions;
          const s = evaluate(qrelsOnly(train), fuse(only(train), opts), [measure]).all[measure];
          if (s > bestScore) [best, bestScore] = [gi, s];
        });
        expect(fold.params, `${measure} fold ${f}`).toEqual(grid[best]);
        expect(fold.trainScore, `${measure} fold ${f}`).toBe(bestScore);
        const held = fuse(only(fold.queries), { ...base, ...grid[best] } as FusionOptions);
        expect(fold.testScore).toBe(evaluate(qrelsOnly(fold.queries), held, [measure]).all[measure]);
        for (const [q, docs] of held) expected.set(q, docs);
      });
      expect(r.run).toEqual(new Map([...expected].sort((a, b) => compareBytes(a[0], b[0]))));
      expect(r.score).toBe(evaluate(qrels, r.run, [measure]).all[measure]);
    }
  });

  it('records folds and per-fold parameters in the descriptor and the stored configuration', () => {
    const { A, B, qrels } = splitRuns(['a1', 'a2', 'a3'], ['b1', 'b2']);
    const base: FusionBase = { method: 'linear', normalization: 'minmax' };
    const grid = fusionGrid('linear', 2, { step: 0.5 });
    const ticks: number[][] = [];
    const r = tuneFusion([A, B], qrels, {
      fusion: base,
      grid,
      gridSpec: { step: 0.5 },
      measure: 'ndcg_cut_10',
      folds: 2,
      onProgress: (done, total) => ticks.push([done, total]),
    });
    expect(ticks).toEqual(grid.map((_, i) => [i + 1, grid.length]));
    const d = describeFusion(base, ['bm25', 'dense'], r.tuning);
    expect(d.weights).toBeUndefined();
    expect(d.normalization).toBe('minmax');
    expect(d.tuning!.seed).toBe(42);
    expect(d.tuning!.grid).toEqual(grid);
    expect(d.tuning!.gridSpec).toEqual({ step: 0.5 });
    expect(
      d
        .tuning!.folds.map((f) => f.queries)
        .flat()
        .sort(),
    ).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    expect(fusionLabel(d)).toBe('Linear minmax 2-fold CV ndcg_cut_10 seed 42');
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
    const c = fusionConfig(d, ['id1', 'id2']);
    expect(c.tuning).toEqual(r.tuning);
    expect(fusionDescriptorOf(c, ['bm25', 'dense'])).toEqual(d);
    // Each query's options are its fold's: fusing that query alone with them gives the stored docs.
    for (const fold of r.tuning.folds)
      for (const q of fold.queries) {
        const o = fusionOptionsFor(d, q)!;
        expect(o).toEqual({
          method: 'linear',
          depth: 1000,
          normalization: 'minmax',
          weights: fold.params.weights,
        });
        const one = [A, B].map((run) => new Map([[q, run.get(q)!]]));
        expect(fuse(one, o).get(q)).toEqual(r.run.get(q));
      }
    expect(fusionOptionsFor(d, 'not-a-query')).toBeNull();
  });

  it('rejects measures without a per-query mean, empty grids and too many folds', () => {
    const { A, B, qrels } = splitRuns(['a1', 'a2'], ['b1']);
    const t = (o: Partial<Parameters<typeof tuneFusion>[2]>) => () =>
      tuneFusion([A, B], qrels, {
        fusion: { method: 'rrf' },
        grid: [{ k: 60 }],
        measure: 'map',
        folds: 2,
        ...o,
      });
    expect(t({ measure: 'num_rel_ret' })).toThrow(/no per-query mean/);
    expect(t({ measure: 'gm_map' })).toThrow(/no per-query mean/);
    expect(t({ measure: 'nope' })).toThrow(/unknown measure/);
    expect(t({ grid: [] })).toThrow(/grid is empty/);
    expect(t({ folds: 4 })).toThrow(/need at least 4 queries/);
    expect(t({ grid: [{ weights: [1, 1] }], fusion: { method: 'isr' } })).toThrow(/takes no weights/);
  });

  it('with complete (trec_eval -c), judged queries no run answers are held out too and score 0', () => {
    const { A, B, qrels } = splitRuns(['a1', 'a2', 'a3'], ['b1']);
    qrels.set('z', new Map([['rel', 1]]));
    const r = tuneFusion([A, B], qrels, {
      fusion: { method: 'rrf' },
      grid: [{ k: 60 }],
      measure: 'P_1',
      folds: 5,
      evalOptions: { complete: true },
    });
    // RRF k = 60, equal weights: rel and x both get 1/61 + 1/62 → tie → x first (docno descending):
    // P_1 = 0 on the four answered queries, and z (no results) scores 0: held-out P_1 = 0 over 5.
    expect(r.tuning.folds.flatMap((f) => f.queries).sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'z']);
    expect(r.perQuery.size).toBe(5);
    expect(r.score).toBe(0);
    expect(r.tuning.complete).toBe(true);
  });
});
