// A Parquet dataset imported streamed (issue 18) in Chromium: a scale shard of 50,000 documents
// (make-scale-shard) rewritten as a Hugging Face Parquet dataset (make-scale-parquet: three corpus
// files, row groups of 5,000) in a temporary folder under the gitignored generated-shards/ (removed
// afterwards). Through the worker, read over HTTP range requests: a cancel while the documents are
// written leaves nothing; the import then stores every document, queries and judgements, and BM25
// scores it exactly like the same shard's JSONL files. In the app (a folder pick, the mapping
// confirmed): a reload while the Parquet corpus is checked, and one while its documents are written,
// each end with the next start saying where the import stopped, and nothing of it in IndexedDB.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Harness, Outcome } from '../browser/harness';
import { harnessCaller, launch, pageErrors } from './browser';
import { idbCounts, ZERO } from './idb-counts';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
const HARNESS = `${baseUrl}/tests/browser/harness.html`;
const call = harnessCaller<Harness>('harness');
const DOCS = 50_000;
const QUERIES = 500;

function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)).split(sep).join('/'))
    .sort();
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r).slice(0, 2000)}`);
  return r;
}

/** The first note of an import in this page's localStorage, as a JSON object (null when none). */
function note(page: Page): Promise<{ docsDone: number; checking?: { file: string } } | null> {
  return page.evaluate(() => {
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i) ?? '';
      if (k.startsWith('loupe:import:')) return JSON.parse(localStorage.getItem(k)!);
    }
    return null;
  });
}

describe('streamed Parquet import at 50,000 documents (issue 18)', () => {
  let dir = '';
  let parquetDir = '';
  let urlOf = (_sub: string) => '';
  beforeAll(() => {
    mkdirSync(join(ROOT, 'generated-shards'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'generated-shards', 'parquet-stream-'));
    const run = (script: string, args: string[]) =>
      execFileSync('npx', ['tsx', script, ...args], { cwd: ROOT, stdio: 'pipe' });
    run('scripts/make-scale-shard.ts', [
      ...['--docs', String(DOCS), '--queries', String(QUERIES), '--out', join(dir, 'jsonl')],
    ]);
    parquetDir = join(dir, 'scale-parquet');
    run('scripts/make-scale-parquet.ts', [
      ...['--from', join(dir, 'jsonl'), '--out', parquetDir],
      ...['--rows-per-file', '20000', '--row-group', '5000'],
    ]);
    urlOf = (sub) => `/generated-shards/${basename(dir)}/${sub}/`;
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('through the worker: a cancel mid-write leaves nothing; then every row is stored and BM25 equals the JSONL shard’s', async () => {
    const s = await launch();
    try {
      const { page } = s;
      await page.goto(HARNESS);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
      const files = filesOf(parquetDir);
      expect(files.filter((f) => f.startsWith('corpus/'))).toHaveLength(3);

      // Cancelled once 2,000 documents are committed: the worker stops, what it wrote is removed.
      const cancelled = await call(page, 'importUrl', urlOf('scale-parquet'), {
        files,
        cancelOn: 'store',
        minDone: 2000,
      });
      expect(cancelled.ok).toBe(false);
      expect('error' in cancelled && cancelled.error.name).toBe('AbortError');
      expect(cancelled.progress.some((p) => /^store:([2-9]\d{3}|\d{5,})\//.test(p))).toBe(true);
      expect(await idbCounts(page)).toEqual(ZERO);

      const pq = ok(await call(page, 'importUrl', urlOf('scale-parquet'), { files }));
      expect(pq.cached).toBe(false);
      const jsonl = ok(await call(page, 'importUrl', urlOf('jsonl')));
      expect(pq.summary.counts).toEqual({ ...jsonl.summary.counts, images: 0 });
      expect(pq.summary.counts.docs).toBe(DOCS);
      // The documents were written in batches as they streamed past: the store ticks count them.
      const stores = pq.progress.filter((p) => p.startsWith('store:'));
      expect(stores.length).toBeGreaterThan(5);
      expect(stores.at(-1)).toBe(
        `store:${pq.summary.counts.docs + QUERIES + pq.summary.counts.qrels}/${
          pq.summary.counts.docs + QUERIES + pq.summary.counts.qrels
        }`,
      );

      // The same rows as the JSONL files: BM25 ranks and scores them alike, query for query.
      const a = await call(page, 'bm25Metrics', jsonl.summary.hash);
      const b = await call(page, 'bm25Metrics', pq.summary.hash);
      expect(b.test.queries).toEqual(a['scale-qa'].queries);
      expect(b.test.metrics).toEqual(a['scale-qa'].metrics);
      expect(b.test.metrics.ndcg_cut_10).toBeGreaterThan(0.2);
      expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
    } finally {
      await s.dispose();
    }
  }, 600_000);

  it('in the app: a reload while the corpus is checked, and one while it is written, each said at the next start; nothing stays', async () => {
    const s = await launch();
    try {
      const { page } = s;
      const start = async () => {
        await page.waitForSelector(
          '[data-testid="app"][data-phase="idle"], [data-testid="app"][data-phase="ready"]',
          { timeout: 60_000 },
        );
        await page.setInputFiles('[data-testid="folder-input"]', parquetDir);
        await page
          .getByTestId('parquet-mapping')
          .getByRole('button', { name: 'Import with these columns' })
          .click({ timeout: 60_000 });
      };
      const stopped = async () => {
        const message = page.locator('[data-testid="message"]', { hasText: 'The import of scale-parquet' });
        await message.waitFor({ timeout: 60_000 });
        const text = (await message.textContent()) ?? '';
        await expect.poll(() => idbCounts(page), { timeout: 15_000 }).toEqual(ZERO);
        return text;
      };
      await page.goto(`${baseUrl}/#/shards`);

      // 1. While the first pass reads the second corpus file: the note names that Parquet file. (On an
      // idle machine the whole first pass takes about 1.5 s and the second file's part of it about
      // 150 ms, shorter than the note's 500 ms between writes: the note used to skip that file, and
      // the wait ran out after the import had ended. A new file is now written at once.)
      await start();
      await page.waitForFunction(
        () => {
          for (let i = 0; i < localStorage.length; i++) {
            const k = localStorage.key(i) ?? '';
            if (
              k.startsWith('loupe:import:') &&
              /^corpus\/test-00001-of-00003\.parquet$/.test(
                JSON.parse(localStorage.getItem(k)!).checking?.file ?? '',
              )
            )
              return true;
          }
          return false;
        },
        null,
        { timeout: 180_000, polling: 10 },
      );
      // The progress line names the Parquet file and its row (or its bytes read of its size).
      await page.waitForFunction(
        () =>
          /(Parsing corpus\/test-0000[0-2]-of-00003\.parquet: row [\d,]+|Reading corpus\/test-0000[0-2]-of-00003\.parquet: .+ of )/.test(
            document.querySelector('[data-testid="job"]')?.textContent ?? '',
          ),
        null,
        { timeout: 60_000, polling: 20 },
      );
      expect((await note(page))?.docsDone).toBe(0);
      await page.reload();
      expect(await stopped()).toMatch(
        /The import of scale-parquet stopped while checking corpus\/test-0000[0-2]-of-00003\.parquet \([\d,]+ of [\d,]+ bytes read\), before any document was stored when the page was reloaded or closed\. Nothing of it was kept/,
      );

      // 2. While the documents are written (the second pass): how many of how many.
      await start();
      await page.waitForFunction(
        () => {
          for (let i = 0; i < localStorage.length; i++) {
            const k = localStorage.key(i) ?? '';
            if (k.startsWith('loupe:import:') && JSON.parse(localStorage.getItem(k)!).docsDone > 0)
              return true;
          }
          return false;
        },
        null,
        { timeout: 240_000, polling: 50 },
      );
      await page.reload();
      const text = await stopped();
      const m = /The import of scale-parquet stopped at ([\d,]+) of ([\d,]+) documents when the page/.exec(
        text,
      );
      expect(m, text).not.toBeNull();
      expect(Number(m![1].replace(/,/g, ''))).toBeGreaterThan(0);
      expect(Number(m![1].replace(/,/g, ''))).toBeLessThan(DOCS);
      expect(m![2]).toBe('50,000');
      expect(pageErrors(page).filter((e) => !/Failed to load resource|net::ERR_/.test(e))).toEqual([]);
    } finally {
      await s.dispose();
    }
  }, 600_000);
});
