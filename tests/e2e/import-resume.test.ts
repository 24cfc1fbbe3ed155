// A streamed import stopped by a reload resumes (issue 18), through the app's own controls in real
// Chromium, on a 30,000-document shard made by make-scale-shard in a temporary folder (removed
// afterwards). (a) A URL shard, served with Range, ETag and Last-Modified by a logging server: after the
// reload the page offers "Resume import (n of N documents)"; resumed, the shard is complete and its
// documents, queries and hash equal those of a clean read of the same folder (the shard reader in Node),
// a BM25 run over it equals one over a clean import in another profile (run.trec byte for byte), the
// resumed download started past the beginning (a 206 for bytes=S- with S > 0), and the first pass was
// not run again (no other file fetched). (b) A folder: resumed after picking the same folder again.
// (c) A URL shard changed on the server after the reload is refused with a message naming the file, and
// nothing stays; Discard leaves nothing; a Cancel leaves nothing and nothing to resume; a folder picked
// again whose queries differ is refused the same way.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { launch, pageErrors, phase, type Session } from './browser';
import { idbCounts, ZERO } from './idb-counts';
import { serveRanges, type RangeServer } from './range-server';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
// LOUPE_RESUME_DOCS=100000 measures the resumed and the full import at the 100k rung (BENCHMARKS.md).
const MEASURE = Number(process.env.LOUPE_RESUME_DOCS ?? 0);
const DOCS = MEASURE || 30_000;
const QUERIES = MEASURE ? 1000 : 300;
const PREFIX = '/resume/';
const MIB = 1 << 20;

/** Documents committed by the import in progress, from its resume `progress` record (0: none yet). */
function committedDocs(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const req = indexedDB.open('loupe');
        req.onerror = () => resolve(0);
        req.onsuccess = () => {
          const db = req.result;
          if (!db.objectStoreNames.contains('artifacts')) return (db.close(), resolve(0));
          let docs = 0;
          const tx = db.transaction('artifacts', 'readonly');
          const cur = tx.objectStore('artifacts').openCursor();
          cur.onsuccess = () => {
            const c = cur.result;
            if (!c) return;
            const v = c.value as { kind: string; key: string; value: { docs: number } };
            if (v.kind === 'import-resume' && v.key === 'progress') docs = v.value.docs;
            c.continue();
          };
          tx.oncomplete = () => (db.close(), resolve(docs));
          tx.onerror = () => (db.close(), resolve(0));
        };
      }),
  );
}

/** The cached shard as stored: its hash and counts, and SHA-256 of its document and query chunks. */
function stored(page: Page): Promise<{ hash: string; counts: unknown; docs: string; queries: string }> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((res, rej) => {
      const r = indexedDB.open('loupe');
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const all = <T>(store: string) =>
      new Promise<T[]>((res, rej) => {
        const r = db.transaction(store, 'readonly').objectStore(store).getAll();
        r.onsuccess = () => res(r.result as T[]);
        r.onerror = () => rej(r.error);
      });
    const digest = async (rows: { chunkNo: number; records: unknown[] }[]) => {
      rows.sort((a, b) => a.chunkNo - b.chunkNo);
      const text = rows.map((r) => JSON.stringify(r.records)).join('\n');
      const d = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
      return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
    };
    const shards = await all<{ hash: string; counts: unknown; complete: boolean }>('shards');
    const out = {
      hash: shards.map((s) => s.hash).join(','),
      counts: shards[0]?.counts,
      docs: await digest(await all('docs')),
      queries: await digest(await all('queries')),
    };
    db.close();
    return out;
  });
}

/** The same digests from a clean read of the folder in Node (documents and queries in chunks of 1,000). */
async function reference(dir: string) {
  const parsed = await readShard(new FsSource(dir));
  const digest = (items: unknown[]) => {
    const chunks: string[] = [];
    for (let i = 0; i < items.length; i += 1000) chunks.push(JSON.stringify(items.slice(i, i + 1000)));
    return createHash('sha256').update(chunks.join('\n')).digest('hex');
  };
  let qrels = 0;
  for (const row of parsed.qrels.values()) qrels += row.size;
  return {
    hash: parsed.hash,
    counts: { docs: parsed.docs.length, queries: parsed.queries.length, qrels, images: parsed.images.length },
    docs: digest(parsed.docs),
    queries: digest(parsed.queries),
  };
}

