// The BM25 index leaves the retrieval worker's memory when a dense run over a corpus large enough for
// the compact store begins, before its model loads (issue 18: about 160 MB at 1M documents, kept open
// through the dense run before; its buffers freed at once), and comes back from the IndexedDB cache for the next BM25 call, with the same ranking to the bit.
// A 3,000-document synthetic shard (make-scale-shard, random vectors of the generated bert-tiny model:
// random weights; this checks the path) opened by one link that runs BM25 and then dense with the
// store's threshold at 1,000 documents; then the BM25 run is deleted and run again from the UI.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { launch, pageErrors } from './browser';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = 'loupe-test/bert-tiny-random';
const DOCS = 3_000;
const QUERIES = 30;

async function download(page: Page, testId: string): Promise<string> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

async function counters(page: Page) {
  const w = page.workers().find((x) => x.url().includes('retrieval.worker'));
  return w!.evaluate(
    () => (self as unknown as { loupeBm25Counters: Record<string, number> }).loupeBm25Counters,
  );
}

describe('BM25 index released during a large dense run (issue 18)', () => {
  let dir = '';
  beforeAll(() => {
    mkdirSync(join(ROOT, 'generated-shards'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'generated-shards', 'bm25-release-'));
    execFileSync(
      'npx',
      [
        'tsx',
        'scripts/make-scale-shard.ts',
        ...['--docs', String(DOCS), '--queries', String(QUERIES)],
        ...['--vectors', 'random', '--model', MODEL, '--out', dir],
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
  }, 300_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('drops it when the dense corpus streams, reads it back for the next BM25 run, same ranking', async () => {
    const s = await launch();
    try {
      const { page } = s;
      const q = new URLSearchParams({
        shard: `/generated-shards/${basename(dir)}/`,
        task: 'scale-qa',
        runs: `bm25(k1=0.9,b=0.4);dense(model=${MODEL},dtype=fp32,device=wasm)`,
        'compact-from': '1000',
      });
      await page.goto(`${baseUrl}/?${q}`);
      const app = page.locator('[data-testid="app"]');
      await page.waitForSelector(
        '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
        { timeout: 300_000 },
      );
      expect(await app.getAttribute('data-phase')).toBe('done');
      const names = page.locator('[data-testid="runs-table"] [data-testid="run-name"]');
      await expect.poll(() => names.count()).toBe(2);
      // A corpus for the compact store: the index went before the dense run loaded its model, its
      // buffers freed at once (transferred away), not left for the idle worker's next GC.
      const released = await counters(page);
      expect(released).toMatchObject({ releases: 1, reloads: 0 });
      expect(released.freedBytes).toBeGreaterThan(100_000);

      const bm25 = names.filter({ hasText: 'BM25' });
      await bm25.click();
      const before = await download(page, 'export-run');
      expect(before.trim().split('\n').length).toBeGreaterThan(QUERIES);
      await page.click('[data-testid="runs-table"] tr.current [data-testid="delete-run"]');
      await expect.poll(() => names.count()).toBe(1);

      // BM25 again: prepared already, its index read back from the cache before the queries ran.
      await page.selectOption('[data-testid="retriever-select"]', 'bm25');
      await page.click('[data-testid="run-task"]');
      const note = page.locator('[data-testid="message"] .text', { hasText: 'BM25 index: released' });
      await note.waitFor({ timeout: 120_000 });
      expect(await note.innerText()).toMatch(
        /released during a dense run to keep the tab's memory down, read back from the browser's cache \(\d+\.\d s, 3,000 documents\)/,
      );
      await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(2);
      expect(await counters(page)).toEqual({ releases: 1, reloads: 1, freedBytes: released.freedBytes });
      await bm25.click();
      const after = await download(page, 'export-run');
      // The same ranked lists and scores, to the last printed digit.
      expect(after).toBe(before);
      expect(pageErrors(page).join('\n')).toBe('');
    } finally {
      await s.dispose();
    }
  }, 600_000);
});
