import { describe, expect, it } from 'vitest';
import {
  createDenseIndex,
  fuseFeatures,
  fuseScores,
  l2normalize,
  scoreAll,
  searchDense,
  searchFeatureFusion,
  searchScoreFusion,
  topKOfScores,
} from '../../src/lib/core/retrieval/dense';
import {
  embeddingKey,
  customModelSpec,
  parseRegistry,
  validateModelSpec,
} from '../../src/lib/core/retrieval/models';
import { compareUtf8 } from '../../src/lib/core/retrieval/topk';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Seeded PRNG (mulberry32) so the random cases are the same on every run. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function matrix(rows: number[][]): Float32Array {
  return Float32Array.from(rows.flat());
}

/**
 * Brute force written from the definition: every score, sorted by score desc then id desc (trec_eval).
 * Same floating-point operations in the same order as the implementation, so that rows that tie
 * mathematically (scaled copies under cosine) tie here too and only the selection logic is compared.
 */
function reference(
  vectors: Float32Array,
  dim: number,
  ids: string[],
  q: ArrayLike<number>,
  k: number,
  metric: 'cosine' | 'ip',
  exclude: string[] = [],
) {
  const sqrtSumSq = (v: ArrayLike<number>) => Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0));
  const qn = sqrtSumSq(q);
  const all = ids.map((id, i) => {
    const row = Array.from(vectors.subarray(i * dim, (i + 1) * dim));
    const dot = row.reduce((s, x, j) => s + q[j] * x, 0);
    const rn = sqrtSumSq(row);
    return { docId: id, score: metric === 'cosine' ? dot / (qn * rn) : dot, zero: rn === 0 };
  });
  return all
    .filter((d) => !d.zero && !exclude.includes(d.docId))
    .sort((a, b) => b.score - a.score || compareUtf8(b.docId, a.docId))
    .slice(0, k)
    .map(({ docId, score }) => ({ docId, score }));
}

describe('exact dense search', () => {
  const ids = ['d1', 'd2', 'd3', 'd4'];
  const vecs = matrix([
    [1, 0, 0],
    [0, 1, 0],
    [1, 1, 0],
    [-1, 0, 0],
  ]);
  const index = createDenseIndex(vecs, 3, ids);

  it('ranks by cosine with known values', () => {
    const hits = searchDense(index, [2, 0, 0], 4);
    expect(hits.map((h) => h.docId)).toEqual(['d1', 'd3', 'd2', 'd4']);
    expect(hits[0].score).toBeCloseTo(1, 12);
    expect(hits[1].score).toBeCloseTo(Math.SQRT1_2, 12);
    expect(hits[2].score).toBe(0);
    expect(hits[3].score).toBeCloseTo(-1, 12);
  });

  it('ranks by inner product (unnormalised)', () => {
    const hits = searchDense(index, [2, 1, 0], 2, { metric: 'ip' });
    expect(hits).toEqual([
      { docId: 'd3', score: 3 },
      { docId: 'd1', score: 2 },
    ]);
  });

  it('breaks ties by the larger id in UTF-8 order, as trec_eval', () => {
    // Four identical rows: all tie; astral-plane ids sort after U+FFFD in UTF-8 but not in UTF-16.
    const tieIds = ['a', 'b', '\uFFFD', '\u{1F600}'];
    const t = createDenseIndex(
      matrix([
        [1, 0],
        [1, 0],
        [1, 0],
        [1, 0],
      ]),
      2,
      tieIds,
    );
    expect(searchDense(t, [1, 0], 4).map((h) => h.docId)).toEqual(['\u{1F600}', '\uFFFD', 'b', 'a']);
    expect(searchDense(t, [1, 0], 2).map((h) => h.docId)).toEqual(['\u{1F600}', '\uFFFD']);
  });

  it('drops excluded ids, missing rows and zero rows', () => {
    const withZero = createDenseIndex(
      matrix([
        [1, 0],
        [0, 0],
        [0.5, 0.5],
        [0, 1],
      ]),
      2,
      ['a', 'b', 'c', 'd'],
      {
        missing: ['d'],
      },
    );
    const hits = searchDense(withZero, [1, 0], 10, { exclude: ['a', 'unknown-id'] });
    expect(hits.map((h) => h.docId)).toEqual(['c']);
    expect(Number.isNaN(scoreAll(withZero, [1, 0])[1])).toBe(true);
  });

  it('handles k = 0, k larger than the corpus and a zero query', () => {
    expect(searchDense(index, [1, 0, 0], 0)).toEqual([]);
    expect(searchDense(index, [1, 0, 0], 100)).toHaveLength(4);
    expect(searchDense(index, [0, 0, 0], 3)).toEqual([]);
  });

  it('rejects mismatched shapes and duplicate ids', () => {
    expect(() => createDenseIndex(new Float32Array(5), 2, ['a', 'b'])).toThrow(RangeError);
    expect(() => createDenseIndex(new Float32Array(4), 2, ['a', 'a'])).toThrow(/duplicate/);
    expect(() => searchDense(index, [1, 0], 1)).toThrow(/dimensions/);
  });

  it('agrees with a brute-force sort on seeded random data with forced ties', () => {
    const r = rng(42);
    for (const metric of ['cosine', 'ip'] as const) {
      for (let trial = 0; trial < 20; trial++) {
        const n = 50 + Math.floor(r() * 150);
        const dim = 1 + Math.floor(r() * 16);
        const rows: number[][] = [];
        for (let i = 0; i < n; i++) {
          // Every 7th row duplicates an earlier one (exact ties); quantised values make more.
          if (i > 0 && i % 7 === 0) rows.push([...rows[Math.floor(r() * i)]]);
          else rows.push(Array.from({ length: dim }, () => Math.round((r() * 2 - 1) * 4) / 4));
        }
        const ids = Array.from({ length: n }, (_, i) => `doc-${Math.floor(r() * 1e6)}-${i}`);
        const vecs = matrix(rows);
        const idx = createDenseIndex(vecs, dim, ids);
        const q = Array.from({ length: dim }, () => Math.round((r() * 2 - 1) * 4) / 4);
        if (!q.some((x) => x !== 0)) q[0] = 1;
        const exclude = ids.filter(() => r() < 0.05);
        const k = 1 + Math.floor(r() * 30);
        const got = searchDense(idx, q, k, { metric, exclude });
        const want = reference(vecs, dim, ids, q, k, metric, exclude);
        expect(got.map((h) => h.docId)).toEqual(want.map((h) => h.docId));
        got.forEach((h, i) => expect(h.score).toBeCloseTo(want[i].score, 9));
      }
    }
  });
});

