// Precomputed corpus embeddings in a shard: index and sidecar parsing, the check of every set
// against the shard's documents, float16 round trips, and the check against the chosen model.
import { describe, expect, it } from 'vitest';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import {
  PRECOMPUTED_FORMAT,
  PRECOMPUTED_INDEX,
  parsePrecomputedIndex,
  precomputedMismatch,
  readPrecomputed,
  setBits,
  writeNpyF16,
  type PrecomputedSidecar,
} from '../../src/lib/core/shard/precomputed';
import { f16ToF32, parseNpy } from '../../src/lib/core/shard/vector-files';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';

const docs = [
  { id: 'd1', title: 'a', text: 'alpha' },
  { id: 'd2', title: '', text: '', image: 'images/x.jpg' },
  { id: 'd3', title: 'c', text: 'gamma' },
];
const spec = {
  id: 'loupe-test/bert-tiny-random',
  hubId: 'loupe-test/bert-tiny-random',
  revision: 'main',
  kind: 'text',
  pooling: 'mean',
  normalize: true,
  queryPrefix: '',
  docPrefix: '',
  maxTokens: 128,
  dim: 2,
} as unknown as ModelSpec;

function sidecar(over: Partial<PrecomputedSidecar> = {}): PrecomputedSidecar {
  return {
    format: PRECOMPUTED_FORMAT,
    model_id: spec.id,
    hub_id: spec.hubId,
    revision: 'main',
    dtype: 'fp32',
    part: 'text',
    pooling: 'mean',
    normalize: true,
    query_prefix: '',
    doc_prefix: '',
    max_tokens: 128,
    dim: 2,
    vectors: 'text.npy',
    doc_ids: ['d1', 'd3'],
    missing: ['d2'],
    ...over,
  };
}

function shard(side: unknown, npy: Uint8Array, listable = true) {
  const dir = 'embeddings/loupe-test/bert-tiny-random/fp32/';
  return new MemorySource(
    {
      [PRECOMPUTED_INDEX]: JSON.stringify({
        format: PRECOMPUTED_FORMAT,
        sets: [{ model_id: spec.id, dtype: 'fp32', path: 'loupe-test/bert-tiny-random/fp32/' }],
      }),
      [`${dir}sidecar-text.json`]: JSON.stringify(side),
      [`${dir}text.npy`]: npy,
    },
    { listable, chunkSize: 7 },
  );
}

const rows = new Float32Array([0.6, 0.8, -1, 0.333]);

describe('precomputed embeddings', () => {
  it('reads a set whose rows are the documents with text, in shard order, as float16', async () => {
    const r = await readPrecomputed(shard(sidecar(), writeNpyF16(rows, 2, 2)), docs);
    expect(r.problems).toEqual([]);
    expect(r.sets).toHaveLength(1);
    const back = Array.from(await setBits(r.sets[0]), f16ToF32);
    back.forEach((v, i) => expect(v).toBeCloseTo(rows[i], 3));
    expect(parseNpy(writeNpyF16(rows, 2, 2)).sourceDtype).toBe('f16');
  });

  it('a shard without embeddings/ has no sets and no problems', async () => {
    expect(await readPrecomputed(new MemorySource({}), docs)).toEqual({ sets: [], problems: [] });
  });

  it('a shard read over HTTP (no listing) is asked for embeddings/index.json only when shard.json names it', async () => {
    const remote = shard(sidecar(), writeNpyF16(rows, 2, 2), false);
    expect(await readPrecomputed(remote, docs)).toEqual({ sets: [], problems: [] });
    expect(remote.opens.get(PRECOMPUTED_INDEX)).toBeUndefined();
    const named = await readPrecomputed(remote, docs, true);
    expect(named.sets).toHaveLength(1);
    expect(remote.opens.get(PRECOMPUTED_INDEX)).toBe(1);
    const missing = await readPrecomputed(new MemorySource({}, { listable: false }), docs, true);
    expect(missing.sets).toEqual([]);
    expect(missing.problems[0]).toMatch(/shard\.json names embeddings\/index\.json .* no such file/);
  });

  it('names the file and the difference when the rows are not the shard documents', async () => {
    const wrongOrder = await readPrecomputed(
      shard(sidecar({ doc_ids: ['d3', 'd1'] }), writeNpyF16(rows, 2, 2)),
      docs,
    );
    expect(wrongOrder.sets).toEqual([]);
    expect(wrongOrder.problems[0]).toMatch(/sidecar-text\.json: .*different order/);
    const unknown = await readPrecomputed(
      shard(sidecar({ doc_ids: ['d1', 'zz'] }), writeNpyF16(rows, 2, 2)),
      docs,
    );
    expect(unknown.problems[0]).toMatch(/ids not in the shard: "zz"/);
    const shape = await readPrecomputed(
      shard(sidecar({ dim: 4, doc_ids: ['d1', 'd3'] }), writeNpyF16(rows, 2, 2)),
      docs,
    );
    expect(shape.problems[0]).toMatch(/text\.npy: shape \(2, 2\) ≠ \(2, 4\)/);
    const bad = await readPrecomputed(shard({ ...sidecar(), part: 'video' }, writeNpyF16(rows, 2, 2)), docs);
    expect(bad.problems[0]).toMatch(/'part' must be "text" or "image"/);
  });

  it('rejects index paths that leave the embeddings folder', () => {
    expect(() =>
      parsePrecomputedIndex({
        format: PRECOMPUTED_FORMAT,
        sets: [{ model_id: 'm', dtype: 'fp32', path: '../x/' }],
      }),
    ).toThrow(/relative folder/);
  });

  it('fits only the same model, revision, dtype, pooling, prefixes, truncation and dimension', () => {
    expect(precomputedMismatch(sidecar(), spec, 'fp32', 2)).toEqual([]);
    expect(precomputedMismatch(sidecar(), spec, 'q8', 2)).toEqual(['dtype "fp32" ≠ "q8"']);
    expect(precomputedMismatch(sidecar({ query_prefix: 'query: ' }), spec, 'fp32', 2)).toEqual([
      'query prefix "query: " ≠ ""',
    ]);
    expect(precomputedMismatch(sidecar({ revision: 'abc' }), { ...spec, pooling: 'cls' }, 'fp32', 2)).toEqual(
      ['revision "abc" ≠ "main"', 'pooling "mean" ≠ "cls"'],
    );
  });
});
