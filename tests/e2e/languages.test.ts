// The language facet in the Benchmark route: xling-med's case-to-explanation (the same 116 cases
// asked in en, es, fr, it) run with BM25 shows per-language rows labelled by name, a per-language
// plot, and the English-minus-language gap with paired 95% CIs (the queries are translations).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { launch, pageErrors, type Session } from './browser';

const baseUrl = inject('baseUrl');

describe('per-language view', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('xling-med case-to-explanation, BM25: named languages, plot, gap with paired CIs for es/fr/it', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    await page.goto(`${baseUrl}/?shard=/shards/xling-med/&task=case-to-explanation&run=1#/benchmark`);
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 240_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const panel = page.locator('[data-testid="languages-panel"]');
    await panel.waitFor();

    const rows = await panel.locator('[data-testid="languages-table"] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({
        tag: tr.getAttribute('data-language'),
        text: tr.querySelector('td')!.textContent!.trim(),
        queries: Number(tr.querySelectorAll('td')[1].textContent),
        ndcg: Number(tr.querySelector('[data-measure="ndcg_cut_10"]')!.textContent),
      })),
    );
    expect(rows.map((r) => r.tag).sort()).toEqual(['en', 'es', 'fr', 'it']);
    const byTag = Object.fromEntries(rows.map((r) => [r.tag, r]));
    expect(byTag.en.text).toMatch(/^English/);
    expect(byTag.es.text).toMatch(/^Spanish/);
    expect(byTag.fr.text).toMatch(/^French/);
    expect(byTag.it.text).toMatch(/^Italian/);
    for (const r of rows) expect(r.queries).toBe(116);
    // English cases retrieve their English explanations far better than translated ones (issue 11).
    for (const t of ['es', 'fr', 'it']) expect(byTag.en.ndcg).toBeGreaterThan(byTag[t].ndcg);

    // The metrics table's language facet rows carry names too.
    expect(
      await page.locator('[data-testid="metrics-table"] tr[data-scope="language=fr"] td').first().innerText(),
    ).toMatch(/^French/);

    // The plot renders one bar label per language and exports like the other charts.
    const chart = panel.locator('[data-testid="chart"]');
    expect(await chart.getAttribute('data-chart')).toBe('languages-case-to-explanation');
    const svgText = await chart.locator('svg').first().textContent();
    for (const name of ['English', 'Spanish', 'French', 'Italian']) expect(svgText).toContain(name);

    // The gap: paired, with a CI that contains the point estimate and matches the table's means.
    const gaps = await panel.locator('[data-testid="language-gap"] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => {
        const cell = tr.querySelector('[data-measure="ndcg_cut_10"]')!;
        const nums = (cell.textContent ?? '').match(/[+-]\d\.\d+/g)!.map(Number);
        return {
          tag: tr.getAttribute('data-language'),
          paired: tr.getAttribute('data-paired'),
          gap: nums[0],
          lo: nums[1],
          hi: nums[2],
          hasCi: !!cell.querySelector('[data-testid="gap-ci"]'),
        };
      }),
    );
    expect(gaps.map((g) => g.tag)).toEqual(['es', 'fr', 'it']);
    for (const g of gaps) {
      expect(g.paired).toBe('true');
      expect(g.hasCi).toBe(true);
      expect(g.lo).toBeLessThanOrEqual(g.gap);
      expect(g.hi).toBeGreaterThanOrEqual(g.gap);
      expect(g.gap).toBeCloseTo(byTag.en.ndcg - byTag[g.tag!].ndcg, 3);
      expect(g.lo).toBeGreaterThan(0);
    }
    expect(await panel.locator('[data-testid="gap-no-ci"]').count()).toBe(0);
    expect(errors).toEqual([]);
  }, 300_000);

  test('xling-med term-to-article (each language its own terms): plain differences, a note instead of a CI', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/xling-med/&task=term-to-article&run=1#/benchmark`);
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 240_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const panel = page.locator('[data-testid="languages-panel"]');
    await panel.waitFor();
    expect(await panel.locator('[data-testid="random-weights"]').count()).toBe(0);
    const tags = await panel
      .locator('[data-testid="languages-table"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-language')));
    expect(tags).toHaveLength(10);
    expect(
      await panel.locator('[data-testid="languages-table"] tr[data-language="th"] td').first().innerText(),
    ).toMatch(/^Thai/);
    const gapRows = panel.locator('[data-testid="language-gap"] tbody tr');
    expect(await gapRows.count()).toBe(9);
    expect(await panel.locator('[data-testid="gap-ci"]').count()).toBe(0);
    // One note names the nine languages without a CI (issue 36 item 10: not nine copies of it).
    const noCi = panel.locator('[data-testid="gap-no-ci"]');
    expect(await noCi.count()).toBe(1);
    expect((await noCi.getAttribute('data-languages'))!.split(' ')).toHaveLength(9);
    expect(await noCi.innerText()).toMatch(
      /^No CI for [^:]*Japanese[^:]*: their queries are not translations/,
    );
  }, 300_000);

  // The XLM-R-shaped generated model (SentencePiece/Unigram) loads in the browser's encoder worker and
  // embeds the cross-lingual task; random weights, so only the path and the per-language view are checked.
  test('xling-med case-to-explanation with loupe-test/xlmr-tiny-random: dense run, random weights marked, per-language rows', async () => {
    const { page } = s;
    await page.goto(
      `${baseUrl}/?shard=/shards/xling-med/&task=case-to-explanation&retriever=dense&model=loupe-test/xlmr-tiny-random&device=wasm&dtype=q8&run=1#/benchmark`,
    );
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 280_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    expect(await page.locator('[data-testid="run-meta"]').innerText()).toContain('xlmr-tiny-random');
    const panel = page.locator('[data-testid="languages-panel"]');
    await panel.waitFor();
    expect(await panel.locator('h2 [data-testid="random-weights"]').count()).toBe(1);
    expect(await panel.locator('[data-testid="chart"] figcaption').innerText()).toContain('[random weights]');
    const ndcg = await panel
      .locator('[data-testid="languages-table"] td[data-measure="ndcg_cut_10"]')
      .allInnerTexts();
    expect(ndcg).toHaveLength(4);
    for (const v of ndcg) expect(Number(v)).toBeGreaterThanOrEqual(0);
    expect(await panel.locator('[data-testid="gap-ci"]').count()).toBe(6); // es, fr, it × 2 measures
  }, 300_000);
});
