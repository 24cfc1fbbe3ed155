// The BM25 index leaves the tab's memory when a dense run over a corpus large enough for the compact
// store begins, before its model loads (issue 18: about 160 MB at 1M documents, kept open through the
// dense run before): the idle retrieval worker is stopped, taking with it the heap V8 keeps after the
// index (about 100 MiB at 1M), and the next BM25 call prepares again in a new worker, reading the index
// back from the IndexedDB cache, with the same ranking to the bit.
// A 3,000-document synthetic shard (make-scale-shard, random vectors of the generated bert-tiny model:
// random weights; this checks the path) opened by one link that runs BM25 and then dense with the
// store's threshold at 1,000 documents; then the BM25 run is deleted and run again from the UI.
import { rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { launch, pageErrors, download } from './browser';
import { makeScaleShard } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
const DOCS = 3_000;
const QUERIES = 30;

async function counters(page: Page) {
  const w = page.workers().find((x) => x.url().includes('retrieval.worker'));
  return w!.evaluate(
    () => (self as unknown as { loupeBm25Counters: Record<string, number> }).loupeBm25Counters,
  );
}

describe('BM25 index released during a large dense run (issue 18)', () => {
  let dir = '';
  beforeAll(() => {
    dir = makeScaleShard('bm25-release-', { docs: DOCS, queries: QUERIES, model: MODEL });
  }, 300_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('stops its worker before the dense model loads, reads it back for the next BM25 run, same ranking', async () => {
    const s = await launch();
    try {
      const { page } = s;
      const retrieval = { started: 0, closed: 0 };
      page.on('worker', (w) => {
        if (!w.url().includes('retrieval.worker')) return;
        retrieval.started++;
        w.on('close', () => retrieval.closed++);
      });
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
      // A corpus for the compact store: the worker holding the index (idle: the BM25 run had ended)
      // was stopped before the dense run loaded its model; no retrieval worker is left.
      expect(retrieval).toEqual({ started: 1, closed: 1 });
      expect(page.workers().filter((w) => w.url().includes('retrieval.worker'))).toHaveLength(0);
      expect(await page.locator('[data-testid="messages"]').innerText()).not.toContain('BM25 index:');

      const bm25 = names.filter({ hasText: 'BM25' });
      await bm25.click();
      const before = await download(page, 'export-run');
      expect(before.trim().split('\n').length).toBeGreaterThan(QUERIES);
      await page.click('[data-testid="runs-table"] tr.current [data-testid="delete-run"]');
      await expect.poll(() => names.count()).toBe(1);

      // BM25 again: prepared again in a new worker, its index read back from the cache (not built).
      await page.selectOption('[data-testid="retriever-select"]', 'bm25');
      await page.click('[data-testid="run-task"]');
      const note = page.locator('[data-testid="message"] .text', { hasText: 'BM25 index: its worker' });
      await note.waitFor({ timeout: 120_000 });
      expect(await note.innerText()).toMatch(
        /its worker was stopped during a dense run to give the tab's memory back; read back from the browser's cache \(\d+\.\d s, 3,000 documents\)/,
      );
      await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(2);
      expect(retrieval).toEqual({ started: 2, closed: 1 });
      // The new worker neither released nor reloaded: it prepared from the cache.
      expect(await counters(page)).toEqual({ releases: 0, reloads: 0, freedBytes: 0 });
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