async function loadUrl(page: Page, url: string) {
  await page.fill('[data-testid="url-input"]', url);
  await page.click('[data-testid="url-input"] ~ button');
}

/** Waits until at least `n` documents are committed (and the shard is not), then reloads the page. */
async function reloadMidImport(page: Page, n = 3000) {
  await expect.poll(() => committedDocs(page), { timeout: 240_000, interval: 100 }).toBeGreaterThanOrEqual(n);
  expect((await idbCounts(page)).shards).toBe(0);
  await page.reload();
  await phase(page, 'idle');
}

/** The offer after the reload: its text, and the documents it says were committed. */
async function offer(page: Page, label: string): Promise<number> {
  const box = page.locator('[data-testid="stopped-import"]');
  await box.waitFor({ timeout: 30_000 });
  const text = (await box.textContent()) ?? '';
  const m = /The import of (\S+) stopped at ([\d,]+) of ([\d,]+) documents when the page was reloaded/.exec(
    text,
  );
  expect(m, text).not.toBeNull();
  expect(m![1]).toBe(label);
  expect(m![3]).toBe(DOCS.toLocaleString('en'));
  const done = Number(m![2].replace(/,/g, ''));
  expect(done).toBeGreaterThanOrEqual(3000);
  expect(done).toBeLessThan(DOCS);
  expect(text).toContain(`Resume import (${m![2]} of ${m![3]} documents)`);
  // The stopped import is offered, not reported as lost.
  expect(await page.locator('[data-testid="message"]', { hasText: 'stopped at' }).count()).toBe(0);
  return done;
}

async function jobDone(page: Page) {
  await page.waitForSelector('[data-testid="job"]', { state: 'detached', timeout: 300_000 });
}

/** When the cached shard's commit marker was written (its `cachedAt`, ms since the epoch). */
function committedAt(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve, reject) => {
        const req = indexedDB.open('loupe');
        req.onerror = () => reject(req.error);
        req.onsuccess = () => {
          const r = req.result.transaction('shards', 'readonly').objectStore('shards').getAll();
          r.onsuccess = () => (req.result.close(), resolve((r.result[0] as { cachedAt: number }).cachedAt));
          r.onerror = () => reject(r.error);
        };
      }),
  );
}

const secs = (ms: number) => (ms / 1000).toFixed(1);

/** A BM25 run over the shard at `url` through a run link (imported, or opened from the cache): its run.trec. */
async function bm25Run(page: Page, url: string): Promise<string> {
  const q = new URLSearchParams({ shard: url, task: 'scale-qa', runs: 'bm25(k1=0.9,b=0.4)' });
  await page.goto(`${baseUrl}/?${q}`);
  await phase(page, 'done', 'error');
  expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-run"]')]);
  return readFileSync((await dl.path())!, 'utf8');
}

function realErrors(page: Page): string[] {
  return pageErrors(page).filter((e) => !/Failed to load resource|net::ERR_/.test(e));
}

