// The vector index end to end in real Chromium: HNSW (hnswlib compiled to wasm with SIMD by
// scripts/build-wasm.sh) built in the index worker over seeded clustered vectors, persisted in
// Loupe's IndexedDB, reloaded after a page reload and a browser restart, rebuilt when its stored
// bytes are damaged; exact search on WebGPU (SwiftShader), in wasm and in JS agreeing; recall at the
// defaults; exclusions; cancel during a build.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { INDEX_DEFAULTS } from '../../src/lib/clients/index-client';
import type { IndexHarness, PlainKnn } from '../browser/index-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/index-harness.html`;
const N = 4000;
const NQ = 200;
const DIM = 384;
const SEED = 7;
const KEY = 'synthetic-clustered-v1';

/** Calls `window.indexHarness[fn](...args)` in the page. */
const call = harnessCaller<IndexHarness>('indexHarness');

async function open(page: Page, how: 'goto' | 'reload' = 'goto') {
  if (how === 'goto') await page.goto(HARNESS);
  else await page.reload();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  await call(page, 'generate', N, NQ, DIM, SEED);
}

function built<T extends { ok: boolean }>(r: T): Extract<T, { ok: true }> {
  if (!r.ok) throw new Error(`build failed: ${JSON.stringify(r)}`);
  return r as Extract<T, { ok: true }>;
}

/** Rows of a result as [index, score] pairs, for readable diffs. */
const row = (r: PlainKnn, q: number) => r.indices.slice(q * r.k, q * r.k + r.counts[q]);

/** Page errors other than the browser's log line for a 404 (favicon). */
const realErrors = (page: Page) => pageErrors(page).filter((e) => !/Failed to load resource/.test(e));