describe('fusion', () => {
  it('score fusion is alpha * text + (1 - alpha) * image; a missing side counts 0', () => {
    const f = fuseScores([1, 0.5, NaN, NaN], [0, 0.25, 0.8, NaN], 0.75);
    expect(f[0]).toBeCloseTo(0.75, 12);
    expect(f[1]).toBeCloseTo(0.75 * 0.5 + 0.25 * 0.25, 12);
    expect(f[2]).toBeCloseTo(0.25 * 0.8, 12);
    expect(Number.isNaN(f[3])).toBe(true);
    expect(Array.from(fuseScores([0.3], [0.9], 1))).toEqual([0.3]);
    expect(Array.from(fuseScores([0.3], [0.9], 0))).toEqual([0.9]);
    expect(() => fuseScores([1], [1, 2], 0.5)).toThrow(RangeError);
    expect(() => fuseScores([1], [1], 1.5)).toThrow(RangeError);
  });

  it('score-fused search ranks by the fused cosine', () => {
    const ids = ['a', 'b', 'c'];
    const text = createDenseIndex(
      matrix([
        [1, 0],
        [0, 1],
        [1, 1],
      ]),
      2,
      ids,
    );
    const image = createDenseIndex(
      matrix([
        [0, 1],
        [1, 0],
        [0, 0],
      ]),
      2,
      ids,
      { missing: ['c'] },
    );
    // text query [1,0]: a=1, b=0, c=0.7071; image query [1,0]: a=0, b=1, c missing.
    const hits = searchScoreFusion(text, image, [1, 0], [1, 0], 0.5, 3);
    // a and b tie at 0.5 ('b' > 'a' ranks first); c has no image, so 0.5 * 0.7071 + 0.
    expect(hits.map((h) => h.docId)).toEqual(['b', 'a', 'c']);
    expect(hits[0].score).toBe(hits[1].score);
    expect(hits[1].score).toBeCloseTo(0.5, 12);
    expect(hits[2].score).toBeCloseTo(0.5 * Math.SQRT1_2, 12);
    const other = createDenseIndex(
      matrix([
        [1, 0],
        [0, 1],
        [1, 1],
      ]),
      2,
      ['a', 'c', 'b'],
    );
    expect(() => searchScoreFusion(text, other, [1, 0], [1, 0], 0.5, 3)).toThrow(/same documents/);
  });

  it('feature fusion is the normalised sum of the normalised queries', () => {
    const q = fuseFeatures([3, 0], [0, 10]);
    expect(q[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(q[1]).toBeCloseTo(Math.SQRT1_2, 6);
    const ids = ['x', 'y', 'z'];
    const idx = createDenseIndex(
      matrix([
        [1, 0],
        [0, 1],
        [1, 1],
      ]),
      2,
      ids,
    );
    expect(searchFeatureFusion(idx, [3, 0], [0, 10], 1)[0].docId).toBe('z');
    expect(Array.from(l2normalize([0, 0]))).toEqual([0, 0]);
    expect(() => fuseFeatures([1], [1, 2])).toThrow(RangeError);
  });

  it('topKOfScores ignores NaN and honours exclusions', () => {
    const idx = createDenseIndex(matrix([[1], [1], [1]]), 1, ['p', 'q', 'r']);
    expect(topKOfScores(idx, [0.1, NaN, 0.3], 5, ['r'])).toEqual([{ docId: 'p', score: 0.1 }]);
  });
});

describe('model registry and embedding keys', () => {
  const registry = parseRegistry(
    JSON.parse(readFileSync(resolve(import.meta.dirname, '../../models/registry.json'), 'utf8')),
  );

  it('models/registry.json is valid and lists the required encoders', () => {
    expect(registry.errors).toEqual([]);
    const byHub = new Map(registry.models.map((m) => [m.hubId, m]));
    expect(byHub.get('Xenova/all-MiniLM-L6-v2')).toMatchObject({
      pooling: 'mean',
      dim: 384,
      queryPrefix: '',
    });
    expect(byHub.get('Xenova/bge-small-en-v1.5')).toMatchObject({
      pooling: 'cls',
      dim: 384,
      queryPrefix: 'Represent this sentence for searching relevant passages: ',
      docPrefix: '',
    });
    expect(byHub.get('Xenova/multilingual-e5-small')).toMatchObject({
      pooling: 'mean',
      queryPrefix: 'query: ',
      docPrefix: 'passage: ',
    });
    // Multilingual encoders (issue 11): E5 needs its prefixes; the others take none.
    expect(byHub.get('Xenova/paraphrase-multilingual-MiniLM-L12-v2')).toMatchObject({
      pooling: 'mean',
      dim: 384,
      queryPrefix: '',
      docPrefix: '',
    });
    expect(byHub.get('Xenova/LaBSE')).toMatchObject({
      pooling: 'cls',
      dim: 768,
      queryPrefix: '',
      verified: false,
    });
    expect(byHub.get('Xenova/bge-m3')).toMatchObject({
      pooling: 'cls',
      dim: 1024,
      dtypes: ['q8'],
      verified: false,
    });
    expect(byHub.get('Xenova/clip-vit-base-patch16')).toMatchObject({
      kind: 'clip',
      pooling: 'model',
      dim: 512,
    });
    expect(byHub.get('Xenova/siglip-base-patch16-224')).toMatchObject({ kind: 'siglip', dim: 768 });
    for (const id of ['bert-tiny-random', 'minilm-l6-random', 'clip-tiny-random', 'clip-vit-b16-random'])
      expect(byHub.get(`loupe-test/${id}`)).toMatchObject({ local: true });
  });

  it('rejects inconsistent entries with every reason', () => {
    const r = validateModelSpec({
      ...registry.models[0],
      kind: 'clip',
      pooling: 'mean',
      dim: -1,
      dtypes: [],
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors.join('\n')).toMatch(/pooling must be "model"/);
      expect(r.errors.join('\n')).toMatch(/dim/);
      expect(r.errors.join('\n')).toMatch(/dtypes/);
    }
    expect(validateModelSpec({ ...registry.models[0], hubId: '../etc/passwd' }).ok).toBe(false);
    expect(validateModelSpec({ ...registry.models[0], localPath: 'a/../../b' }).ok).toBe(false);
    expect(parseRegistry({ models: [registry.models[0], registry.models[0]] }).errors).toEqual([
      `${registry.models[0].id}: duplicate id`,
    ]);
  });

  it('fills defaults for a custom entry and accepts a pasted hub URL', () => {
    const r = customModelSpec({ hubId: ' https://huggingface.co/Xenova/gte-small/tree/main ' });
    expect(r.ok && r.spec).toMatchObject({
      hubId: 'Xenova/gte-small',
      revision: 'main',
      kind: 'text',
      pooling: 'mean',
      normalize: true,
      dim: 0,
      verified: false,
    });
    expect(customModelSpec({ hubId: 'not a model' }).ok).toBe(false);
  });

  it('embedding keys are stable and change with every input', () => {
    const base = {
      shardHash: 'abc',
      modelId: 'm',
      revision: 'main',
      dtype: 'fp32',
      queryPrefix: 'query: ',
      docPrefix: 'passage: #|',
      pooling: 'mean' as const,
      normalize: true,
      part: 'text' as const,
    };
    const k = embeddingKey(base);
    expect(k).toBe(
      'emb-v2|shard=abc|model=m@main|dtype=fp32|pool=mean|norm=1|part=text|qp=query%3A%20|dp=passage%3A%20%23%7C',
    );
    expect(k).not.toMatch(/#/);
    const variants = [
      { shardHash: 'abd' },
      { modelId: 'n' },
      { revision: 'v2' },
      { dtype: 'q8' },
      { queryPrefix: '' },
      { docPrefix: '' },
      { pooling: 'cls' as const },
      { normalize: false },
      { part: 'image' as const },
      { maxTokens: 77 },
    ];
    const keys = new Set([k, ...variants.map((v) => embeddingKey({ ...base, ...v }))]);
    expect(keys.size).toBe(variants.length + 1);
  });
});
