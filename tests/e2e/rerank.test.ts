// Cross-encoder reranking through the UI: a BM25 run of medquad, its top 5 reranked by the generated
// tiny cross-encoder on WASM (random weights: the order exercises the pipeline, not retrieval quality).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { isHubProbe } from './offsite';
import { evaluate, rankQuery, standardMeasures } from '../../src/lib/core/eval/metrics';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';

const baseUrl = inject('baseUrl');
const MEASURES = standardMeasures([1, 5, 10, 100]);
const MODEL = 'loupe-test/cross-encoder-tiny-random';
// Five documents a query: 5,000 pairs, enough to cancel mid-way and to see most top blocks move.
const TOP_N = 5;

async function downloadText(page: Page, testId: string) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

const ids = (l: { docId: string }[]) => l.map((d) => d.docId);

describe('cross-encoder reranking in the UI', () => {
  let s: Session;
  const offsite: string[] = [];
  beforeAll(async () => {
    s = await launch();
    s.page.on('request', (r) => {
      const u = r.url();
      if (
        !isHubProbe(r) &&
        !u.startsWith('http://127.0.0.1') &&
        !u.startsWith('blob:') &&
        !u.startsWith('data:')
      )
        offsite.push(u);
    });
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('medquad BM25 → top 5 reranked by the tiny cross-encoder on WASM; cancel stores nothing', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/medquad/&run=1&device=wasm`);
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const bm25Id = await page.getAttribute('tr.current', 'data-run');
    const bm25 = parseRun(await downloadText(page, 'export-run'), 'bm25.trec');
    expect(bm25.size).toBe(1000);

    await page.fill('[data-testid="rerank-topn"]', String(TOP_N));
    await page.selectOption('[data-testid="rerank-model"]', MODEL);

    // Cancel while pairs are being scored: the worker stops and no run is stored.
    await page.click('[data-testid="rerank-run"]');
    await expect
      .poll(() => page.locator('[data-testid="job"] .text').first().innerText(), { timeout: 60_000 })
      .toMatch(/Reranking: [\d,]+ \/ 5,000 pairs/);
    await page.click('[data-testid="cancel"]');
    await expect
      .poll(() => page.locator('[data-testid="message"]').last().innerText(), { timeout: 30_000 })
      .toMatch(/Reranking cancelled/);
    expect(await page.locator('[data-testid="job"]').count()).toBe(0);
    expect(await page.locator('[data-testid="runs-table"] tbody tr').count()).toBe(1);

    // Again, to the end: a new run, listed first and current.
    await page.click('[data-testid="rerank-run"]');
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    expect(await page.locator('[data-testid="message"]').last().innerText()).toMatch(/Reranked 5,000 pairs/);
    expect(await page.locator('[data-testid="runs-table"] tbody tr').count()).toBe(2);
    expect(await page.locator('tr.current [data-testid="run-name"]').innerText()).toMatch(
      /top 5 reranked by cross-encoder tiny/,
    );

    const sidecar = JSON.parse(await downloadText(page, 'export-sidecar'));
    expect(sidecar.config).toMatchObject({
      kind: 'rerank',
      modelId: MODEL,
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
      topN: TOP_N,
      input: bm25Id,
    });

    // Per query: the top 5 (in trec_eval's order of the exported scores) is a permutation of BM25's
    // top 5, and everything below keeps BM25's order.
    const reranked = parseRun(await downloadText(page, 'export-run'), 'rerank.trec');
    expect([...reranked.keys()].sort()).toEqual([...bm25.keys()].sort());
    let moved = 0;
    for (const [qid, list] of reranked) {
      const after = ids(rankQuery(list));
      const before = ids(rankQuery(bm25.get(qid)!));
      expect(after.length).toBe(before.length);
      expect([...after.slice(0, TOP_N)].sort()).toEqual([...before.slice(0, TOP_N)].sort());
      expect(after.slice(TOP_N)).toEqual(before.slice(TOP_N));
      if (after.slice(0, TOP_N).join() !== before.slice(0, TOP_N).join()) moved++;
      // The block keeps the reranker's sigmoid scores; the rest is shifted below them.
      const scores = rankQuery(list).map((d) => d.score);
      for (const x of scores.slice(0, TOP_N)) expect(x > 0 && x < 1).toBe(true);
      if (scores.length > TOP_N) expect(scores[TOP_N]).toBeLessThan(scores[TOP_N - 1]);
    }
    expect(moved).toBeGreaterThan(900);

    // The exported run, scored again outside the UI, gives the UI's metrics.
    const qrels = parseQrels(await downloadText(page, 'export-qrels'), 'qrels.trec');
    const metrics = JSON.parse(await downloadText(page, 'export-json'));
    const again = evaluate(qrels, reranked, MEASURES, { complete: true });
    for (const m of MEASURES) expect(again.all[m]).toBe(metrics.overall[m]);
    const shown = await page.locator('tr[data-scope="overall"] td[data-measure="ndcg_cut_10"]').innerText();
    expect(again.all.ndcg_cut_10.toFixed(4)).toBe(shown);
    // Recall@100 cannot change: the same documents are ranked, only the top 5 is reordered.
    const bm25Again = evaluate(qrels, bm25, MEASURES, { complete: true });
    expect(again.all.recall_100).toBe(bm25Again.all.recall_100);

    expect(offsite).toEqual([]);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a WebGPU failure falls back to WASM with the reason; a reranked run can be reranked again', async () => {
    const { page } = s;
    // The stored runs of the first test come back from IndexedDB; the newest (the reranked one) is current.
    await page.goto(
      `${baseUrl}/?shard=/shards/medquad/&retriever=dense&device=webgpu&simulate-webgpu-failure=1#/benchmark`,
    );
    await phase(page, 'ready', 'error');
    expect(await page.locator('[data-testid="runs-table"] tbody tr').count()).toBe(2);
    const inputId = await page.getAttribute('tr.current', 'data-run');
    await page.fill('[data-testid="rerank-topn"]', '1');
    await page.selectOption('[data-testid="rerank-model"]', MODEL);
    await page.click('[data-testid="rerank-run"]');
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    expect(await page.locator('[data-testid="message"]').last().innerText()).toMatch(/Reranked 1,000 pairs/);
    expect(await page.getAttribute('[data-testid="backend"]', 'data-device')).toBe('wasm');
    expect(await page.locator('[data-testid="fallback-reason"]').innerText()).toMatch(
      /fell back to WASM: .+/,
    );
    const sidecar = JSON.parse(await downloadText(page, 'export-sidecar'));
    expect(sidecar.config).toMatchObject({ kind: 'rerank', device: 'wasm', topN: 1, input: inputId });
    expect(offsite).toEqual([]);
  });
});
