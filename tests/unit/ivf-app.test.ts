// The packed IVF index as the app finds and reports it: a sidecar naming `ivf-<part>.bin` in a shard
// read over HTTP gives the index's URLs and its .npy is never opened (a folder or zip reads the .npy
// as before); `npm run pack-ivf`'s writer names the index in the sidecar; a run's bytes per query
// are summed and worded; the cache folder key; the run's identity leaves the measured bytes out.
import { mkdtempSync, readFileSync, rmSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import {
  PRECOMPUTED_FORMAT,
  PRECOMPUTED_INDEX,
  parsePrecomputedSidecar,
  readPrecomputed,
  writeNpyF16,
} from '../../src/lib/core/shard/precomputed';
import {
  describeIvfQuery,
  describeIvfRun,
  ivfBytes,
  ivfRunInfo,
} from '../../src/lib/core/retrieval/ivf-report';
import { ivfCacheKey } from '../../src/lib/core/retrieval/ivf-cache-key';
import { configKey, describeConfig, runTag, type RetrieverConfig } from '../../src/lib/core/retrieval/runs';
import { writeIvfFixture } from '../../scripts/lib/ivf-fixture';
import { packIvf } from '../../scripts/lib/pack-ivf';

const MODEL = 'loupe-test/bert-tiny-random';
const DIR = `embeddings/${MODEL}/fp32/`;
const docs = [
  { id: 'd1', text: 'alpha' },
  { id: 'd2', text: 'beta' },
];
const sidecar = (over: Record<string, unknown> = {}) => ({
  format: PRECOMPUTED_FORMAT,
  model_id: MODEL,
  hub_id: MODEL,
  revision: 'main',
  dtype: 'fp32',
  part: 'text',
  pooling: 'mean',
  normalize: true,
  query_prefix: '',
  doc_prefix: '',
  dim: 2,
  vectors: 'text.npy',
  doc_ids: ['d1', 'd2'],
  missing: [],
  ...over,
});
const shard = (side: unknown, listable = false) =>
  new MemorySource(
    {
      [PRECOMPUTED_INDEX]: JSON.stringify({
        format: PRECOMPUTED_FORMAT,
        sets: [{ model_id: MODEL, dtype: 'fp32', path: `${MODEL}/fp32/` }],
      }),
      [`${DIR}sidecar-text.json`]: JSON.stringify(side),
      [`${DIR}text.npy`]: writeNpyF16(new Float32Array([1, 0, 0, 1]), 2, 2),
    },
    { listable },
  );
const href = (p: string) => new URL(p.split('/').map(encodeURIComponent).join('/'), 'https://host/c/s/').href;

describe('a packed index named by a sidecar', () => {
  it('over HTTP: the URLs of the index and the .npy, which is not read', async () => {
    const src = shard(sidecar({ ivf: 'ivf-text.bin' }));
    const r = await readPrecomputed(src, docs, true, href);
    expect(r.problems).toEqual([]);
    expect(r.sets).toEqual([]);
    expect(r.ivf).toHaveLength(1);
    expect(r.ivf![0]).toMatchObject({
      ivfUrl: 'https://host/c/s/embeddings/loupe-test/bert-tiny-random/fp32/ivf-text.bin',
      vectorsUrl: 'https://host/c/s/embeddings/loupe-test/bert-tiny-random/fp32/text.npy',
    });
    expect(r.ivf![0].sidecar.doc_ids).toEqual(['d1', 'd2']);
    expect(src.opens.get(`${DIR}text.npy`)).toBeUndefined();
  });

  it('a folder or zip (no URLs) reads the .npy as before and reports no index', async () => {
    const src = shard(sidecar({ ivf: 'ivf-text.bin' }), true);
    const r = await readPrecomputed(src, docs);
    expect(r.sets).toHaveLength(1);
    expect(r.ivf).toBeUndefined();
    expect(src.opens.get(`${DIR}text.npy`)).toBe(1);
  });

  it('a sidecar without an index over HTTP: the .npy, as before', async () => {
    const r = await readPrecomputed(shard(sidecar()), docs, true, href);
    expect(r.sets).toHaveLength(1);
    expect(r.ivf).toBeUndefined();
  });

  it('names the file when `ivf` is not a .bin beside the sidecar', () => {
    for (const bad of ['../x.bin', 'ivf.npy', 7])
      expect(() => parsePrecomputedSidecar(sidecar({ ivf: bad }), 'sidecar-text.json')).toThrow(
        /sidecar-text\.json: .*'ivf' must be a \.bin file name beside the sidecar/,
      );
  });

  it('packIvf writes the index, then names it in the sidecar (nothing left half-written)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-ivf-unit-'));
    try {
      const fx = writeIvfFixture(dir, 600, 16, 1);
      const folder = join(dir, fx.setPath);
      const r = packIvf(folder, 'text', { nlist: 8, seed: 3 });
      expect(r).toMatchObject({ n: 600, dim: 16, nlist: 8 });
      const side = JSON.parse(readFileSync(join(folder, 'sidecar-text.json'), 'utf8'));
      expect(side.ivf).toBe('ivf-text.bin');
      expect(parsePrecomputedSidecar(side, 'sidecar-text.json').ivf).toBe('ivf-text.bin');
      expect(existsSync(join(folder, 'ivf-text.bin'))).toBe(true);
      expect(readdirSync(folder).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      // No image part: nothing packed, sidecar untouched.
      expect(packIvf(folder, 'image')).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what a packed-index run cost', () => {
  const q = (bytes: number, fetched: number, cached: number) => ({
    bytes,
    requests: fetched ? fetched + 2 : 0,
    listsFetched: fetched,
    listsCached: cached,
    listsEmpty: 0,
    rowsFetched: fetched * 3,
    rowsCached: 0,
  });
  const index = { n: 3000, nlist: 48, nprobe: 16, rerank: 40, cache: 'opfs' as const };

  it('sums bytes, lists and requests; the median per query', () => {
    const info = ivfRunInfo([q(1000, 16, 0), q(0, 0, 16), q(3000, 4, 12)], index);
    expect(info).toMatchObject({
      queries: 3,
      totalBytes: 4000,
      medianBytes: 1000,
      maxBytes: 3000,
      requests: 24,
      listsProbed: 48,
      listsFetched: 20,
      rowsFetched: 60,
    });
    expect(ivfRunInfo([q(10, 1, 0), q(30, 1, 0)], index).medianBytes).toBe(20);
    expect(ivfRunInfo([], index)).toMatchObject({ queries: 0, totalBytes: 0, medianBytes: 0, maxBytes: 0 });
  });

  it('words it for the Search line and the Benchmark details', () => {
    expect(ivfBytes(512)).toBe('512 B');
    expect(ivfBytes(1536)).toBe('1.5 KiB');
    expect(ivfBytes(3 * 2 ** 20)).toBe('3.00 MiB');
    expect(describeIvfQuery(ivfRunInfo([q(1536, 12, 4)], index))).toBe(
      'IVF: 1.5 KiB fetched, 12 of 16 lists from the network (4 cached), 36 rows fetched for rescoring',
    );
    const lines = describeIvfRun(ivfRunInfo([q(1000, 16, 0), q(0, 0, 16)], index));
    expect(lines[0]).toBe(
      'Packed IVF index: 3,000 vectors in 48 lists, nprobe 16; int8 codes + exact rescoring of the top 40 (float16 rows).',
    );
    expect(lines[1]).toBe('int8 scores on the CPU.');
    expect(lines[2]).toBe(
      'Transferred: 1000 B for 2 queries (median 500 B, largest 1000 B per query; 18 Range requests).',
    );
    expect(lines[3]).toBe('Lists probed: 32 (16 from the network, 16 from the browser cache (OPFS)).');
  });

  it('says where the int8 codes were scored', () => {
    const gpu = { ...q(1, 1, 0), scoring: { device: 'webgpu' as const } };
    const cpu = { ...q(1, 1, 0), scoring: { device: 'cpu' as const, reason: 'no hardware WebGPU adapter' } };
    expect(describeIvfRun(ivfRunInfo([gpu, gpu], index))[1]).toBe('int8 scores on WebGPU (the WGSL kernel).');
    expect(describeIvfRun(ivfRunInfo([gpu, cpu], index))[1]).toBe(
      'int8 scores on the CPU for 1 of 2 queries (no hardware WebGPU adapter).',
    );
    expect(describeIvfRun(ivfRunInfo([cpu], index))[1]).toBe(
      'int8 scores on the CPU (no hardware WebGPU adapter).',
    );
  });

  it('a run’s identity is the index and nprobe, not what it happened to transfer', () => {
    const base: RetrieverConfig = {
      kind: 'dense',
      modelId: MODEL,
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
    };
    const a = { ...base, ivf: ivfRunInfo([q(1000, 16, 0)], index) };
    const b = { ...base, ivf: ivfRunInfo([q(0, 0, 16)], index) };
    const c = { ...base, ivf: ivfRunInfo([q(0, 0, 16)], { ...index, nprobe: 32 }) };
    expect(configKey(a, 't', 100)).toBe(configKey(b, 't', 100));
    expect(configKey(a, 't', 100)).not.toBe(configKey(c, 't', 100));
    expect(configKey(a, 't', 100)).not.toBe(configKey(base, 't', 100));
    expect(runTag(a)).toBe('loupe-dense-loupe-test_bert-tiny-random-fp32-ivf48_np16');
    expect(describeConfig(a)).toContain('packed IVF-int8 index, 48 lists, nprobe 16');
  });

  it('caches each index URL in its own folder', () => {
    const k = ivfCacheKey('https://host/a/ivf-text.bin');
    expect(k).toMatch(/^[0-9a-f]{16}$/);
    expect(ivfCacheKey('https://host/a/ivf-text.bin')).toBe(k);
    expect(ivfCacheKey('https://host/b/ivf-text.bin')).not.toBe(k);
  });
});
