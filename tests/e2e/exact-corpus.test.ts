// The index worker's chunked exact corpus (exact search at 1M scale) at small scale in real
// Chromium: 20,000 × 64 seeded clustered vectors in int16 code chunks forced small (1,500 rows, so
// the last chunk is partial and the added pieces straddle chunks), float32 rows in OPFS or in
// memory; ids and scores must equal the JS reference exactly, with exclusions, trec_eval's tie
// order and cuts too close to call; progress ticks arrive per pass; cancel stops it mid-way.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { IndexHarness } from '../browser/index-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/index-harness.html`;
const N = 20_000;
const NQ = 300;
const DIM = 64;
const K = 10;
const CHUNK = 1_500;

const call = harnessCaller<IndexHarness>('indexHarness');

function ok<T extends { ok: boolean }>(r: T): Extract<T, { ok: true }> {
  if (!r.ok) throw new Error(`chunked exact search failed: ${JSON.stringify(r)}`);
  return r as Extract<T, { ok: true }>;
}

describe('chunked exact corpus in the index worker (1M-scale path, small)', () => {
  let session: Session;
  let page: Page;

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    await call(page, 'generate', N, NQ, DIM, 13);
  });

  afterAll(async () => {
    await session?.dispose();
  });

  it('gives the JS reference’s ids and scores with the rows in OPFS, with progress per pass', async () => {
    const ref = await call(page, 'jsExact', K);
    const r = ok(await call(page, 'chunkedExact', K, { chunkRows: CHUNK, store: 'opfs' }));
    expect(r.opened).toMatchObject({ open: true, store: 'opfs', n: 0, chunkRows: CHUNK });
    const chunks = Math.ceil(N / CHUNK);
    expect(r.info).toMatchObject({ open: true, n: N, store: 'opfs', storeMemoryBytes: 0 });
    expect(r.stats).toMatchObject({ chunks, chunkRows: CHUNK, store: 'opfs', candidatesPerQuery: K + 16 });
    // Most candidates could not reach the running k-th score and were never read back.
    expect(r.stats.rescored).toBeLessThan(NQ * chunks * (K + 16));
    expect(r.indices).toEqual(ref.indices);
    expect(r.scores).toEqual(ref.scores);
    expect(r.counts).toEqual(ref.counts);
    // One pass per (query block of 256, chunk); throttled ticks, the last one complete.
    const total = Math.ceil(NQ / 256) * chunks;
    expect(r.ticks.length).toBeGreaterThan(0);
    expect(r.ticks.at(-1)).toBe(`search:${total}/${total}`);
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  it('equals the reference in memory too, with exclusions and trec_eval’s tie order on exact ties', async () => {
    // Every document twice (rows i and i + N/2 identical): each score ties, ids decide.
    await call(page, 'generate', N / 2, NQ, DIM, 17);
    await call(page, 'repeatRows', 2);
    const exclude = Array.from({ length: NQ }, (_, q) =>
      q % 3 === 0 ? [] : Array.from({ length: 1 + (q % 40) }, (_, j) => (q * 131 + j * 977) % N),
    );
    const ref = await call(page, 'jsExact', K, { exclude, useDocIds: true });
    const r = ok(
      await call(page, 'chunkedExact', K, { chunkRows: CHUNK, store: 'memory', exclude, useDocIds: true }),
    );
    expect(r.info).toMatchObject({
      store: 'memory',
      storeMemoryBytes: Math.ceil(N / CHUNK) * CHUNK * DIM * 4,
    });
    expect(r.indices).toEqual(ref.indices);
    expect(r.scores).toEqual(ref.scores);
    // The exclusions are honoured (the reference already checks this; here the worker's own answer).
    for (let q = 0; q < NQ; q++)
      for (const d of exclude[q]) expect(r.indices.slice(q * K, q * K + K)).not.toContain(d);
  });

  it('stays exact when the int16 cuts are too close to call (whole chunks rescored)', async () => {
    await call(page, 'nearDuplicates', 6_000, 40, DIM, 1e-4);
    const ref = await call(page, 'jsExact', K);
    const r = ok(await call(page, 'chunkedExact', K, { chunkRows: CHUNK, store: 'opfs' }));
    expect(r.stats.chunkRescans).toBeGreaterThan(0);
    expect(r.indices).toEqual(ref.indices);
    expect(r.scores).toEqual(ref.scores);
  });

  it('cancel stops a search mid-way: AbortError, a fresh worker without the corpus, then works again', async () => {
    await call(page, 'generate', N, 2_000, DIM, 13);
    const chunks = Math.ceil(N / CHUNK);
    const total = Math.ceil(2_000 / 256) * chunks;
    const r = await call(page, 'chunkedExact', K, { chunkRows: CHUNK, store: 'opfs', cancelAtStep: 1 });
    expect(r).toMatchObject({ ok: false, name: 'AbortError' });
    const done = r.ticks.map((t) => Number(t.split(':')[1].split('/')[0]));
    expect(done.length).toBeGreaterThan(0);
    expect(Math.max(...done)).toBeLessThan(total);
    // The worker was terminated: its corpus went with it.
    expect(await call(page, 'exactCorpusInfo')).toEqual({ open: false });
    const ref = await call(page, 'jsExact', K, { nq: 50 });
    const again = ok(await call(page, 'chunkedExact', K, { chunkRows: CHUNK, store: 'opfs', nq: 50 }));
    expect(again.indices).toEqual(ref.indices);
    expect(again.scores).toEqual(ref.scores);
  });

  it('rejects bad input with clear errors', async () => {
    const r = await call(page, 'badCorpusCalls');
    expect(r).toEqual([
      'no exact corpus: call exactCorpusOpen() first',
      'chunkRows must be a positive integer, got 0',
      'vectors: 6 values is not a multiple of 4',
      'queries: 6 values is not a multiple of 4',
    ]);
  });
});
