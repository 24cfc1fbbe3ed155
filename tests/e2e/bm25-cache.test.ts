// The retrieval worker's BM25 index in Chromium (issue 18 item 3): built from document batches read
// out of IndexedDB (shard-store docBatches), persisted, reused after a reload with the same
// rankings, and rebuilt (never trusted) when the stored snapshot is unreadable. The rankings must
// equal, to the bit, those of the same build in Node over the shard's files.
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DATA_DIR } from '../paths';
import type { Harness, Outcome } from '../browser/harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { bm25Doc, buildBm25Index, searchBm25 } from '../../src/lib/core/retrieval/bm25';
import type { ParsedShard, ScoredDoc } from '../../src/lib/core/types';
import { FsSource } from '../../scripts/lib/fs-source';

const baseUrl = inject('baseUrl');
const call = harnessCaller<Harness>('harness');
/** The worker's artifact key for Anserini's defaults (workers/retrieval.worker.ts paramsKey). */
const KEY = 'bm25:k1=0.9;b=0.4;lossy=1;v3';
const K = 20;

async function open(page: Page, how: 'goto' | 'reload'): Promise<void> {
  if (how === 'goto') await page.goto(`${baseUrl}/tests/browser/harness.html`);
  else await page.reload();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r)}`);
  return r;
}

describe('BM25 index in the retrieval worker (Chromium)', () => {
  let session: Session;
  let page: Page;
  let hash = '';
  let shard: ParsedShard;
  let texts: string[];
  let expected: ScoredDoc[][];

  beforeAll(async () => {
    shard = await readShard(new FsSource(join(DATA_DIR, 'medquad')));
    texts = shard.queries.slice(0, 60).map((q) => q.text);
    const index = await buildBm25Index(shard.docs.map(bm25Doc), {}, { language: shard.manifest.language });
    expected = texts.map((t) => searchBm25(index, t, K));
    session = await launch();
    page = session.page;
    await open(page, 'goto');
    hash = ok(await call(page, 'importUrl', '/shards/medquad/')).summary.hash;
  }, 120_000);

  afterAll(async () => {
    await session?.dispose();
  });

  it('reads the stored documents in batches, in corpus order', async () => {
    const ids = shard.docs.map((d) => d.id);
    for (const per of [1, 2, 10]) {
      const r = await call(page, 'docBatchIds', hash, per);
      expect(r.ok).toBe(true);
      expect(r.batches.map((b) => b.length)).toEqual(
        per === 1 ? [1000, 1000, 1000] : per === 2 ? [2000, 1000] : [3000],
      );
      expect(r.batches.flat()).toEqual(ids);
    }
  });

  it('builds from batches, persists, and reuses the index after a reload with identical scores', async () => {
    const built = await call(page, 'bm25Prepared', hash, texts, K);
    expect(built.cached).toBe(false);
    expect(built.indexedDocs).toBe(3000);
    expect(built.hits).toEqual(expected);
    expect(await call(page, 'getArtifact', hash, 'bm25', KEY)).toMatchObject({
      meta: { format: 'loupe-bm25', version: 3, docCount: 3000 },
      pieces: { sizes: expect.any(Array) },
    });
    // Stored in pieces (platform/storage/bm25-cache.ts), no copy of the index in one record.
    expect(await call(page, 'getArtifact', hash, 'bm25', KEY)).not.toHaveProperty('buffers');
    // In pieces of 4,096 bytes: every piece stored, read back to the same bytes; a head-less set is none.
    const p = await call(page, 'bm25Pieces', hash, KEY, 4096);
    expect(p.same).toBe(true);
    expect(p.headless).toBe(true);
    expect(p.pieces).toBe(p.sizes.reduce((s, n) => s + Math.ceil(n / 4096), 0));
    expect(p.pieces).toBeGreaterThan(20);

    await open(page, 'reload');
    const reused = await call(page, 'bm25Prepared', hash, texts, K);
    expect(reused.cached).toBe(true);
    expect(reused.hits).toEqual(expected);
  }, 120_000);

  it('rebuilds, with the same scores, when a stored piece of the index is damaged', async () => {
    expect((await call(page, 'putArtifact', hash, 'bm25-piece', `${KEY}#6.0`, 'not bytes')).ok).toBe(true);
    await open(page, 'reload');
    const rebuilt = await call(page, 'bm25Prepared', hash, texts, K);
    expect(rebuilt.cached).toBe(false);
    expect(rebuilt.hits).toEqual(expected);
  }, 120_000);

  it('rebuilds, with the same scores, when the stored index is unreadable', async () => {
    expect(
      (await call(page, 'putArtifact', hash, 'bm25', KEY, { meta: { format: 'loupe-bm25', version: 2 } })).ok,
    ).toBe(true);
    await open(page, 'reload');
    const rebuilt = await call(page, 'bm25Prepared', hash, texts, K);
    expect(rebuilt.cached).toBe(false);
    expect(rebuilt.hits).toEqual(expected);
    await open(page, 'reload');
    expect((await call(page, 'bm25Prepared', hash, texts.slice(0, 1), K)).cached).toBe(true);
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  }, 120_000);

  it('drops a shard whose stored documents were changed, naming the chunk', async () => {
    await call(page, 'tamperDoc', hash, 2);
    const r = await call(page, 'docBatchIds', hash, 1);
    expect(r.ok).toBe(false);
    expect(r.batches.map((b) => b.length)).toEqual([1000, 1000]);
    expect(r).toMatchObject({
      name: 'StaleCacheError',
      message: expect.stringMatching(/chunk 2 does not match its checksum/),
    });
    expect((await call(page, 'list')).map((s) => s.hash)).not.toContain(hash);
  });
});
