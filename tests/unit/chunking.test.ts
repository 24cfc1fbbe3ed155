import { describe, expect, it, test } from 'vitest';
import {
  formatRunSpec,
  parseRunSpecs,
  PermalinkError,
  specMatches,
  specOf,
  type RunSpec,
} from '../../src/lib/core/eval/permalink';
import {
  bestChunkPair,
  checkChunking,
  chunkingFor,
  chunkOffsets,
  chunkWindows,
  describeChunking,
  frameWindow,
  maxPerDoc,
  meanOfChunks,
  rowOwners,
  windowSize,
} from '../../src/lib/core/retrieval/chunking';
import {
  createChunkedIndex,
  createDenseIndex,
  searchDense,
  searchDenseChunked,
} from '../../src/lib/core/retrieval/dense';
import { configKey, describeConfig, runTag, type RetrieverConfig } from '../../src/lib/core/retrieval/runs';
import { corpusEmbeddingKey, type ModelSpec } from '../../src/lib/core/retrieval/models';

const w = (start: number, end: number) => ({ start, end });

describe('chunkWindows', () => {
  it('keeps a text that fits in one window (exact fit and shorter)', () => {
    expect(chunkWindows(126, 126, 32)).toEqual([w(0, 126)]);
    expect(chunkWindows(5, 126, 32)).toEqual([w(0, 5)]);
    expect(chunkWindows(0, 126, 32)).toEqual([w(0, 0)]);
  });

  it('one token over the window gives two windows, the last aligned to the end', () => {
    expect(chunkWindows(127, 126, 32)).toEqual([w(0, 126), w(1, 127)]);
  });

  it('slides by window − overlap over a long text and ends exactly at its end', () => {
    // size 10, overlap 3: stride 7 → starts 0, 7, 14; the last window is [20, 30).
    const ws = chunkWindows(30, 10, 3);
    expect(ws).toEqual([w(0, 10), w(7, 17), w(14, 24), w(20, 30)]);
    for (const x of ws) expect(x.end - x.start).toBe(10);
    // Consecutive windows overlap by at least `overlap` tokens; every token is covered.
    for (let i = 1; i < ws.length; i++) expect(ws[i - 1].end - ws[i].start).toBeGreaterThanOrEqual(3);
    const covered = new Set<number>();
    for (const x of ws) for (let t = x.start; t < x.end; t++) covered.add(t);
    expect(covered.size).toBe(30);
  });

  it('lands exactly on the end when the stride divides the rest (no duplicate last window)', () => {
    // stride 8: starts 0, 8; 8 + 10 = 18 is not < 18, so the last window [8, 18) is the end one.
    expect(chunkWindows(18, 10, 2)).toEqual([w(0, 10), w(8, 18)]);
    expect(chunkWindows(20, 10, 0)).toEqual([w(0, 10), w(10, 20)]);
  });

  it('first is one truncated window', () => {
    expect(chunkWindows(500, 126, 32, 'first')).toEqual([w(0, 126)]);
  });

  it('counts windows of a long case as the formula says', () => {
    const size = 126;
    const overlap = 32;
    for (const n of [127, 200, 220, 221, 500, 1000]) {
      const ws = chunkWindows(n, size, overlap);
      expect(ws.length).toBe(Math.ceil((n - size) / (size - overlap)) + 1);
      expect(ws.at(-1)).toEqual(w(n - size, n));
    }
  });

  it('refuses an overlap as large as the window and bad sizes', () => {
    expect(() => chunkWindows(10, 4, 4)).toThrow(RangeError);
    expect(() => chunkWindows(10, 0, 0)).toThrow(RangeError);
    expect(() => chunkWindows(-1, 4, 0)).toThrow(RangeError);
    expect(() => checkChunking({ aggregate: 'max', overlap: -1 })).toThrow(/overlap/);
    expect(() => checkChunking({ aggregate: 'sum' as 'max', overlap: 1 })).toThrow(/first, mean or max/);
  });
});

describe('framing windows', () => {
  it('puts special tokens and the prefix around every window', () => {
    const ids = [10, 11, 12, 13, 14];
    const frame = { head: [101], tail: [102], prefix: [7] };
    expect(frameWindow(ids, w(1, 4), frame)).toEqual([101, 7, 11, 12, 13, 102]);
    expect(windowSize(128, 2)).toBe(126);
    expect(windowSize(128, 2, 3)).toBe(123);
    expect(() => windowSize(3, 2, 1)).toThrow(/no room/);
  });
});

