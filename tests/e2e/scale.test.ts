// The 10k rung of the scale ladder end to end in Chromium (issue 18): a synthetic shard of 10,000
// documents and 1,000 queries made by make-scale-shard in a temporary folder under the gitignored
// generated-shards/ (removed afterwards), with random unit vectors as its precomputed corpus
// embeddings, labelled with the generated bert-tiny model (random weights: the dense numbers measure
// the path, not retrieval quality). One link imports it, runs BM25 and a dense run that embeds the
// queries only, shows the metrics and compares the two runs. The metrics are checked against the
// evaluator run in Node on each exported run and the shard's own qrels file; the query list keeps
// only the rows in view in the DOM. The time of the whole flow is printed, never asserted.
import { readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { evaluate } from '../../src/lib/core/eval/metrics';
import { parseQrelsAuto, parseRun } from '../../src/lib/core/eval/trec';
import { download, launch, pageErrors, phase, type Session } from './browser';
import { makeScaleShard } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
const MEASURES = ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map', 'P_10'];
const DOCS = 10_000;
const QUERIES = 1_000;

/** The encoder worker's own counters (read in the worker). */
async function encoderCounters(page: Page): Promise<Record<string, number>> {
  const w = page.workers().find((x) => x.url().includes('encoder.worker'));
  if (!w) throw new Error('no encoder worker');
  return w.evaluate(
    () => (self as unknown as { loupeEncoderCounters: Record<string, number> }).loupeEncoderCounters,
  );
}

describe('the 10k rung (issue 18)', () => {
  let s: Session;
  let dir = '';
  beforeAll(async () => {
    dir = makeScaleShard('scale-10k-', { docs: DOCS, queries: QUERIES, model: MODEL });
    s = await launch();
  }, 300_000);
  afterAll(async () => {
    await s?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('import, BM25, dense from the precomputed vectors, metrics equal the evaluator on the exports, compare, a virtual query list', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    const runs = ['bm25(k1=0.9,b=0.4)', `dense(model=${MODEL},dtype=fp32,device=wasm)`].join(';');
    const q = new URLSearchParams({
      shard: `/generated-shards/${basename(dir)}/`,
      task: 'scale-qa',
      runs,
      compare: '1',
    });
    const t0 = Date.now();
    await page.goto(`${baseUrl}/?${q}`);
    expect(await phase(page, 'done', 'error')).toBe('done');
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 300_000 });
    const seconds = ((Date.now() - t0) / 1000).toFixed(1);

    // The dense run embedded the queries only: the corpus side came from the shard's vectors.
    expect(await encoderCounters(page)).toMatchObject({ docsEmbedded: 0, precomputedRows: DOCS });

    // Both runs compared on every measure: the baseline with its CI, the other with a difference.
    const ids = await page
      .locator('[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run') ?? ''));
    expect(ids).toHaveLength(2);
    expect(await page.locator('[data-testid="comparison-table"] tbody tr').count()).toBe(2 * MEASURES.length);
    const diff = page.locator(
      `[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"][data-run="${ids[1]}"] [data-testid="diff"]`,
    );
    expect(await diff.innerText()).toMatch(/^[+-]?\d\.\d{4} \[-?\d\.\d{4}, -?\d\.\d{4}\]$/);

    // Each run's metrics: the UI's table, its metrics.json and the comparison's means all equal the
    // evaluator run here on the exported run.trec against the shard's qrels file.
    const corpus = new Map(
      readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { _id: string; title: string })
        .map((d) => [d._id, d]),
    );
    const qrels = parseQrelsAuto(readFileSync(join(dir, 'qrels/test.tsv'), 'utf8'), 'qrels/test.tsv');
    for (const id of ids) {
      await page.click(`[data-testid="runs-table"] tr[data-run="${id}"] [data-testid="run-name"]`);
      await expect
        .poll(() => page.getAttribute('[data-testid="runs-table"] tr.current', 'data-run'))
        .toBe(id);
      const run = parseRun(await download(page, 'export-run'), 'run.trec');
      expect(run.size).toBe(QUERIES);
      const again = evaluate(qrels, run, MEASURES, { complete: true });
      const metrics = JSON.parse(await download(page, 'export-json'));
      for (const m of MEASURES) {
        expect(metrics.overall[m]).toBe(again.all[m]);
        if (m !== 'P_10') {
          // (The metrics table leaves out P@k.)
          const cell = page.locator(`tr[data-scope="overall"] td[data-measure="${m}"]`);
          expect(await cell.innerText()).toBe(again.all[m].toFixed(4));
        }
        const mean = page.locator(
          `[data-testid="comparison-table"] tr[data-measure="${m}"][data-run="${id}"] [data-testid="mean"]`,
        );
        expect((await mean.innerText()).split(' ')[0]).toBe(again.all[m].toFixed(4));
      }
      // BM25 finds the fragment's document for most queries; the dense run's vectors are random.
      if (metrics.run.config.kind === 'bm25') expect(again.all.recall_100).toBeGreaterThan(0.5);

      // The query list: 1,000 queries, a few dozen rows in the DOM, the last one reachable by scrolling.
      const list = page.locator('[data-testid="query-list"]');
      expect(await list.getAttribute('data-rows')).toBe(String(QUERIES));
      const rows = list.locator('li');
      expect(await rows.count()).toBeGreaterThan(5);
      expect(await rows.count()).toBeLessThan(50);
      await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await expect.poll(() => rows.last().getAttribute('aria-posinset')).toBe(String(QUERIES));
      expect(await rows.count()).toBeLessThan(50);
      await rows.last().locator('button').click();
      const picked = await rows.last().locator('button').getAttribute('data-qid');
      await expect.poll(() => page.getAttribute('[data-testid="query-detail"]', 'data-qid')).toBe(picked);
      // The ranking's documents are read by id from IndexedDB (the page does not hold the corpus).
      const first = page.locator('[data-testid="ranking"] li').first();
      const firstId = (await first.getAttribute('data-doc'))!;
      await expect.poll(() => first.locator('.title').innerText()).toBe(corpus.get(firstId)!.title);
      // The filter matches ids and texts, case-folded, as the shard's queries say.
      const needle = picked!.slice(-3).toUpperCase();
      const want = readFileSync(join(dir, 'queries.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { _id: string; text: string })
        .filter((q) => `${q._id}\n${q.text}`.toLowerCase().includes(needle.toLowerCase())).length;
      await page.fill('input[aria-label="Filter queries"]', needle);
      await expect.poll(() => list.getAttribute('data-rows')).toBe(String(want));
      await page.fill('input[aria-label="Filter queries"]', '');
      await expect.poll(() => list.getAttribute('data-rows')).toBe(String(QUERIES));
      await list.evaluate((el) => el.scrollTo(0, 0));
    }
    // The shard view says how many documents the page holds: a few chunks of 1,000, not the corpus.
    await page.evaluate(() => (location.hash = '#/shards'));
    await page.waitForSelector('[data-testid="app"][data-route="shards"]');
    const held = page.locator('[data-testid="docs-held"]');
    const n = Number((await held.innerText()).match(/: ([\d,]+) of ([\d,]+)/)![1].replace(/,/g, ''));
    expect(await held.innerText()).toContain(`of ${DOCS.toLocaleString('en')} in memory`);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(DOCS / 10); // the documents of the rankings shown, nothing more
    await page.evaluate(() => (location.hash = '#/benchmark'));
    await page.waitForSelector('[data-testid="app"][data-route="benchmark"]');
    // The benchmark view with 1,000 queries fits a phone, a tablet and a desktop.
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 860 });
      await expect
        .poll(() => page.evaluate(() => document.documentElement.scrollWidth - innerWidth))
        .toBeLessThanOrEqual(0);
      expect(await page.locator('[data-testid="query-list"] li').count()).toBeLessThan(50);
    }
    console.log(
      `10k rung: import, BM25, dense (precomputed) and comparison of ${QUERIES} queries: ${seconds} s`,
    );
    expect(errors.join('\n')).toBe('');
  });
});
