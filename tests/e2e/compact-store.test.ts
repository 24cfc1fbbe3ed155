// The index worker's compact vector store (int8 codes in memory, float32 rows in OPFS, exact
// rescoring of the top R) at small scale in real Chromium: 20,000 × 64 seeded clustered vectors
// added in pieces; every query's top 10 must equal the exact reference (ids and scores: exactSearch's
// arithmetic over the float32 rows, computed in the page), the scan must run on the wasm SIMD
// kernel, and the rescored rows must have been read back from the OPFS file (R rows per query).
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
    const P = 64; // 64 is already a multiple of 16
    expect(built.info).toMatchObject({
      open: true,
      n: N,
      ready: true,
      store: 'opfs',
      kernel: 'wasm-simd',
      codeBytes: N * P,
      storeMemoryBytes: 0,
      // Encoding read every row back from the file once.
      bytesRead: N * DIM * 4,
    });
    const r = await call(page, 'compactQueries', K, R);
    expect(r.kernel).toBe('wasm-simd');
    expect(r.store).toBe('opfs');
    expect(r.ids).toEqual(r.refIds);
    expect(r.scores).toEqual(r.refScores);
    expect(r.recall).toBe(1);
    // R rows per query from the OPFS file, in runs of consecutive rows (at most R reads each).
    expect(r.rowsRead).toBe(NQ * R);
    expect(r.reads).toBeGreaterThan(NQ);
    expect(r.reads).toBeLessThanOrEqual(NQ * R);
    expect(r.info).toMatchObject({ bytesRead: N * DIM * 4 + NQ * R * DIM * 4, storeMemoryBytes: 0 });
    // Closing removes the store (and its file).
    expect(await call(page, 'compactClose')).toEqual({ open: false });
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  it('answers the same with the rows in memory, and with R = k only reorders the int8 top k', async () => {
    const built = await call(page, 'compactBuild', { store: 'memory', piece: 7_000 });
    expect(built.info).toMatchObject({ store: 'memory', storeMemoryBytes: 65_536 * DIM * 4 });
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