describe('vector index (HNSW + exact) in Chromium', () => {
  let session: Session;
  let page: Page;
  let shard = '';
  let artifactKey = '';
  let before: PlainKnn;

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await open(page);
    shard = await call(page, 'createShard');
  });

  afterAll(async () => {
    await session?.dispose();
  });

  it('builds in the worker with progress and persists the graph in the shard artifacts', async () => {
    const r = built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
    expect(r).toMatchObject({
      source: 'built',
      cacheMiss: 'no cached index',
      n: N,
      dim: DIM,
      space: 'cosine',
      params: { M: 16, efConstruction: 200, seed: 100 },
      efSearch: 384,
      persisted: true,
    });
    // The worker's defaults are the ones the client documents.
    const { efSearch, ...params } = INDEX_DEFAULTS;
    expect(r).toMatchObject({ params, efSearch });
    artifactKey = r.artifact!.key;
    expect(artifactKey).toBe(`${KEY}|space=cosine|M=16|efC=200`);
    // Progress in batches, ending at N.
    const ticks = r.ticks.filter((t) => t.startsWith('index:'));
    expect(ticks.length).toBeGreaterThan(2);
    expect(ticks.at(-1)).toBe(`index:${N}/${N}`);
    const art = await call(page, 'artifact', shard, artifactKey);
    expect(art?.header).toMatchObject({
      format: 'loupe-hnsw',
      version: 2,
      engine: expect.stringMatching(/^hnswlib 0\.6\.2, wasm SIMD/),
      count: N,
      dim: DIM,
      space: 'cosine',
      M: 16,
      efConstruction: 200,
      seed: 100,
      byteLength: r.bytes,
    });
    expect(art?.header.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(art?.byteLength).toBe(r.bytes);
    before = await call(page, 'search', 10);
    expect(before.counts.every((c) => c === 10)).toBe(true);
  });

  it('reaches recall@10 ≥ 0.99 against exact search at the default efSearch', async () => {
    const held = await call(page, 'recall', 10);
    expect(held.points).toHaveLength(1);
    expect(held.points[0].efSearch).toBe(384);
    expect(held.points[0].recall).toBeGreaterThanOrEqual(0.99);
    // A corpus sample as queries, each excluded from its own results.
    const sample = await call(page, 'recall', 10, [16, 128, 256], false);
    expect(sample.queries).toBe(200);
    const [lo, mid, hi] = sample.points.map((p) => p.recall);
    expect(mid).toBeGreaterThanOrEqual(0.99);
    expect(hi).toBeGreaterThanOrEqual(mid);
    expect(lo).toBeLessThanOrEqual(hi);
    // HNSW scores are exact inner products of the returned ids: they equal the exact path's wherever ids agree.
    const exact = await call(page, 'exact', 10, { backend: 'js' });
    if (!exact.ok) throw new Error(exact.message);
    let same = 0;
    for (let i = 0; i < before.indices.length; i++)
      if (before.indices[i] === exact.indices[i]) {
        expect(before.scores[i]).toBe(exact.scores[i]);
        same++;
      }
    expect(same / before.indices.length).toBeGreaterThanOrEqual(0.99);
  });

  it('loads the stored graph after a page reload: no rebuild, identical results', async () => {
    await open(page, 'reload');
    const r = built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
    expect(r.source).toBe('cache');
    expect(r.timings.addMs).toBeUndefined();
    expect(r.ticks.some((t) => t === 'index:0/4000')).toBe(false);
    expect(await call(page, 'search', 10)).toMatchObject({ indices: before.indices, scores: before.scores });
  });

  it('loads it again after a browser restart with the same profile', async () => {
    const profileDir = session.profileDir;
    await session.close();
    session = await launch({ profileDir });
    page = session.page;
    await open(page);
    const r = built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
    expect(r.source).toBe('cache');
    expect(await call(page, 'search', 10)).toMatchObject({ indices: before.indices, scores: before.scores });
  });

  it('detects damaged or mismatched stored bytes and rebuilds (never trusts them)', async () => {
    const cases = [
      ['flip', /checksum mismatch/],
      ['truncate', /checksum mismatch/],
      ['header', /count is 4001, expected 4000/],
      ['garbage', /malformed/],
    ] as const;
    for (const [how, why] of cases) {
      await call(page, 'corruptArtifact', shard, artifactKey, how);
      const r = built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
      expect(r.source, how).toBe('built');
      expect(r.cacheMiss, how).toMatch(why);
      // Single-threaded hnswlib with the same seed rebuilds the same graph.
      expect(await call(page, 'search', 10)).toMatchObject({
        indices: before.indices,
        scores: before.scores,
      });
      const again = built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
      expect(again.source, how).toBe('cache');
    }
    // Other parameters or other vectors are other indexes, not this one.
    const otherM = built(await call(page, 'build', { key: KEY, shard, space: 'cosine', M: 8 }));
    expect(otherM).toMatchObject({ source: 'built', cacheMiss: 'no cached index' });
    const otherSeed = built(await call(page, 'build', { key: KEY, shard, space: 'cosine', seed: 5 }));
    expect(otherSeed).toMatchObject({ source: 'built', cacheMiss: 'seed is 100, expected 5' });
    await call(page, 'generate', N, NQ, DIM, SEED + 1);
    const otherVectors = built(await call(page, 'build', { key: KEY, shard, space: 'cosine', seed: 5 }));
    expect(otherVectors).toMatchObject({ source: 'built', cacheMiss: 'built from different vectors' });
    await call(page, 'generate', N, NQ, DIM, SEED);
  });

  it('exact search on WebGPU (SwiftShader), in wasm and in JS return the same ids and scores', async () => {
    const probe = await call(page, 'gpuProbe');
    expect(probe).toMatchObject({ ok: true, fallbackAdapter: true });
    built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
    for (const k of [10, 100]) {
      const js = await call(page, 'exact', k, { backend: 'js', nq: 64 });
      // The wasm kernel's candidates are rescored exactly: bit-identical to JS.
      const wasm = await call(page, 'exact', k, { backend: 'wasm', nq: 64 });
      if (!wasm.ok || !js.ok) throw new Error(JSON.stringify(wasm.ok ? js : wasm));
      expect(wasm).toMatchObject({
        backend: 'wasm',
        indices: js.indices,
        scores: js.scores,
        counts: js.counts,
      });
      expect(wasm.wasm?.candidatesPerQuery).toBe(k + 16);
      // The float32 kernel on its own (normally the retry pass) gives the same answer.
      const f32 = await call(page, 'exact', k, { backend: 'wasm', nq: 64, wasmKernel: 'float32' });
      if (!f32.ok) throw new Error(f32.message);
      expect(f32).toMatchObject({ indices: js.indices, scores: js.scores, wasm: { float32Queries: 64 } });
      // One chunk, then four chunks of 1000 documents (the cross-chunk merge).
      for (const maxChunkDocs of [undefined, 1000]) {
        const gpu = await call(page, 'exact', k, { backend: 'webgpu', nq: 64, maxChunkDocs });
        if (!gpu.ok || !js.ok) throw new Error(JSON.stringify(gpu.ok ? js : gpu));
        expect(gpu.backend).toBe('webgpu');
        expect(gpu.fallbackAdapter).toBe(true);
        expect(gpu.gpu?.chunks).toBe(maxChunkDocs ? 4 : 1);
        expect(gpu.gpu!.maxGpuScoreError).toBeLessThan(1e-5);
        expect(gpu.indices).toEqual(js.indices);
        const worst = Math.max(...gpu.scores.map((s, i) => Math.abs(s - js.scores[i])));
        expect(worst).toBeLessThanOrEqual(1e-5);
      }
    }
    // 'auto' does not pick a software adapter (SwiftShader is far slower than the CPU): wasm.
    const auto = await call(page, 'exact', 10, { nq: 4 });
    expect(auto).toMatchObject({ ok: true, backend: 'wasm' });
    if (auto.ok) expect(auto.reason).toMatch(/software WebGPU adapter \(SwiftShader\) — using the CPU/);
  });

  it('orders exact ties trec_eval’s way on every backend (duplicated documents)', async () => {
    // Every vector three times: each query's best score is shared by three documents.
    await call(page, 'generate', 600, 16, 64, 3);
    await page.evaluate(() => window.indexHarness.repeatRows(3));
    const r = built(await call(page, 'build', { key: 'dups', space: 'ip', useDocIds: true }));
    expect(r.n).toBe(1800);
    const js = await call(page, 'exact', 9, { backend: 'js' });
    const gpu = await call(page, 'exact', 9, { backend: 'webgpu', maxChunkDocs: 700 });
    const wasm = await call(page, 'exact', 9, { backend: 'wasm' });
    if (!gpu.ok || !js.ok || !wasm.ok) throw new Error(JSON.stringify([gpu, js, wasm].find((x) => !x.ok)));
    expect(gpu.indices).toEqual(js.indices);
    expect(gpu.scores).toEqual(js.scores);
    expect(wasm.indices).toEqual(js.indices);
    expect(wasm.scores).toEqual(js.scores);
    for (let q = 0; q < 16; q++) {
      const ids = row(js, q);
      // Copies i, i + 600, i + 1200 tie; ids are doc-000000…, so trec_eval order is the highest index first.
      expect(js.scores[q * 9]).toBe(js.scores[q * 9 + 2]);
      expect(ids[0]).toBeGreaterThan(ids[1]);
      expect(ids[1]).toBeGreaterThan(ids[2]);
    }
    await call(page, 'generate', N, NQ, DIM, SEED);
  });

  it('wasm exact search stays exact when its cuts are too close to call: float32 pass, then JS', async () => {
    // Nearly parallel vectors: int16 error bounds exceed the score gaps, float32 ones do not.
    await call(page, 'nearDuplicates', 3000, 40, 96, 0.05);
    built(await call(page, 'build', { key: 'near', space: 'ip', useDocIds: true }));
    const js = await call(page, 'exact', 10, { backend: 'js' });
    const wasm = await call(page, 'exact', 10, { backend: 'wasm' });
    if (!js.ok || !wasm.ok) throw new Error('exact failed');
    expect(wasm).toMatchObject({ indices: js.indices, scores: js.scores });
    expect(wasm.wasm!.float32Queries).toBeGreaterThan(0);
    // Identical rows: every score ties, no cut can be trusted, the JS path answers (tie order by id).
    await call(page, 'nearDuplicates', 500, 8, 96, 0);
    built(await call(page, 'build', { key: 'identical', space: 'ip', useDocIds: true }));
    const js0 = await call(page, 'exact', 10, { backend: 'js' });
    const wasm0 = await call(page, 'exact', 10, { backend: 'wasm' });
    if (!js0.ok || !wasm0.ok) throw new Error('exact failed');
    expect(wasm0).toMatchObject({ indices: js0.indices, scores: js0.scores });
    expect(wasm0.wasm).toMatchObject({ float32Queries: 8, cpuFallbackQueries: 8 });
    expect(row(js0, 0)).toEqual([499, 498, 497, 496, 495, 494, 493, 492, 491, 490]);
    await call(page, 'generate', N, NQ, DIM, SEED);
  });

  it('honours exclusions: over-fetch for short lists, skipped in the graph for long ones, next to queries without any', async () => {
    built(await call(page, 'build', { key: KEY, shard, space: 'cosine' }));
    const nq = 50;
    const top = await call(page, 'exact', 30, { backend: 'js', nq });
    if (!top.ok) throw new Error(top.message);
    // Short lists: each query's exact top 3, except every third query, which has none (those go to
    // the engine in one batch). Long lists: its exact top 30 plus 70 other ids.
    const short = Array.from({ length: nq }, (_, q) => (q % 3 === 0 ? [] : row(top, q).slice(0, 3)));
    const long = Array.from({ length: nq }, (_, q) => [
      ...row(top, q),
      ...Array.from({ length: 70 }, (_, i) => (q * 70 + i * 13) % N),
    ]);
    for (const exclude of [short, long]) {
      const hnsw = await call(page, 'search', 10, undefined, { exclude, nq });
      const js = await call(page, 'exact', 10, { backend: 'js', exclude, nq });
      const gpu = await call(page, 'exact', 10, { backend: 'webgpu', exclude, nq });
      const wasm = await call(page, 'exact', 10, { backend: 'wasm', exclude, nq });
      if (!js.ok || !gpu.ok || !wasm.ok) throw new Error('exact failed');
      expect(gpu.indices).toEqual(js.indices);
      expect(wasm.indices).toEqual(js.indices);
      expect(wasm.scores).toEqual(js.scores);
      let overlap = 0;
      for (let q = 0; q < nq; q++) {
        const banned = new Set(exclude[q]);
        expect(row(hnsw, q).filter((d) => banned.has(d))).toEqual([]);
        expect(row(js, q).filter((d) => banned.has(d))).toEqual([]);
        expect(hnsw.counts[q]).toBe(10);
        const truth = new Set(row(js, q));
        overlap += row(hnsw, q).filter((d) => truth.has(d)).length;
      }
      expect(overlap / (nq * 10)).toBeGreaterThanOrEqual(0.98);
    }
    // Skipping marks nodes deleted for one search only: afterwards the graph answers as before.
    expect(await call(page, 'search', 10)).toMatchObject({ indices: before.indices, scores: before.scores });
  });

  it('cancelling a build terminates the worker, stores nothing, and the next build works', async () => {
    const key = 'cancelled-build';
    // Abort at the first progress tick past 0 (ticks are at most one per 100 ms).
    const r = await call(page, 'build', { key, shard, space: 'cosine', cancelAt: 1 });
    expect(r).toMatchObject({ ok: false, name: 'AbortError' });
    const done = r.ticks.filter((t) => t.startsWith('index:')).map((t) => Number(t.slice(6).split('/')[0]));
    expect(done.some((d) => d > 0 && d < N)).toBe(true);
    expect(Math.max(...done)).toBeLessThan(N);
    expect(await call(page, 'artifact', shard, `${key}|space=cosine|M=16|efC=200`)).toBeNull();
    // A fresh worker; the index it had is gone until built or loaded again.
    expect(await call(page, 'info')).toEqual({ open: false });
    const again = built(await call(page, 'build', { key, shard, space: 'cosine' }));
    expect(again).toMatchObject({ source: 'built', persisted: true });
    expect(realErrors(page)).toEqual([]);
  });
});
