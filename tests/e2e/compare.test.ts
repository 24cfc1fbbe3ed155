// Benchmark mode in Chromium: several runs on one task, fused, compared with CIs and tests, plotted.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');

async function phase(page: Page, ...phases: string[]) {
  await page.waitForSelector(phases.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', '), {
    timeout: 120_000,
  });
}

describe('comparing runs', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('vqa-rad: two BM25 settings and their RRF fusion, compared with CIs, per organ, with plots', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/vqa-rad/&task=image-question-to-passage&run=1`);
    await phase(page, 'done');
    await page.fill('[data-testid="bm25-k1"]', '1.2');
    await page.fill('[data-testid="bm25-b"]', '0.75');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await expect.poll(() => page.locator('[data-testid="compare-pick"]').count()).toBe(2);

    // Fuse the two BM25 runs with RRF, then compare all three against the first run.
    for (const box of await page.locator('[data-testid="compare-pick"]').all()) await box.check();
    await page.selectOption('[data-testid="fusion-method"]', 'rrf');
    await page.click('[data-testid="fuse-run"]');
    await expect.poll(() => page.locator('[data-testid="compare-pick"]').count()).toBe(3);
    await page.locator('[data-testid="compare-pick"]').first().check();
    await page.locator('[data-testid="baseline-pick"]').last().check();
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]');
    await expect
      .poll(() => page.locator('[data-testid="chart"] svg').count(), { timeout: 60_000 })
      .toBeGreaterThanOrEqual(4);

    // 3 runs × 5 measures; the baseline has a CI and no difference, the others a difference and p-values.
    const rows = page.locator('[data-testid="comparison-table"] tbody tr');
    expect(await rows.count()).toBe(15);
    const ndcgRows = page.locator('[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"]');
    const means = await ndcgRows.locator('[data-testid="mean"]').allInnerTexts();
    for (const m of means) {
      const [mean, lo, hi] = m.match(/[0-9.]+/g)!.map(Number);
      expect(lo).toBeLessThanOrEqual(mean);
      expect(hi).toBeGreaterThanOrEqual(mean);
    }
    const diffs = await ndcgRows.locator('[data-testid="diff"]').allInnerTexts();
    expect(diffs[0]).toBe('');
    expect(diffs[1]).toMatch(/^[+-]?\d\.\d{4} \[/);
    const p = await ndcgRows.nth(1).locator('[data-testid="p-rand"]').innerText();
    expect(p).toMatch(/\d|<0\.0001/);
    // Per-organ breakdown comes from the query images' documents.
    expect(await page.locator('[data-testid="facet-comparison"] tr[data-scope="organ=chest"]').count()).toBe(
      1,
    );
    expect(await page.locator('[data-testid="changed-queries"] li').count()).toBeGreaterThan(0);

    // Plots export as SVG.
    const [dl] = await Promise.all([
      page.waitForEvent('download'),
      page.locator('[data-chart="metric-bars"] [data-testid="export-svg"]').click(),
    ]);
    const svg = readFileSync(await dl.path(), 'utf8');
    expect(svg).toContain('<svg');
    expect(svg).toContain('http://www.w3.org/2000/svg');

    mkdirSync(resolve(import.meta.dirname, '../../docs'), { recursive: true });
    await page
      .locator('[data-testid="compare"]')
      .screenshot({ path: resolve(import.meta.dirname, '../../docs/compare.png') });
    expect(pageErrors(page).join('\n')).toBe('');
  });
});
