// HNSW in a dense run: recall@10 against exact search, and metrics that differ from the exact run
// by no more than that recall allows (HNSW hits are re-scored exactly, so a query whose top 10 is
// complete has the exact top 10 in the exact order).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { INDEX_DEFAULTS } from '../../src/lib/clients/index-client';
import { launch, type Session } from './browser';

const baseUrl = inject('baseUrl');

async function downloadJson(page: Page) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-json"]')]);
  return JSON.parse(readFileSync(await dl.path(), 'utf8'));
}

describe('approximate dense search', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  // The random-weight bert-tiny embeddings of medquad are nearly unstructured (HNSW's worst case):
  // the default efSearch was chosen to keep recall@10 ≥ 0.99 on them. Real models are not available
  // on this machine to check the defaults against.
  test('medquad, generated encoder, HNSW at the default parameters: recall@10 vs exact ≥ 0.99, metrics within what it implies', async () => {
    const { page } = s;
    await page.goto(
      `${baseUrl}/?shard=/shards/medquad/&retriever=dense&model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32&index=hnsw&run=1`,
    );
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 300_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const names = await page.locator('[data-testid="run-name"]').allInnerTexts();
    const annName = names.find((n) => n.includes('HNSW'))!;
    const recall = Number(/recall@10 vs exact ([0-9.]+)/.exec(annName)![1]);
    expect(recall).toBeGreaterThanOrEqual(0.99);
    // The HNSW run is current; the exact run is the other one.
    const ann = await downloadJson(page);
    const { M, efConstruction, efSearch } = INDEX_DEFAULTS;
    expect(ann.run.config.ann).toMatchObject({ kind: 'hnsw', M, efConstruction, efSearch });
    await page
      .locator('[data-testid="run-name"]', { hasText: /^(?!.*HNSW)/ })
      .first()
      .click();
    const exact = await downloadJson(page);
    expect(exact.run.config.ann).toBeUndefined();
    // A query whose top 10 is complete scores exactly the same; only the missing share can differ.
    let differing = 0;
    for (const [qid, m] of Object.entries(ann.perQuery) as [string, Record<string, number>][]) {
      if (m.ndcg_cut_10 !== exact.perQuery[qid].ndcg_cut_10) differing++;
    }
    expect(differing / 1000).toBeLessThanOrEqual(10 * (1 - recall) + 1e-9);
    expect(Math.abs(ann.overall.ndcg_cut_10 - exact.overall.ndcg_cut_10)).toBeLessThanOrEqual(
      10 * (1 - recall) + 1e-9,
    );
    // The recall-vs-speed curve of the index belongs to the HNSW run: shown with it, and after a reload.
    expect(await page.locator('[data-chart="ann-recall-qps"]').count()).toBe(0);
    await page.locator('[data-testid="run-name"]', { hasText: 'HNSW' }).click();
    await page.waitForSelector('[data-chart="ann-recall-qps"] svg', { timeout: 120_000 });
    expect(await page.locator('[data-chart="ann-recall-qps"] svg circle').count()).toBe(7);
    await page.goto(`${baseUrl}/?shard=/shards/medquad/#/benchmark`);
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
    await page.locator('[data-testid="run-name"]', { hasText: 'HNSW' }).click();
    expect(await page.locator('[data-chart="ann-recall-qps"] svg circle').count()).toBe(7);
  }, 480_000);
});
