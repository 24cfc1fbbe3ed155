// The index worker's compact vector store (int8 codes in memory, float32 rows in OPFS, exact
// rescoring of the top R) at small scale in real Chromium: 20,000 × 64 seeded clustered vectors
// added in pieces; every query's top 10 must equal the exact reference (ids and scores: exactSearch's
// arithmetic over the float32 rows, computed in the page), the two-pass scan must run on the
// relaxed-SIMD nibble kernel (and the first version's full int8 scan, held beside it, must agree),
// and the rescored rows must have been read back from the OPFS file (R rows per query), the low
// plane of the codes from its own OPFS file (only the high plane is held in memory).
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { VectorsHarness } from '../browser/vectors-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/vectors-harness.html`;
const N = 20_000;
const NQ = 40;
const DIM = 64;
const K = 10;
const R = 100;

const call = harnessCaller<VectorsHarness>('vectorsHarness');

describe('compact vector store in the index worker (1M path, small)', () => {
  let session: Session;
  let page: Page;

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    await call(page, 'generate', N, NQ, DIM, K, 11);
  });

  afterAll(async () => {
    await session?.dispose();
  });

  it('gives exact search’s top 10 with the rows in OPFS, reading back only R rows per query', async () => {
    const built = await call(page, 'compactBuild', { store: 'opfs', piece: 3_000 });
    expect(built.opened).toMatchObject({ open: true, store: 'opfs', n: 0, ready: false });
    const W = 32; // bytes per plane row at 64 dimensions: two groups of 32 nibbles
    expect(built.info).toMatchObject({
      open: true,
      n: N,
      ready: true,
      store: 'opfs',
      scan: 'two-pass',
      kernel: 'wasm-relaxed-simd',
      // The high plane only: the low plane went to its own OPFS file.
      codeBytes: N * W,
      lowPlane: 'opfs',
      storeMemoryBytes: 0,
      // Encoding read every row back from the file once.
      bytesRead: N * DIM * 4,
    });
    const r = await call(page, 'compactQueries', K, R);
    expect(r.kernel).toBe('wasm-relaxed-simd');
    expect(r.scan).toBe('two-pass');
    expect(r.candidates).toBe(2000);
    expect(r.store).toBe('opfs');
    expect(r.ids).toEqual(r.refIds);
    expect(r.scores).toEqual(r.refScores);
    expect(r.recall).toBe(1);
    // R rows per query from the OPFS file, in runs of consecutive rows (at most R reads each).
    expect(r.rowsRead).toBe(NQ * R);
    expect(r.reads).toBeGreaterThan(NQ);
    expect(r.reads).toBeLessThanOrEqual(NQ * R);
    expect(r.info).toMatchObject({ bytesRead: N * DIM * 4 + NQ * R * DIM * 4, storeMemoryBytes: 0 });
    // The second pass read each query's 2,000 candidates' low rows (W bytes each) from the file.
    expect(r.info).toMatchObject({ lowBytesRead: NQ * 2000 * W });
    // Closing removes the store (and its file).
    expect(await call(page, 'compactClose')).toEqual({ open: false });
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  it('answers the same with the rows in memory, and with R = k only reorders the int8 top k', async () => {
    const built = await call(page, 'compactBuild', { store: 'memory', piece: 7_000 });
    // The float32 rows and the low plane (32 bytes a row) in memory chunks of 65,536 rows.
    expect(built.info).toMatchObject({
      store: 'memory',
      lowPlane: 'memory',
      storeMemoryBytes: 65_536 * DIM * 4 + 65_536 * 32,
    });
    const r = await call(page, 'compactQueries', K, R);
    expect(r.ids).toEqual(r.refIds);
    expect(r.scores).toEqual(r.refScores);
    const narrow = await call(page, 'compactQueries', K, K);
    expect(narrow.rowsRead).toBe(NQ * K);
    // Every score returned is still exact for its id (rescored), whatever the recall.
    narrow.ids.forEach((ids, q) =>
      ids.forEach((d, j) => {
        const at = r.refIds[q].indexOf(d);
        if (at >= 0) expect(narrow.scores[q][j]).toBe(r.refScores[q][at]);
      }),
    );
    expect(narrow.recall).toBeLessThanOrEqual(1);
    await call(page, 'compactClose');
  });

  it('two-pass kernels give scanNibblesJs’s integers in Chromium, at the largest magnitudes too', async () => {
    for (const W of [16, 32, 192, 256]) {
      const r = await call(page, 'nibbleKernels', 333, W, W);
      expect(r.supported).toBe('wasm-relaxed-simd');
      // The relaxed kernel's int16 lanes: 4 products of at most 15 · qmax per group of W / 16.
      expect(4 * (W / 16) * 15 * r.qmax).toBeLessThanOrEqual(32_767);
      expect(r.qmax).toBe(W === 192 ? 45 : W === 256 ? 34 : 127);
      const top = 2 * W * 15 * r.qmax; // every one of 2W nibbles 15, every query code ±qmax
      expect(r.runs).toEqual([
        { kernel: 'wasm-relaxed-simd', same: true, extremes: [top, -top] },
        { kernel: 'wasm-simd', same: true, extremes: [top, -top] },
      ]);
    }
  });

  it('the full int8 scan held beside the planes (the benchmark’s baseline) gives the same top 10', async () => {
    const built = await call(page, 'compactBuild', { store: 'memory', piece: 5_000, scan: 'both' });
    expect(built.info).toMatchObject({
      scan: 'both',
      kernel: 'wasm-relaxed-simd',
      lowPlane: 'codes',
      codeBytes: N * 64 + 2 * N * 32,
    });
    const two = await call(page, 'compactQueries', K, R, undefined, 'two-pass');
    const full = await call(page, 'compactQueries', K, R, undefined, 'int8');
    expect([two.scan, two.kernel, two.candidates]).toEqual(['two-pass', 'wasm-relaxed-simd', 2000]);
    expect([full.scan, full.kernel, full.candidates]).toEqual(['int8', 'wasm-simd', N]);
    expect(two.ids).toEqual(two.refIds);
    expect(full.ids).toEqual(full.refIds);
    expect(full.scores).toEqual(two.scores);
    await call(page, 'compactClose');
    // A store holding one layout refuses the other scan by name.
    await call(page, 'compactBuild', { store: 'memory', piece: 5_000 });
    await expect(call(page, 'compactQueries', K, R, 1, 'int8')).rejects.toThrow(
      'this compact store holds no codes for the int8 scan (it was opened for two-pass)',
    );
    await call(page, 'compactClose');
  });

  it('says the storage is full when OPFS cannot take the rows, and leaves no file or store behind', async () => {
    // The quota override applies only to an origin whose storage is still unused: a fresh profile.
    const s2 = await launch();
    try {
      const cdp = await s2.context.newCDPSession(s2.page);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: baseUrl, quotaSize: 2_000_000 });
      await s2.page.goto(HARNESS);
      await s2.page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
      await call(s2.page, 'generate', N, 5, DIM, K, 11);
      const message = await call(s2.page, 'compactBuildError', { store: 'opfs', piece: 3_000 });
      expect(message).toMatch(
        /^the browser's storage filled up at row \d+ of the compact vector store: its float32 rows need [\d.]+ [KM]i?B or more in the origin-private file system\. Delete cached shards/,
      );
      expect(await call(s2.page, 'compactClose')).toEqual({ open: false });
      // The file's removal is asynchronous in the worker: wait for it (it never comes if it stays).
      await expect
        .poll(async () => (await call(s2.page, 'opfsFiles')).filter((f) => f.startsWith('loupe-exact-rows-')))
        .toEqual([]);
    } finally {
      await s2.dispose();
    }
  });
});