describe('a streamed import resumes after a reload (issue 18)', () => {
  let dir = '';
  let server: RangeServer;
  let ref: Awaited<ReturnType<typeof reference>>;
  let shardUrl = '';
  beforeAll(async () => {
    mkdirSync(join(ROOT, 'generated-shards'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'generated-shards', 'import-resume-'));
    execFileSync(
      'npx',
      [
        'tsx',
        'scripts/make-scale-shard.ts',
        '--docs',
        String(DOCS),
        '--queries',
        String(QUERIES),
        '--out',
        dir,
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    ref = await reference(dir);
    server = await serveRanges(dir, PREFIX, { validators: true });
    shardUrl = server.url;
  });
  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let s: Session | undefined;
  const open = async () => {
    s = await launch();
    await s.page.goto(`${baseUrl}/#/shards`);
    await phase(s.page, 'idle');
    return s.page;
  };
  const close = async () => {
    await s?.dispose();
    s = undefined;
  };

  it('a URL shard: Resume goes on by a Range request past the start, and the shard equals a clean import', async () => {
    try {
      const page = await open();
      await loadUrl(page, shardUrl);
      await reloadMidImport(page, MEASURE ? DOCS / 2 : 3000);
      const done = await offer(page, shardUrl);
      const mark = server.log.length;
      const t0 = Date.now();
      await page.click('[data-testid="resume-import"]');
      await jobDone(page);
      const t = Date.now();
      console.log(
        `resumed from ${done} of ${DOCS} documents: committed in ${secs((await committedAt(page)) - t0)} s, ` +
          `opened in ${secs(t - t0)} s`,
      );
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      expect(await page.locator('[data-testid="shard-issues"]').count()).toBe(0);
      expect(await stored(page)).toEqual(ref);
      expect(await idbCounts(page)).toMatchObject({
        shards: 1,
        docs: DOCS / 1000,
        queries: Math.ceil(QUERIES / 1000),
      });

      // The resumed download: one ranged GET of the corpus, from a hash block boundary past the start,
      // answered 206; the first pass's files were not fetched again.
      const after = server.log.slice(mark).filter((e) => e.method === 'GET');
      const corpus = after.filter((e) => e.path === `${PREFIX}corpus.jsonl`);
      expect(corpus).toHaveLength(1);
      const start = Number(/^bytes=(\d+)-$/.exec(corpus[0].range ?? '')?.[1]);
      expect(corpus[0].status).toBe(206);
      expect(start).toBeGreaterThan(0);
      expect(start % MIB).toBe(0);
      expect(start).toBeLessThanOrEqual(readFileSync(join(dir, 'corpus.jsonl')).length);
      expect(corpus[0].bytes).toBe(readFileSync(join(dir, 'corpus.jsonl')).length - start);
      expect(after.map((e) => e.path)).not.toContain(`${PREFIX}queries.jsonl`);
      expect(after.map((e) => e.path)).not.toContain(`${PREFIX}shard.json`);

      // Nothing is offered again after another reload.
      await page.reload();
      await phase(page, 'idle', 'ready');
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      expect(realErrors(page)).toEqual([]);
      if (!MEASURE) {
        // A BM25 run over the resumed shard equals one over the same URL imported cleanly elsewhere.
        const resumed = await bm25Run(page, shardUrl);
        expect(
          new Set(
            resumed
              .split('\n')
              .filter(Boolean)
              .map((l) => l.split(/\s+/)[0]),
          ).size,
        ).toBe(QUERIES);
        const other = await launch();
        try {
          const t2 = Date.now();
          expect(await bm25Run(other.page, shardUrl)).toBe(resumed);
          const lines = resumed.split('\n').filter(Boolean).length;
          console.log(`BM25 run of ${lines} lines equal to a clean import's (${secs(Date.now() - t2)} s)`);
        } finally {
          await other.dispose();
        }
      }
      if (MEASURE) {
        // The same import from the start, for comparison, in a fresh profile (nothing else running
        // there: the page above may still be indexing the shard it opened).
        const other = await launch();
        try {
          const p2 = other.page;
          await p2.goto(`${baseUrl}/#/shards`);
          await phase(p2, 'idle');
          const t1 = Date.now();
          await loadUrl(p2, shardUrl);
          // The first pass ends when the first batch of documents is committed.
          await expect.poll(() => committedDocs(p2), { timeout: 300_000, interval: 100 }).toBeGreaterThan(0);
          const firstBatch = Date.now();
          await jobDone(p2);
          const t = Date.now();
          console.log(
            `full import of ${DOCS} documents: first batch committed in ${secs(firstBatch - t1)} s, ` +
              `all in ${secs((await committedAt(p2)) - t1)} s, opened in ${secs(t - t1)} s`,
          );
          expect(await stored(p2)).toEqual(ref);
        } finally {
          await other.dispose();
        }
      }
    } finally {
      await close();
    }
  }, 900_000);

  it('a folder: Resume after picking the same folder again completes the same shard', async () => {
    try {
      const page = await open();
      await page.setInputFiles('[data-testid="folder-input"]', dir);
      await reloadMidImport(page);
      const label = dir.split('/').pop()!;
      await offer(page, label);
      expect(await page.locator('[data-testid="stopped-import"]').textContent()).toContain(
        `pick the folder ${label} again`,
      );
      // The offer fits a phone's width and the desktop ones, with no horizontal overflow.
      for (const width of [390, 1024, 1440]) {
        await page.setViewportSize({ width, height: 800 });
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
        const box = await page.locator('[data-testid="stopped-import"]').boundingBox();
        expect(box!.x + box!.width).toBeLessThanOrEqual(width);
      }
      await page.setInputFiles('[data-testid="resume-pick"]', dir);
      await jobDone(page);
      expect(await page.locator('[data-testid="shard-issues"]').count()).toBe(0);
      expect(await stored(page)).toEqual(ref);
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      expect(realErrors(page)).toEqual([]);
    } finally {
      await close();
    }
  }, 900_000);

  it('a source changed after the reload is refused, naming the file; Discard and Cancel leave nothing', async () => {
    const file = join(dir, 'corpus.jsonl');
    const original = readFileSync(file);
    try {
      const page = await open();
      // Changed on the server after the reload: one byte of the first document (same size, new mtime).
      await loadUrl(page, shardUrl);
      await reloadMidImport(page);
      await offer(page, shardUrl);
      const edited = Buffer.from(original);
      edited[edited.indexOf('"text":"') + 8] ^= 0x01;
      await new Promise((r) => setTimeout(r, 1100)); // a later Last-Modified second, too
      writeFileSync(file, edited);
      await page.click('[data-testid="resume-import"]');
      const issues = page.locator('[data-testid="shard-issues"]');
      await issues.waitFor({ timeout: 120_000 });
      const text = (await issues.textContent()) ?? '';
      expect(text).toContain('corpus.jsonl');
      expect(text).toContain(
        `has changed on the server (its size, ETag or Last-Modified differ), so ${shardUrl} is not the source the stopped import started from; the stopped import was discarded`,
      );
      await expect.poll(() => idbCounts(page), { timeout: 15_000 }).toEqual(ZERO);
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      writeFileSync(file, original);

      // Discard: everything the stopped import wrote goes.
      await loadUrl(page, shardUrl);
      await reloadMidImport(page);
      await offer(page, shardUrl);
      await page.click('[data-testid="discard-import"]');
      await expect.poll(() => idbCounts(page), { timeout: 15_000 }).toEqual(ZERO);
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);

      // Cancel while documents are written: nothing stays, and nothing is offered after a reload.
      await loadUrl(page, shardUrl);
      await expect
        .poll(() => committedDocs(page), { timeout: 240_000, interval: 100 })
        .toBeGreaterThanOrEqual(1000);
      await page.click('[data-testid="cancel"]');
      await jobDone(page);
      await expect.poll(() => idbCounts(page), { timeout: 15_000 }).toEqual(ZERO);
      await page.reload();
      await phase(page, 'idle');
      await page.waitForTimeout(500);
      expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      expect(await idbCounts(page)).toEqual(ZERO);

      // A folder picked again that is not the same (one query's text changed, same size): refused.
      const copy = `${dir}-copy`;
      cpSync(dir, copy, { recursive: true });
      try {
        const queries = readFileSync(join(copy, 'queries.jsonl'));
        queries[queries.indexOf('"text":"') + 8] ^= 0x01;
        writeFileSync(join(copy, 'queries.jsonl'), queries);
        await page.setInputFiles('[data-testid="folder-input"]', dir);
        await reloadMidImport(page);
        await offer(page, dir.split('/').pop()!);
        await page.setInputFiles('[data-testid="resume-pick"]', copy);
        await issues.waitFor({ timeout: 120_000 });
        expect(await issues.textContent()).toContain(
          `queries.jsonl has other content than before, so ${dir.split('/').pop()} is not the source the stopped import started from; the stopped import was discarded`,
        );
        await expect.poll(() => idbCounts(page), { timeout: 15_000 }).toEqual(ZERO);
        expect(await page.locator('[data-testid="stopped-import"]').count()).toBe(0);
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
      expect(realErrors(page)).toEqual([]);
    } finally {
      writeFileSync(file, original);
      await close();
    }
  }, 900_000);
});
