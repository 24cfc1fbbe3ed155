// Multi-image scoring helpers: paths of an item, run names, and the fused rows of max-sim.
import { describe, expect, it } from 'vitest';
import { fuseFeatures } from '../../src/lib/core/retrieval/dense';
import { corpusEmbeddingKey, type ModelSpec } from '../../src/lib/core/retrieval/models';
import {
  formatRunSpec,
  parseRunSpecs,
  PermalinkError,
  specMatches,
  specOf,
} from '../../src/lib/core/eval/permalink';
import { configKey, describeConfig, runTag, type RetrieverConfig } from '../../src/lib/core/retrieval/runs';
import {
  describeMultiImage,
  fuseDocParts,
  fusedItemRows,
  hasMultiImageItems,
  itemImagePaths,
} from '../../src/lib/core/retrieval/multi-image';

describe('multi-image items', () => {
  it('lists an item’s images in order', () => {
    expect(itemImagePaths({ image: 'a.jpg' })).toEqual(['a.jpg']);
    expect(
      itemImagePaths({ image: 'a.jpg', images: [{ path: 'a.jpg' }, { path: 'b.jpg', role: 'lateral' }] }),
    ).toEqual(['a.jpg', 'b.jpg']);
    expect(itemImagePaths({})).toEqual([]);
    expect(hasMultiImageItems([{}, { images: [{ path: 'a' }] }])).toBe(false);
    expect(hasMultiImageItems([{ images: [{ path: 'a' }, { path: 'b' }] }])).toBe(true);
    expect(describeMultiImage('max')).toBe('images max-sim');
    expect(describeMultiImage('mean')).toBe('images mean');
    expect(describeMultiImage(undefined)).toBe('');
  });

  it('fuses every image row with its document’s text; text-only documents keep one row; empty ones none', () => {
    const dim = 2;
    // Doc 0: text + 2 images; doc 1: text only; doc 2: nothing; doc 3: 1 image, no text.
    const text = Float32Array.from([1, 0, 0, 1, 0, 0, 0, 0]);
    const textMissing = Uint8Array.from([0, 0, 1, 1]);
    const imageRows = Float32Array.from([0, 1, 1, 1, 3, 4]);
    const imageRowDoc = Uint32Array.from([0, 0, 3]);
    const { rows, rowDoc } = fusedItemRows(text, textMissing, imageRows, imageRowDoc, 4, dim);
    expect([...rowDoc]).toEqual([0, 0, 1, 3]);
    const row = (i: number) => [...rows.subarray(i * dim, (i + 1) * dim)];
    expect(row(0)).toEqual([...fuseFeatures([1, 0], [0, 1])]);
    expect(row(1)).toEqual([...fuseFeatures([1, 0], [1, 1])]);
    expect(row(2)).toEqual([0, 1]);
    expect(row(3)).toEqual([3, 4]);
    expect(() => fusedItemRows(text, textMissing, imageRows, Uint32Array.from([0]), 4, dim)).toThrow(
      /3 image rows for 1/,
    );
  });
});

describe('a corpus of text and image parts as one matrix', () => {
  const dim = 2;
  const ids = ['a', 'b', 'c', 'd'];
  // a: text + image; b: text only; c: neither; d: image only.
  const text = { embeddings: Float32Array.from([1, 0, 0, 1, 0, 0, 0, 0]), missing: ['c', 'd'] };
  const row = (m: Float32Array, i: number) => [...m.subarray(i * dim, (i + 1) * dim)];

  it('fuses each document’s two vectors, keeps the one it has, and names those with none', () => {
    const image = { embeddings: Float32Array.from([0, 1, 0, 0, 0, 0, 3, 4]), missing: ['b', 'c'] };
    const { matrix, missing, rowDoc } = fuseDocParts(ids, dim, text, image);
    expect(rowDoc).toBeUndefined();
    expect(missing).toEqual(['c']);
    expect(row(matrix, 0)).toEqual([...fuseFeatures([1, 0], [0, 1])]);
    expect(row(matrix, 1)).toEqual([0, 1]);
    expect(row(matrix, 2)).toEqual([0, 0]);
    expect(row(matrix, 3)).toEqual([3, 4]);
  });

  it('with every image a row (max-sim), fuses each with its document’s text', () => {
    const image = { embeddings: Float32Array.from([0, 1, 1, 1, 3, 4]), missing: ['b', 'c'] };
    const r = fuseDocParts(ids, dim, text, image, Uint32Array.from([0, 0, 3]));
    expect(r.missing).toEqual(['c']);
    expect([...r.rowDoc!]).toEqual([0, 0, 1, 3]);
    expect(row(r.matrix, 1)).toEqual([...fuseFeatures([1, 0], [1, 1])]);
  });
});

describe('multi-image scoring on runs and permalinks', () => {
  it('round-trips images= in a permalink; a spec matches only runs scored the same way', () => {
    const [spec] = parseRunSpecs('dense(model=m,dtype=fp32,images=max)');
    expect(spec).toMatchObject({ kind: 'dense', images: 'max' });
    expect(parseRunSpecs(formatRunSpec(spec))).toEqual([spec]);
    expect(() => parseRunSpecs('dense(model=m,images=sum)')).toThrow(PermalinkError);
    const [plain] = parseRunSpecs('dense(model=m,dtype=fp32)');
    const base = { kind: 'dense' as const, modelId: 'm', revision: 'main', dtype: 'fp32', device: 'wasm' };
    const max = { ...base, multiImage: 'max' as const };
    const mean = { ...base, multiImage: 'mean' as const };
    expect(specOf(max)).toMatchObject({ images: 'max' });
    expect(specMatches(spec, max)).toBe(true);
    expect(specMatches(spec, mean)).toBe(false);
    expect(specMatches(spec, base)).toBe(false);
    expect(specMatches(plain, base)).toBe(true);
    expect(specMatches(plain, max)).toBe(false);
  });

  it('names the choice in the run description and tag, and keeps mean, max and first apart', () => {
    const base: RetrieverConfig = {
      kind: 'dense',
      modelId: 'm',
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
    };
    const max: RetrieverConfig = { ...base, multiImage: 'max' };
    expect(describeConfig(max)).toContain('images max-sim');
    expect(runTag(max)).toBe('loupe-dense-m-fp32-images_max');
    const keys = new Set(
      [base, max, { ...base, multiImage: 'mean' as const }].map((c) => configKey(c, 't', 100)),
    );
    expect(keys.size).toBe(3);
  });

  it('stores every image under its own embedding key (images=all), text keys unchanged', () => {
    const spec = {
      id: 'm',
      revision: 'main',
      kind: 'clip',
      queryPrefix: '',
      docPrefix: '',
      pooling: 'mean',
      normalize: true,
    } as unknown as ModelSpec;
    const first = corpusEmbeddingKey('h', spec, 'fp32', 'image');
    const all = corpusEmbeddingKey('h', spec, 'fp32', 'image', undefined, true);
    expect(all).toBe(`${first}|images=all`);
    expect(corpusEmbeddingKey('h', spec, 'fp32', 'text', undefined, true)).toBe(
      corpusEmbeddingKey('h', spec, 'fp32', 'text'),
    );
  });
});