describe('aggregation', () => {
  it('offsets and owners from counts', () => {
    expect([...chunkOffsets([2, 0, 3])]).toEqual([0, 2, 2, 5]);
    expect([...rowOwners([2, 0, 3])]).toEqual([0, 0, 2, 2, 2]);
  });

  it('mean of chunk vectors, then normalised', () => {
    // text 0: rows (1,0) and (0,1) → mean (0.5, 0.5) → (1/√2, 1/√2); text 1: no rows; text 2: (3,4) → (0.6, 0.8).
    const rows = Float32Array.from([1, 0, 0, 1, 3, 4]);
    const m = meanOfChunks(rows, [2, 0, 1], 2, true);
    expect(m[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(m[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect([m[2], m[3]]).toEqual([0, 0]);
    expect(m[4]).toBeCloseTo(0.6, 6);
    expect(m[5]).toBeCloseTo(0.8, 6);
    // Without normalisation: the plain mean.
    const raw = meanOfChunks(rows, [2, 0, 1], 2, false);
    expect([...raw]).toEqual([0.5, 0.5, 0, 0, 3, 4]);
    expect(() => meanOfChunks(rows, [1, 1], 2, true)).toThrow(RangeError);
  });

  it('max per document over its rows, NaN ignored, accumulating over query chunks', () => {
    const rowDoc = Uint32Array.from([0, 0, 2, 2]);
    const out = maxPerDoc([0.1, 0.7, NaN, 0.2], rowDoc, 3);
    expect(out[0]).toBe(0.7);
    expect(out[1]).toBeNaN();
    expect(out[2]).toBe(0.2);
    maxPerDoc([0.9, 0.1, 0.3, 0.1], rowDoc, 3, out);
    expect([out[0], out[2]]).toEqual([0.9, 0.3]);
  });

  it('best chunk pair names the query chunk and document chunk that matched', () => {
    const q = Float32Array.from([1, 0, 0, 1]); // two query chunks
    const d = Float32Array.from([1, 1, 0, 2, 5, 0]); // three doc chunks
    const best = bestChunkPair(q, d, 2);
    // query 0 · doc 2 and query 1 · doc 1 both have cosine 1: the earlier pair is kept.
    expect([best.query, best.doc]).toEqual([0, 2]);
    expect(best.cosine).toBeCloseTo(1, 9);
    expect(best.all[1][1]).toBeCloseTo(1, 9);
    expect(best.all[0][0]).toBeCloseTo(Math.SQRT1_2, 6);
    const q1 = Float32Array.from([0, 1]);
    expect(bestChunkPair(q1, d, 2)).toMatchObject({ query: 0, doc: 1 });
  });
});

describe('chunked exact search', () => {
  const docIds = ['a', 'b', 'c', 'd'];
  // a: two chunks, b: one, c: none (missing), d: two chunks, one of which equals b's.
  const rowDoc = Uint32Array.from([0, 0, 1, 3, 3]);
  const rows = Float32Array.from([1, 0, 0.6, 0.8, 0, 1, 0, 1, -1, 0]);

  it('scores a document by its best chunk and keeps trec_eval tie order', () => {
    const idx = createChunkedIndex(rows, 2, rowDoc, docIds, { missing: ['c'] });
    const hits = searchDenseChunked(idx, Float32Array.from([0, 1]), 10);
    // b and d tie at 1 (d's first chunk): the larger id ranks first; a's best is 0.8.
    expect(hits.map((h) => h.docId)).toEqual(['d', 'b', 'a']);
    expect(hits[0].score).toBeCloseTo(1, 12);
    expect(hits[2].score).toBeCloseTo(0.8, 6);
    // Exclusions and depth.
    expect(searchDenseChunked(idx, Float32Array.from([0, 1]), 1, { exclude: ['d'] })).toEqual([
      { docId: 'b', score: hits[1].score },
    ]);
  });

  it('a query of several chunks takes the best pair over all of them', () => {
    const idx = createChunkedIndex(rows, 2, rowDoc, docIds);
    const q = Float32Array.from([0, 1, -1, 0]);
    const hits = searchDenseChunked(idx, q, 10);
    expect(hits.map((h) => [h.docId, Math.round(h.score * 1e6) / 1e6])).toEqual([
      ['d', 1],
      ['b', 1],
      ['a', 0.8],
    ]);
  });

  it('one row per document ranks as the single-vector search', () => {
    const vecs = Float32Array.from([0.3, 0.1, 0.5, 0.5, 0.1, 0.9, 0.2, 0.2]);
    const single = createDenseIndex(vecs, 2, docIds);
    const chunked = createChunkedIndex(vecs, 2, Uint32Array.from([0, 1, 2, 3]), docIds);
    const q = Float32Array.from([0.4, 0.6]);
    expect(searchDenseChunked(chunked, q, 10)).toEqual(searchDense(single, q, 10));
  });

  it('refuses rows of unknown documents', () => {
    expect(() => createChunkedIndex(new Float32Array(2), 2, Uint32Array.from([4]), docIds)).toThrow(
      RangeError,
    );
  });
});

describe('run configuration', () => {
  const base: RetrieverConfig = {
    kind: 'dense',
    modelId: 'loupe-test/bert-tiny-random',
    revision: 'main',
    dtype: 'fp32',
    device: 'wasm',
  };
  it('records chunking in the key, tag and description; first is the default (no field)', () => {
    const mean = { ...base, chunking: { aggregate: 'mean' as const, overlap: 32 } };
    const max = { ...base, chunking: { aggregate: 'max' as const, overlap: 32 } };
    const keys = new Set([base, mean, max].map((c) => configKey(c, 't', 100)));
    expect(keys.size).toBe(3);
    expect(runTag(max)).toContain('chunkmax_o32');
    expect(describeConfig(mean)).toContain('chunks mean (overlap 32)');
    expect(describeChunking(undefined)).toBe('');
  });

  it('the corpus embedding key names the chunk overlap (mean and max share chunk vectors; first keeps the old key)', () => {
    const spec = {
      id: 'x',
      revision: 'main',
      queryPrefix: '',
      docPrefix: '',
      pooling: 'mean',
      normalize: true,
    } as ModelSpec;
    const first = corpusEmbeddingKey('h', spec, 'fp32', 'text');
    expect(corpusEmbeddingKey('h', spec, 'fp32', 'text', { aggregate: 'first', overlap: 32 })).toBe(first);
    const a = corpusEmbeddingKey('h', spec, 'fp32', 'text', { aggregate: 'mean', overlap: 32 });
    const b = corpusEmbeddingKey('h', spec, 'fp32', 'text', { aggregate: 'max', overlap: 32 });
    const c = corpusEmbeddingKey('h', spec, 'fp32', 'text', { aggregate: 'max', overlap: 16 });
    expect(a).not.toBe(first);
    expect(a).toBe(b);
    expect(c).not.toBe(b);
    expect(a).toContain('chunks=o32');
  });
});

describe('chunking in permalinks', () => {
  test('chunks and overlap round-trip; first is the default and matches only unchunked runs', () => {
    const spec = parseRunSpecs('dense(model=m,dtype=fp32,chunks=max,overlap=16)')[0] as Extract<
      RunSpec,
      { kind: 'dense' }
    >;
    expect(spec).toMatchObject({ kind: 'dense', chunks: 'max', overlap: 16 });
    expect(parseRunSpecs(formatRunSpec(spec))).toEqual([spec]);
    const [plain] = parseRunSpecs('dense(model=m)');
    expect(formatRunSpec(plain)).not.toContain('chunks');
    expect(() => parseRunSpecs('dense(model=m,chunks=sum)')).toThrow(PermalinkError);
    const base = { kind: 'dense' as const, modelId: 'm', revision: 'main', dtype: 'fp32', device: 'wasm' };
    const max = { ...base, chunking: { aggregate: 'max' as const, overlap: 16 } };
    expect(specOf(max)).toMatchObject({ chunks: 'max', overlap: 16 });
    expect(specMatches(spec, max)).toBe(true);
    expect(specMatches(spec, base)).toBe(false);
    expect(specMatches(plain, max)).toBe(false);
    expect(specMatches(plain, base)).toBe(true);
    expect(specMatches({ ...spec, overlap: 32 }, max)).toBe(false);
  });
});

describe('chunkingFor (what a run can use)', () => {
  const text = { queryParts: ['text' as const], docParts: ['text' as const] };
  const max = { aggregate: 'max' as const, overlap: 32 };
  it('keeps max on a text task with exact search; first and no setting mean no chunking', () => {
    expect(chunkingFor({ chunking: max }, text)).toEqual({ chunking: max, exact: false });
    expect(chunkingFor({ chunking: { aggregate: 'first', overlap: 32 } }, text)).toEqual({ exact: false });
    expect(chunkingFor({}, text)).toEqual({ exact: false });
  });
  it('falls back with a note: max searches exactly instead of HNSW, and averages on image tasks', () => {
    const notes: string[] = [];
    expect(chunkingFor({ chunking: max, ann: {} }, text, notes)).toEqual({ chunking: max, exact: true });
    const img = chunkingFor({ chunking: max }, { queryParts: ['text', 'image'], docParts: ['image'] }, notes);
    expect(img.chunking?.aggregate).toBe('mean');
    expect(notes).toHaveLength(2);
    // Mean keeps one vector per document: HNSW and image tasks are fine.
    expect(chunkingFor({ chunking: { ...max, aggregate: 'mean' }, ann: {} }, text).exact).toBe(false);
    // Nothing to chunk in an image-only task.
    expect(chunkingFor({ chunking: max }, { queryParts: ['image'], docParts: ['image'] })).toEqual({
      exact: false,
    });
  });
});
