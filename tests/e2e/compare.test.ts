// Benchmark mode in Chromium: several runs on one task, fused, compared with CIs and tests, plotted.
// The permalink test's dense runs read a vqa-rad subset written at test time into gitignored
// generated-shards/e2e-compare (its first 100 documents and the queries judging them), so the
// encoders embed tens of queries and documents, not the whole shard.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { download, launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { writeImageSubset } from './shard-fixtures';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');

describe('comparing runs', () => {
  let s: Session;
  beforeAll(async () => {
    writeImageSubset(
      join(DATA_DIR, 'vqa-rad'),
      join(import.meta.dirname, '../../generated-shards/e2e-compare/vqa-rad-sub'),
      { docs: 100, name: 'vqa-rad-sub' },
    );
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
    // The other runs' numbers read as differences to the baseline, not as scores (issue 36 item 10).
    expect(await page.locator('[data-testid="changed-queries"] li').first().innerText()).toMatch(
      /^\S+ baseline \d\.\d{4}; Δ vs baseline: \S/,
    );

    // Plots export as SVG.
    const [dl] = await Promise.all([
      page.waitForEvent('download'),
      page.locator('[data-chart="metric-bars"] [data-testid="export-svg"]').click(),
    ]);
    const svg = readFileSync(await dl.path(), 'utf8');
    expect(svg).toContain('<svg');
    expect(svg).toContain('http://www.w3.org/2000/svg');

    await page.locator('[data-testid="compare"]').screenshot({ path: shotPath('compare-bm25.png') });
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a permalink runs BM25, a text encoder, CLIP (score and feature fusion) and RRF on every vqa-rad task and compares them', async () => {
    const { page } = s;
    const runs = [
      'bm25(k1=0.9,b=0.4)',
      'dense(model=loupe-test/bert-tiny-random,dtype=fp32,device=wasm,fusion=both)',
      'dense(model=loupe-test/clip-tiny-random,dtype=fp32,device=wasm,fusion=both,alpha=0.7)',
    ].join(';');
    const expected: Record<string, { runs: number; organ: boolean }> = {
      // BM25, bert (text only), CLIP score + feature, RRF of the four.
      'image-question-to-passage': { runs: 5, organ: true },
      // BM25, bert, CLIP, RRF.
      'text-to-image': { runs: 4, organ: false },
      // Only CLIP can rank image-only queries: CLIP, and nothing to fuse it with.
      'image-to-image': { runs: 1, organ: true },
    };
    let link = '';
    for (const [task, want] of Object.entries(expected)) {
      const q = new URLSearchParams({
        shard: '/generated-shards/e2e-compare/vqa-rad-sub/',
        task,
        runs,
        fuse: 'rrf(k=60)',
        compare: '1',
      });
      await page.goto(`${baseUrl}/?${q}`);
      await phase(page, 'done', 'error');
      expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
      if (want.runs < 2) {
        expect((await page.locator('[data-testid="message"]').allInnerTexts()).join('\n')).toMatch(
          /Not run on image-to-image/,
        );
        continue;
      }
      await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 120_000 });
      const rows = page.locator('[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"]');
      expect(await rows.count()).toBe(want.runs);
      for (const m of await rows.locator('[data-testid="mean"]').allInnerTexts()) {
        const [mean, lo, hi] = m.match(/[0-9.]+/g)!.map(Number);
        expect(lo).toBeLessThanOrEqual(mean);
        expect(hi).toBeGreaterThanOrEqual(mean);
      }
      expect(
        await page.locator('[data-testid="facet-comparison"] tr[data-scope="organ=chest"]').count(),
      ).toBe(want.organ ? 1 : 0);
      await expect
        .poll(() => page.locator('[data-testid="chart"] svg').count(), { timeout: 60_000 })
        .toBeGreaterThanOrEqual(4);
      if (task === 'image-question-to-passage') {
        link = await page.inputValue('[data-testid="permalink"]');
        await page.locator('[data-testid="compare"]').screenshot({ path: shotPath('compare.png') });
      }
    }

    // The link the UI offers reopens the same comparison from stored runs (nothing is recomputed).
    await page.goto(link);
    await phase(page, 'done');
    await page.waitForSelector('[data-testid="comparison-table"]');
    expect(
      await page.locator('[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"]').count(),
    ).toBe(5);
    expect(await page.locator('[data-testid="run-name"]').count()).toBeGreaterThanOrEqual(5);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a run exported and imported again compares as identical: difference 0, p = 1', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/vqa-rad/&task=text-to-image&runs=bm25(k1=0.9,b=0.4)`);
    await phase(page, 'done');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-run"]')]);
    const file = join(mkdtempSync(join(tmpdir(), 'loupe-rt-')), 'bm25.trec');
    writeFileSync(file, readFileSync(await dl.path()));
    const rowsOfTask = page.locator('[data-testid="runs-table"] tbody tr[data-task="text-to-image"]');
    const before = await rowsOfTask.count();
    const original = await page.locator('[data-testid="runs-table"] tr.current').getAttribute('data-run');
    await page.setInputFiles('[data-testid="import-run"]', file);
    await expect.poll(() => rowsOfTask.count()).toBe(before + 1);
    const imported = await page.locator('[data-testid="runs-table"] tr.current').getAttribute('data-run');
    expect(imported).not.toBe(original);
    for (const box of await page.locator('[data-testid="compare-pick"]').all()) await box.uncheck();
    await page.check(`[data-testid="compare-pick"][data-run="${imported}"]`);
    await page.check(`[data-testid="compare-pick"][data-run="${original}"]`);
    await page.check(`[data-testid="baseline-pick"][data-run="${original}"]`);
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]');
    for (const m of ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map', 'P_10']) {
      const row = page.locator(
        `[data-testid="comparison-table"] tr[data-measure="${m}"][data-run="${imported}"]`,
      );
      expect(await row.locator('[data-testid="diff"]').innerText()).toBe('0.0000 [0.0000, 0.0000]');
      expect(await row.locator('[data-testid="p-rand"]').innerText()).toBe('1.0000 (1.0000)');
    }
  });

  test('a run missing a query: switching semantics changes its numbers and every export names it; all_trec measures show', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/vqa-rad/&task=text-to-image&runs=bm25(k1=0.9,b=0.4)`);
    await phase(page, 'done');
    // The BM25 run without its first query: a judged query the run does not answer.
    const full = await download(page, 'export-run');
    const original = await page.locator('[data-testid="runs-table"] tr.current').getAttribute('data-run');
    const dropped = full.split('\n')[0].split(' ')[0];
    const lines = full.split('\n').filter((l) => l && l.split(' ')[0] !== dropped);
    const file = join(mkdtempSync(join(tmpdir(), 'loupe-sem-')), 'missing-one.trec');
    writeFileSync(file, lines.join('\n') + '\n');
    await page.setInputFiles('[data-testid="import-run"]', file);
    await expect
      .poll(() => page.locator('[data-testid="run-meta"]').innerText())
      .toContain('missing-one.trec');

    const queries = async () =>
      Number((await page.innerText('[data-testid="run-meta"]')).match(/(\d+) queries/)![1]);
    const overall = (m: string) =>
      page
        .locator(`[data-testid="metrics-table"] tr.overall td[data-measure="${m}"]`)
        .innerText()
        .then(Number);
    // Default: trec_eval 10.0 -c, the missing query counts and scores 0.
    expect(await page.innerText('[data-testid="metrics-semantics"]')).toContain('trec_eval 10.0 -c');
    expect(await page.innerText('[data-testid="check-command"]')).toContain('trec_eval -c -m ndcg_cut.10');
    const n = await queries();
    const ndcg10 = await overall('ndcg_cut_10');
    expect(ndcg10).toBeGreaterThan(0);
    const json10 = JSON.parse(await download(page, 'export-json'));
    expect(json10.semantics).toBe('10.0-c');
    expect(json10.queries).toBe(n);
    expect(json10.perQuery).toHaveProperty(dropped);

    // The missing query is in the list (scored 0) and opens in the drill-down with its measures.
    await page.click(`[data-testid="query-list"] button[data-qid="${dropped}"]`);
    await page.waitForSelector('[data-testid="query-text"]');
    expect(await page.locator('[data-testid="query-skipped"]').count()).toBe(0);

    // A comparison of the two runs belongs to the semantics it was computed under.
    const imported = await page.locator('[data-testid="runs-table"] tr.current').getAttribute('data-run');
    for (const box of await page.locator('[data-testid="compare-pick"]').all()) await box.uncheck();
    await page.check(`[data-testid="compare-pick"][data-run="${imported}"]`);
    await page.check(`[data-testid="compare-pick"][data-run="${original}"]`);
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]');

    // trec_eval 9.0.8 / pytrec_eval: the missing query is skipped, so the mean is over one query fewer.
    await page.selectOption('[data-testid="semantics-select"]', '9.0.8');
    await expect.poll(() => page.locator('[data-testid="comparison-table"]').count()).toBe(0);
    await expect.poll(queries).toBe(n - 1);
    expect(await page.innerText('[data-testid="metrics-semantics"]')).toContain(
      'trec_eval 9.0.8 / pytrec_eval',
    );
    expect(await page.innerText('[data-testid="check-command"]')).not.toContain(' -c ');
    // It leaves the query list; the drill-down still open on it says why it has no measures.
    expect(await page.locator(`[data-testid="query-list"] button[data-qid="${dropped}"]`).count()).toBe(0);
    expect(await page.innerText('[data-testid="query-skipped"]')).toBe(
      'Not counted under trec_eval 9.0.8 / pytrec_eval: the run has no results for this query.',
    );
    const ndcg9 = await overall('ndcg_cut_10');
    expect(ndcg9).toBeGreaterThan(ndcg10);
    expect(Math.abs(ndcg9 - (ndcg10 * n) / (n - 1))).toBeLessThan(2e-4);
    const json9 = JSON.parse(await download(page, 'export-json'));
    expect(json9.semantics).toBe('9.0.8');
    expect(json9.evaluation).toMatch(
      /^trec_eval 9\.0\.8 \/ pytrec_eval: queries missing from the run are skipped/,
    );
    expect(json9.queries).toBe(n - 1);
    expect(json9.perQuery).not.toHaveProperty(dropped);
    expect(Math.abs(json9.overall.ndcg_cut_10 - (json10.overall.ndcg_cut_10 * n) / (n - 1))).toBeLessThan(
      1e-12,
    );
    const csv = (await download(page, 'export-csv')).trimEnd().split('\n');
    expect(csv[0].split(',').at(-1)).toBe('semantics');
    for (const row of csv.slice(1)) expect(row.split(',').at(-1)).toBe('trec_eval 9.0.8 / pytrec_eval');

    // Every measure of trec_eval -m all_trec, behind the Measures choice: 9.0.8's set has no rbp and
    // no unj (trec_eval 10.0 added them).
    await page.selectOption('[data-testid="measure-set"]', 'all_trec');
    await page.waitForSelector('[data-testid="metrics-table"] tr.overall td[data-measure="set_map"]');
    for (const m of ['rbp', 'rbp_resid', 'unj_10'])
      expect(
        await page.locator(`[data-testid="metrics-table"] tr.overall td[data-measure="${m}"]`).count(),
        m,
      ).toBe(0);
    const json908 = JSON.parse(await download(page, 'export-json'));
    expect(json908.semantics).toBe('9.0.8');
    expect(json908.overall).toHaveProperty('set_map');
    expect(json908.overall).not.toHaveProperty('rbp');
    expect(json908.overall).not.toHaveProperty('unj_20');

    // Back to the default: the first value again, and 10.0's whole all_trec set.
    await page.selectOption('[data-testid="semantics-select"]', '10.0-c');
    await expect.poll(queries).toBe(n);
    await page.waitForSelector('[data-testid="metrics-table"] tr.overall td[data-measure="rbp"]');
    expect(await overall('ndcg_cut_10')).toBe(ndcg10);
    const heads = await page.locator('[data-testid="metrics-table"] thead th').allInnerTexts();
    for (const h of [
      'RBP (p=0.9)',
      'R-nDCG',
      'Unjudged@10',
      'Utility',
      'P@1.20R',
      'Relative P@10',
      'GM-bpref',
    ])
      expect(heads).toContain(h);
    for (const m of ['rbp', 'rbp_resid', 'G', 'binG', 'ndcg_rel', 'set_map', '11pt_avg', 'success_5'])
      expect(await overall(m), m).not.toBeNaN();
    const jsonAll = JSON.parse(await download(page, 'export-json'));
    expect(jsonAll.measures.find((m: { name: string }) => m.name === 'Rprec_mult_2.00')).toEqual({
      name: 'Rprec_mult_2.00',
      label: 'P@2.00R',
      trecEval: 'Rprec_mult_2.00',
      flag: '-m Rprec_mult.2',
    });
    expect(jsonAll.overall).toHaveProperty('unj_20');
    expect(jsonAll.semantics).toBe('10.0-c');
    // The panel fits a phone with all the columns.
    expect(await overall('ndcg_cut_10')).toBe(ndcg10);
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      expect(
        await page.evaluate(() => document.documentElement.scrollWidth),
        `${width}px`,
      ).toBeLessThanOrEqual(width);
      await page
        .locator('[data-testid="metrics-controls"]')
        .screenshot({ path: shotPath(`metrics-controls-${width}.png`) });
    }
    await page.setViewportSize({ width: 1400, height: 1000 });
    expect(pageErrors(page).join('\n')).toBe('');
  });
});
