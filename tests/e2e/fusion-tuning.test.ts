// Fusion in Chromium: two BM25 runs of medquad fused with CombMAX and with Borda from the Benchmark
// view's controls, and a linear fusion tuned by 5-fold cross-validation in the stats worker. Every
// expected value is computed here in Node by the core (fuse, tuneFusion, evaluate) from the runs and
// qrels the app exports, never hard-coded. Then a long tuning is cancelled, and the view is checked at
// 390, 1024 and 1440 px for sideways scroll.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { download, launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { evaluate } from '../../src/lib/core/eval/metrics';
import { DEFAULT_SEMANTICS, SEMANTICS } from '../../src/lib/core/eval/semantics';
import { fuse, type FusionOptions } from '../../src/lib/core/retrieval/fusion';
import { fusionGrid, tuneFusion } from '../../src/lib/core/retrieval/fusion-tuning';
import type { Run } from '../../src/lib/core/types';

const baseUrl = inject('baseUrl');
const MEASURE = 'ndcg_cut_10';

/** A run as plain data (query → docs in trec_eval order), to compare with toEqual. */
const plain = (run: Run) =>
  Object.fromEntries([...run].map(([q, docs]) => [q, docs.map((d) => [d.docId, d.score])]));

describe('fusing and tuning runs in the Benchmark view', () => {
  let s: Session;
  /** The input runs as the app exports them, by run name. */
  const inputs = new Map<string, Run>();
  let qrelsText = '';
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  /** The shown run's metrics JSON and TREC export; its inputs in the order its name lists them. */
  async function shown(page: Page) {
    const metrics = JSON.parse(await download(page, 'export-json')) as {
      run: { name: string };
      overall: Record<string, number>;
      perQuery: Record<string, Record<string, number>>;
    };
    const run = parseRun(await download(page, 'export-run'));
    const names = [...inputs.keys()].sort(
      (a, b) => metrics.run.name.indexOf(a) - metrics.run.name.indexOf(b),
    );
    expect(names.every((n) => metrics.run.name.includes(n))).toBe(true);
    return { metrics, run, runs: names.map((n) => inputs.get(n)!) };
  }

  async function fuseWith(page: Page, count: number) {
    await page.click('[data-testid="fuse-run"]');
    await expect
      .poll(() => page.locator('[data-testid="compare-pick"]').count(), { timeout: 120_000 })
      .toBe(count);
    await phase(page, 'done');
  }

  test('CombMAX and Borda runs equal the core fusion of the exported input runs', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/medquad/&task=qa-answer-retrieval&run=1#/benchmark`);
    await phase(page, 'done');
    await page.fill('[data-testid="bm25-k1"]', '1.5');
    await page.fill('[data-testid="bm25-b"]', '0.9');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await expect.poll(() => page.locator('[data-testid="compare-pick"]').count()).toBe(2);
    for (let i = 0; i < 2; i++) {
      const button = page.locator('[data-testid="run-name"]').nth(i);
      const name = await button.innerText();
      await button.click();
      inputs.set(name, parseRun(await download(page, 'export-run')));
    }
    qrelsText = await download(page, 'export-qrels');
    const qrels = parseQrels(qrelsText);
    const { options } = SEMANTICS[DEFAULT_SEMANTICS];
    for (const box of await page.locator('[data-testid="compare-pick"]').all()) await box.check();

    const cases: { method: 'combmax' | 'borda'; norm?: 'zscore'; opts: FusionOptions }[] = [
      { method: 'combmax', norm: 'zscore', opts: { method: 'combmax', normalization: 'zscore' } },
      { method: 'borda', opts: { method: 'borda' } },
    ];
    let count = 2;
    for (const c of cases) {
      await page.selectOption('[data-testid="fusion-method"]', c.method);
      expect(await page.locator('[data-testid="fusion-norm"]').count()).toBe(c.norm ? 1 : 0);
      if (c.norm) await page.selectOption('[data-testid="fusion-norm"]', c.norm);
      await fuseWith(page, ++count);
      const got = await shown(page);
      expect(got.metrics.run.name).toMatch(c.method === 'combmax' ? /^CombMAX zscore \(/ : /^Borda \(/);
      const want = fuse(got.runs, c.opts);
      expect(plain(got.run)).toEqual(plain(want));
      // The per-query measures the app reports are those of the core's fused run.
      const ev = evaluate(qrels, want, [MEASURE, 'map'], options);
      for (const [q, m] of ev.perQuery) {
        expect(got.metrics.perQuery[q][MEASURE]).toBe(m[MEASURE]);
        expect(got.metrics.perQuery[q].map).toBe(m.map);
      }
      expect(await page.locator('[data-testid="fusion-spec"]').innerText()).toBe(
        c.norm ? `fuse=${c.method}(norm=${c.norm})` : `fuse=${c.method}`,
      );
    }
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a linear fusion tuned by 5-fold cross-validation shows per-fold parameters and held-out scores only', async () => {
    const { page } = s;
    await page.selectOption('[data-testid="fusion-method"]', 'linear');
    await page.check('[data-testid="fusion-tune"]');
    await page.fill('[data-testid="cv-seed"]', '7');
    await page.selectOption('[data-testid="cv-measure"]', MEASURE);
    // Default grid: weights in steps of 0.1 (11 points) × min-max and z-score.
    expect(await page.locator('[data-testid="cv-grid"]').innerText()).toMatch(/^22 grid points/);
    await fuseWith(page, 5);
    const got = await shown(page);
    expect(got.metrics.run.name).toMatch(/^Linear 5-fold CV ndcg_cut_10 seed 7 \(/);

    const gridSpec = { step: 0.1, normalizations: ['minmax' as const, 'zscore' as const] };
    const tuned = tuneFusion(got.runs, parseQrels(qrelsText), {
      fusion: { method: 'linear' },
      grid: fusionGrid('linear', 2, gridSpec),
      measure: MEASURE,
      folds: 5,
      seed: 7,
      evalOptions: { complete: SEMANTICS[DEFAULT_SEMANTICS].options.complete },
    });
    // The stored run is the held-out run: each fold fused with the parameters the other folds chose.
    expect(plain(got.run)).toEqual(plain(tuned.run));
    expect(got.metrics.overall[MEASURE]).toBe(tuned.score);
    const details = page.locator('[data-testid="fusion-details"]');
    expect(await details.locator('[data-testid="heldout-note"]').innerText()).toMatch(
      /every score of this run, here and in the metrics above, is on held-out folds/,
    );
    expect(Number(await details.locator('[data-testid="heldout-score"]').getAttribute('data-value'))).toBe(
      tuned.score,
    );
    expect(await details.locator('[data-testid="fold-params"]').allInnerTexts()).toEqual(
      tuned.tuning.folds.map((f) => `${f.params.normalization}, weights ${f.params.weights!.join(' / ')}`),
    );
    expect(await details.locator('[data-testid="fold-score"]').allInnerTexts()).toEqual(
      tuned.tuning.folds.map((f) => f.testScore.toFixed(4)),
    );
    // No training-fold score is shown anywhere in the details.
    const text = await details.innerText();
    for (const f of tuned.tuning.folds)
      if (
        f.trainScore.toFixed(4) !== f.testScore.toFixed(4) &&
        f.trainScore.toFixed(4) !== tuned.score.toFixed(4)
      )
        expect(text).not.toContain(f.trainScore.toFixed(4));
    expect(await details.locator('[data-testid="fusion-spec"]').innerText()).toBe(
      'fuse=linear(cv=5,seed=7,measure=ndcg_cut_10,step=0.1,norms=minmax:zscore)',
    );
    await page
      .locator('[data-testid="run-panel"]')
      .screenshot({ path: shotPath('fusion-tuned-details.png') });
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a long tuning shows its progress and can be cancelled; the view fits 390, 1024 and 1440 px', async () => {
    const { page } = s;
    // Weights in steps of 0.01 under all six normalisations (none included): 606 grid points.
    await page.fill('[data-testid="fusion-controls"] input[aria-label="step"]', '0.01');
    for (const box of await page.locator('[data-testid="fusion-cv"] .norms input').all()) await box.check();
    expect(await page.locator('[data-testid="cv-grid"]').innerText()).toMatch(/^606 grid points/);
    await page.click('[data-testid="fuse-run"]');
    await page.waitForSelector('[data-testid="job"]:has-text("grid point")', { timeout: 60_000 });
    await page.click('[data-testid="cancel"]');
    await phase(page, 'done', 'ready');
    await page.waitForSelector('[data-testid="message"]:has-text("cancelled")');
    expect(await page.locator('[data-testid="compare-pick"]').count()).toBe(5);

    // With the cross-validation form open, then with the per-run weights (tuning off).
    for (const tune of [true, false]) {
      await page.setChecked('[data-testid="fusion-tune"]', tune);
      expect(await page.locator('[data-testid="fusion-weights"]').count()).toBe(tune ? 0 : 1);
      for (const width of [390, 1024, 1440]) {
        await page.setViewportSize({ width, height: 900 });
        await page.waitForTimeout(200);
        const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        expect({ width, tune, sw }).toEqual({ width, tune, sw: iw });
        // The fold table fits the details box: nothing past its right edge.
        const right = (sel: string) => page.locator(sel).evaluate((e) => e.getBoundingClientRect().right);
        if (tune)
          await page
            .locator('[data-testid="fusion-details"]')
            .screenshot({ path: shotPath(`fusion-details-${width}.png`) });
        const over =
          (await right('[data-testid="fold-table"]')) - (await right('[data-testid="fusion-details"]'));
        expect({ width, over: over > 0.5 ? over : 0 }).toEqual({ width, over: 0 });
        const name = `${tune ? 'cv' : 'weights'}-${width}`;
        await page.locator('[data-testid="compare"]').screenshot({ path: shotPath(`fusion-${name}.png`) });
      }
    }
    await page.setViewportSize({ width: 1400, height: 1000 });
    expect(pageErrors(page).join('\n')).toBe('');
  });
});
