// Reranking a run's top N (src/lib/core/retrieval/rerank.ts): the reranked block, the kept tail, and the score
// scheme that makes trec_eval's re-sorting give exactly the intended order.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rankQuery } from '../../src/lib/core/eval/metrics';
import {
  customModelSpec,
  isCrossEncoder,
  parseRegistry,
  rerankScore,
  supportsPart,
  validateModelSpec,
} from '../../src/lib/core/retrieval/models';
import { describeConfig, runTag } from '../../src/lib/core/retrieval/runs';
import {
  clipWords,
  pairText,
  planRerank,
  rerankList,
  rerankRun,
  type PairScorer,
} from '../../src/lib/core/retrieval/rerank';
import { formatRun, parseRun } from '../../src/lib/core/eval/trec';
import type { Run, ScoredDoc } from '../../src/lib/core/types';

const list = (...pairs: Array<[string, number]>): ScoredDoc[] =>
  pairs.map(([docId, score]) => ({ docId, score }));
const ids = (l: readonly ScoredDoc[]) => l.map((d) => d.docId);
/** The list is already in trec_eval order (so trec_eval keeps it exactly). */
const isTrecOrder = (l: readonly ScoredDoc[]) => expect(rankQuery(l)).toEqual(l);

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number) {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('rerankList', () => {
  const ranked = rankQuery(list(['a', 9], ['b', 8], ['c', 7], ['d', 6], ['e', 5]));

  it('reorders the top N by reranker score and keeps the rest in order below them', () => {
    const out = rerankList(
      ranked,
      3,
      new Map([
        ['a', 0.1],
        ['b', 2.5],
        ['c', -1.25],
      ]),
    );
    expect(ids(out)).toEqual(['b', 'a', 'c', 'd', 'e']);
    // The block keeps the reranker scores; the tail is shifted to start at floor(-1.25) - 1 = -3.
    expect(out.slice(0, 3).map((d) => d.score)).toEqual([2.5, 0.1, -1.25]);
    expect(out.slice(3).map((d) => d.score)).toEqual([-3, -4]);
    isTrecOrder(out);
    // The input is not modified.
    expect(ranked[0]).toEqual({ docId: 'a', score: 9 });
  });

  it('breaks reranker ties as trec_eval does (docno descending)', () => {
    const out = rerankList(
      ranked,
      4,
      new Map([
        ['a', 1],
        ['b', 3],
        ['c', 3],
        ['d', 1],
      ]),
    );
    expect(ids(out)).toEqual(['c', 'b', 'd', 'a', 'e']);
    isTrecOrder(out);
  });

  it('keeps ties of the previous scores below the block in their trec_eval order', () => {
    const tied = rankQuery(list(['x', 5], ['q', 2], ['p', 2], ['r', 2], ['z', 1]));
    expect(ids(tied)).toEqual(['x', 'r', 'q', 'p', 'z']);
    const out = rerankList(tied, 1, new Map([['x', 0.5]]));
    expect(ids(out)).toEqual(['x', 'r', 'q', 'p', 'z']);
    // A constant shift: equal scores stay equal, gaps are kept.
    expect(out.slice(1).map((d) => d.score)).toEqual([-1, -1, -1, -2]);
    isTrecOrder(out);
  });

  it('puts top-N documents without a score after the block, before the documents below N', () => {
    const out = rerankList(
      ranked,
      3,
      new Map([
        ['a', 0],
        ['c', 4],
      ]),
    );
    expect(ids(out)).toEqual(['c', 'a', 'b', 'd', 'e']);
    isTrecOrder(out);
  });

  it('falls back to consecutive integers when a shift would merge scores, and for non-finite scores', () => {
    // Shifting 1 and 0.5 down to about -1e17 would make them equal (doubles there are 16 apart).
    const far = rankQuery(list(['h', 5], ['t1', 1], ['t2', 0.5]));
    const out = rerankList(far, 1, new Map([['h', -1e17]]));
    expect(ids(out)).toEqual(['h', 't1', 't2']);
    expect(out[1].score).toBeLessThan(-1e17);
    expect(out[2].score).toBeLessThan(out[1].score);
    isTrecOrder(out);
    const inf = rankQuery(list(['h', 1], ['u', -Infinity], ['v', -Infinity], ['w', NaN]));
    const o2 = rerankList(inf, 1, new Map([['h', 0.25]]));
    expect(ids(o2)).toEqual(ids(inf));
    expect(o2.slice(1).map((d) => d.score)).toEqual([-1, -2, -3]);
    isTrecOrder(o2);
    // Reranker scores so large that integers are not exact: still strictly below, still in order.
    const big = rerankList(
      rankQuery(list(['a', 3], ['b', 2], ['c', 1], ['d', 0])),
      1,
      new Map([['a', 2 ** 60]]),
    );
    expect(ids(big)).toEqual(['a', 'b', 'c', 'd']);
    isTrecOrder(big);
  });

  it('reranks the whole list when N exceeds it, and leaves it unchanged without scores', () => {
    const all = rerankList(ranked, 100, new Map(ranked.map((d, i) => [d.docId, i])));
    expect(ids(all)).toEqual(['e', 'd', 'c', 'b', 'a']);
    expect(rerankList(ranked, 3, new Map())).toEqual(ranked);
    expect(rerankList([], 3, new Map())).toEqual([]);
  });

  it('rejects a bad N and non-finite reranker scores', () => {
    expect(() => rerankList(ranked, 0, new Map())).toThrow(RangeError);
    expect(() => rerankList(ranked, 2.5, new Map())).toThrow(RangeError);
    expect(() => rerankList(ranked, 2, new Map([['a', NaN]]))).toThrow(/not a finite number/);
  });

  it('random lists with ties: every output is its own trec_eval order, block = scored top N, tail kept', () => {
    const rand = rng(7);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(rand() * 40);
      const docs = list(
        ...Array.from({ length: n }, (_, i): [string, number] => [
          `d${Math.floor(rand() * 1000)}-${i}`,
          // Few distinct values, so many ties; sometimes large or negative.
          Math.floor(rand() * 6) * (trial % 3 === 0 ? 1e6 : trial % 3 === 1 ? -0.1 : 1),
        ]),
      );
      const before = rankQuery(docs);
      const topN = 1 + Math.floor(rand() * (n + 3));
      const scores = new Map<string, number>();
      for (const d of before.slice(0, topN))
        if (rand() < 0.85) scores.set(d.docId, Math.round(rand() * 4) / 2);
      const out = rerankList(before, topN, scores);
      isTrecOrder(out);
      expect(new Set(ids(out))).toEqual(new Set(ids(before)));
      const block = out.slice(0, scores.size);
      if (scores.size > 0) {
        expect(new Set(ids(block))).toEqual(new Set(scores.keys()));
        for (const d of block) expect(d.score).toBe(scores.get(d.docId));
      }
      const rest = before.filter((d) => !scores.has(d.docId) || scores.size === 0);
      expect(ids(out.slice(scores.size))).toEqual(ids(rest));
    }
  });
});

describe('document text for pairs', () => {
  it('joins title and text like the embedding path', () => {
    expect(pairText({ title: 'Asthma', text: 'A chronic disease.' })).toBe('Asthma A chronic disease.');
    expect(pairText({ title: ' ', text: 'Only text' })).toBe('Only text');
    expect(pairText({ title: '', text: '' })).toBe('');
  });

  it('clips a text after its n-th word, keeping the original spacing', () => {
    expect(clipWords('one  two\tthree four', 3)).toBe('one  two\tthree');
    expect(clipWords('one two', 5)).toBe('one two');
    expect(clipWords('  lead , x', 2)).toBe('  lead ,');
    // Words of nothing but combining marks or format characters do not count (they may vanish).
    expect(clipWords('a \u0301 \u200b b c', 2)).toBe('a \u0301 \u200b b');
    // Unicode whitespace separates words.
    expect(clipWords('a\u00a0b\u3000c', 2)).toBe('a\u00a0b');
    expect(clipWords('anything', 0)).toBe('');
  });
});

describe('rerankRun', () => {
  const run: Run = new Map([
    ['q1', list(['a', 3], ['b', 2], ['c', 1], ['d', 0.5])],
    ['q2', list(['e', 1], ['f', 1])],
    ['q3', list(['g', 1])],
  ]);
  const queries: Record<string, string> = { q1: 'chest pain', q2: 'diabetes', q3: '' };
  const docs: Record<string, string> = { a: 'aa', b: 'bbbb', c: 'c', d: 'dd', e: '', f: 'ffffff', g: 'g' };
  /** Longer documents score higher. */
  const byLength: PairScorer = async (_q, cands) => cands.map((c) => c.text.length);

  it('plans the pairs: top N with text, queries without text kept', () => {
    const plan = planRerank(
      run,
      2,
      (q) => queries[q],
      (d) => docs[d],
    );
    expect(plan.pairs).toBe(3);
    expect(plan.queriesWithoutText).toEqual(['q3']);
    expect(plan.docsWithoutText).toBe(1);
    expect(plan.items[1].candidates).toEqual([{ docId: 'f', text: 'ffffff' }]);
  });

  it('scores query by query, reports progress and returns every list in trec_eval order', async () => {
    const seen: string[] = [];
    const progress: Array<[number, number]> = [];
    const r = await rerankRun(run, {
      topN: 3,
      queryText: (q) => queries[q],
      docText: (d) => docs[d],
      score: async (q, c) => {
        seen.push(`${q.id}:${q.text}:${c.map((x) => x.docId).join(',')}`);
        return byLength(q, c);
      },
      onProgress: (done, total) => progress.push([done, total]),
    });
    expect(seen).toEqual(['q1:chest pain:a,b,c', 'q2:diabetes:f']);
    expect(progress).toEqual([
      [0, 4],
      [3, 4],
      [4, 4],
    ]);
    expect(r.pairs).toBe(4);
    expect(ids(r.run.get('q1')!)).toEqual(['b', 'a', 'c', 'd']);
    expect(ids(r.run.get('q2')!)).toEqual(['f', 'e']);
    expect(r.run.get('q3')).toEqual(run.get('q3'));
    expect(r.queriesWithoutText).toEqual(['q3']);
    expect(r.docsWithoutText).toBe(1);
    // Written as a TREC run and read back, trec_eval's order is exactly the reranked order.
    const back = parseRun(formatRun(r.run, 'rr'), 'rr.trec');
    for (const [q, l] of r.run) expect(ids(rankQuery(back.get(q)!))).toEqual(ids(l));
  });

  it('rejects when the scorer rejects (a cancel) or returns the wrong number of scores', async () => {
    const opts = { topN: 2, queryText: (q: string) => queries[q], docText: (d: string) => docs[d] };
    await expect(
      rerankRun(run, {
        ...opts,
        score: async () => {
          throw new DOMException('cancelled', 'AbortError');
        },
      }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    await expect(rerankRun(run, { ...opts, score: async () => [1] })).rejects.toThrow(/returned 1 scores/);
    await expect(rerankRun(run, { ...opts, topN: 0, score: byLength })).rejects.toThrow(RangeError);
  });
});

describe('cross-encoder registry entries', () => {
  const registry = parseRegistry(
    JSON.parse(readFileSync(resolve(import.meta.dirname, '../../models/registry.json'), 'utf8')),
  );
  const rerankers = registry.models.filter(isCrossEncoder);

  it('lists the hub and generated rerankers, valid, one logit each', () => {
    expect(registry.errors).toEqual([]);
    expect(rerankers.map((m) => m.hubId)).toEqual([
      'Xenova/ms-marco-MiniLM-L-6-v2',
      'Xenova/bge-reranker-base',
      'loupe-test/cross-encoder-tiny-random',
      'loupe-test/ms-marco-minilm-l6-random',
    ]);
    for (const m of rerankers) {
      expect(m).toMatchObject({ pooling: 'model', normalize: false, dim: 1 });
      expect(['none', 'sigmoid']).toContain(m.activation);
      // A cross-encoder embeds nothing: dense retrieval must not offer it.
      expect(supportsPart(m, 'text')).toBe(false);
      expect(supportsPart(m, 'image')).toBe(false);
    }
    expect(rerankers.filter((m) => m.local).map((m) => m.id)).toEqual([
      'loupe-test/cross-encoder-tiny-random',
      'loupe-test/ms-marco-minilm-l6-random',
    ]);
    // The embedding models are unaffected.
    expect(registry.models.filter((m) => !isCrossEncoder(m)).every((m) => m.activation === undefined)).toBe(
      true,
    );
  });

  it('rejects inconsistent cross-encoder entries with every reason', () => {
    const base = rerankers[0];
    const r = validateModelSpec({ ...base, pooling: 'cls', normalize: true, activation: 'tanh' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      const text = r.errors.join('\n');
      expect(text).toMatch(/pooling must be "model"/);
      expect(text).toMatch(/normalize must be false/);
      expect(text).toMatch(/needs an activation/);
    }
    expect(validateModelSpec({ ...base, activation: undefined }).ok).toBe(false);
    expect(validateModelSpec({ ...base, dim: 2 }).ok).toBe(false);
    expect(validateModelSpec({ ...base, dim: 2, activation: 'softmax-positive' }).ok).toBe(true);
    expect(validateModelSpec({ ...base, activation: 'softmax-positive' }).ok).toBe(false);
    expect(validateModelSpec({ ...registry.models[0], activation: 'none' }).ok).toBe(false);
    const custom = customModelSpec({ hubId: 'Xenova/ms-marco-TinyBERT-L-2-v2', kind: 'cross-encoder' });
    expect(custom.ok && custom.spec).toMatchObject({
      kind: 'cross-encoder',
      pooling: 'model',
      normalize: false,
      activation: 'none',
      dim: 0,
      verified: false,
    });
  });

  it('applies the activations in double precision', () => {
    const logits = [2, -1, 0.5, 3];
    expect(rerankScore(logits, 0, 1, 'none')).toBe(2);
    expect(rerankScore(logits, 1, 1, 'sigmoid')).toBeCloseTo(1 / (1 + Math.E), 15);
    // Softmax over two logits [0.5, 3]: the probability of the last (positive) label.
    expect(rerankScore(logits, 2, 2, 'softmax-positive')).toBeCloseTo(1 / (1 + Math.exp(-2.5)), 15);
    // Sigmoid is monotone: it ranks as the raw logit does.
    const xs = [-3, -0.5, 0, 0.25, 4];
    const sig = xs.map((_, i) => rerankScore(xs, i, 1, 'sigmoid'));
    expect([...sig].sort((a, b) => a - b)).toEqual(sig);
  });

  it('describes and tags a rerank run', () => {
    const c = {
      kind: 'rerank' as const,
      modelId: 'loupe-test/cross-encoder-tiny-random',
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
      topN: 20,
      input: 'run-1',
    };
    expect(runTag(c)).toBe('loupe-rerank20-loupe-test_cross-encoder-tiny-random-fp32');
    expect(describeConfig(c)).toBe('top 20 reranked by loupe-test/cross-encoder-tiny-random (fp32, wasm)');
  });
});
