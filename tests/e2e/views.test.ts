// The two front doors as people use them: every Benchmark panel follows the selected task and shard,
// nothing overflows at phone, tablet and desktop widths, "why" works for every kind of run, runs
// made with random-weight test models are marked everywhere, and axe finds no serious violation.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { download, launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';

const baseUrl = inject('baseUrl');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [390, 1024, 1440];
const ROUTES = ['search', 'benchmark', 'shards'] as const;
const CLIP = 'dense(model=loupe-test/clip-tiny-random,dtype=fp32,device=wasm,fusion=both,alpha=0.7)';
const TASK = 'image-question-to-passage';

/** Opens the comparison permalink of BM25, CLIP (score and feature fusion) and their RRF on TASK. */
async function openComparison(page: Page) {
  const q = new URLSearchParams({
    shard: '/shards/vqa-rad/',
    task: TASK,
    runs: `bm25(k1=0.9,b=0.4);${CLIP}`,
    fuse: 'rrf(k=60)',
    compare: '1',
  });
  await page.goto(`${baseUrl}/?${q}`);
  await phase(page, 'done');
  await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 180_000 });
}

async function view(page: Page, route: string) {
  await page.evaluate((r) => (location.hash = `#/${r}`), route);
  await page.waitForSelector(`[data-testid="app"][data-route="${route}"]`);
}

/** Task ids of every run row, comparison row and facet column on screen. */
async function shownTasks(page: Page) {
  return page.evaluate(() => [
    ...new Set(
      [...document.querySelectorAll('[data-testid="runs-table"] tr[data-task]')].map((r) =>
        r.getAttribute('data-task'),
      ),
    ),
  ]);
}

async function axeSerious(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const res = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            o: object,
          ) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    return axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
  });
  return res.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(' | ')}`,
    );
}

/** What Tab reaches from the top of the page (data-testid, or tag and label), in order. */
async function tabStops(page: Page, n = 60): Promise<string[]> {
  // Focus the body: Tab then starts from the top of the page.
  await page.evaluate(() => {
    window.scrollTo(0, 0);
    document.body.setAttribute('tabindex', '-1');
    document.body.focus();
    document.body.removeAttribute('tabindex');
  });
  const seen: string[] = [];
  for (let i = 0; i < n; i++) {
    await page.keyboard.press('Tab');
    seen.push(
      await page.evaluate(() => {
        const e = document.activeElement as HTMLElement | null;
        return (
          e?.getAttribute('data-testid') ??
          `${e?.tagName.toLowerCase()}:${e?.textContent?.trim().slice(0, 20)}`
        );
      }),
    );
  }
  return seen;
}

describe('Search and Benchmark views', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('every panel, plot and the permalink follow the selected task and shard; random weights are marked; why works', async () => {
    const { page } = s;
    await openComparison(page);
    expect(await page.getAttribute('[data-testid="app"]', 'data-route')).toBe('benchmark');
    // BM25, CLIP score fusion, CLIP feature fusion, RRF of the three.
    await expect
      .poll(() => page.locator('[data-testid="comparison-table"] tr[data-measure="ndcg_cut_10"]').count())
      .toBe(4);
    expect(await shownTasks(page)).toEqual([TASK]);

    // Random weights: marked on the CLIP runs and on the fusion that used them, in the plot legend and the link.
    const rows = page.locator('[data-testid="runs-table"] tbody tr');
    const marked = await rows.evaluateAll((trs) =>
      trs.map((tr) => [
        tr.querySelector('[data-testid="run-name"]')?.textContent ?? '',
        !!tr.querySelector('[data-testid="random-weights"]'),
      ]),
    );
    for (const [name, mark] of marked) expect(mark, name as string).toBe(!/^BM25/.test(name as string));
    await expect
      .poll(() => page.locator('[data-chart="metric-bars"] svg').allTextContents())
      .toEqual(expect.arrayContaining([expect.stringContaining('[random weights]')]));
    const link = await page.inputValue('[data-testid="permalink"]');
    expect(new URL(link).searchParams.get('random-weights')).toBe('1');
    expect(new URL(link).searchParams.get('task')).toBe(TASK);
    expect(new URL(link).hash).toBe('#/benchmark');
    await page.locator('[data-testid="run-name"]', { hasText: /^CLIP tiny.*score fusion 0\.7$/ }).click();
    const sidecar = JSON.parse(await download(page, 'export-sidecar'));
    expect(sidecar.randomWeights).toBe(true);
    expect(sidecar.warning).toMatch(/random weights/);

    // Why, on the dense (score fusion) run: the cosines combine to the run's score.
    await page.locator('[data-testid="query-list"] button').first().click();
    const detail = page.locator('[data-testid="query-detail"]');
    await detail.locator('[data-testid="why"]').first().click();
    const dense = detail.locator('[data-testid="why-dense"]');
    await dense.waitFor({ timeout: 120_000 });
    const text = await dense.innerText();
    expect(text).toMatch(/cosine of the query text/);
    expect(text).toMatch(/cosine of the query image/);
    const fusedValue = Number(/score fusion: .*= (-?[0-9.]+)/.exec(text)![1]);
    const runScore = Number(/run score: (-?[0-9.]+)/.exec(text)![1]);
    expect(Math.abs(fusedValue - runScore)).toBeLessThan(2e-4);

    // Why, on the RRF run: the inputs' 1/(k + rank) add up to the fused score.
    await page.locator('[data-testid="run-name"]', { hasText: /^RRF/ }).click();
    await page.locator('[data-testid="query-list"] button').first().click();
    await detail.locator('[data-testid="why"]').first().click();
    const fusion = detail.locator('[data-testid="why-fusion"]');
    await fusion.waitFor();
    const adds = (await fusion.locator('tbody tr:not(.total) td:last-child').allInnerTexts()).map(Number);
    expect(adds.length).toBe(3);
    const fused = Number(await fusion.locator('tr.total td:last-child').innerText());
    expect(Math.abs(adds.reduce((a, b) => a + b, 0) - fused)).toBeLessThan(2e-5);

    // Switch task with the comparison open: nothing of the other task stays on screen.
    await page.selectOption('[data-testid="task-select"]', 'text-to-image');
    // text-to-image has no run yet: the list says so instead of showing the other task's.
    await page.waitForSelector('[data-testid="no-runs"]');
    expect(await shownTasks(page)).toEqual([]);
    expect(await page.locator('[data-testid="comparison-table"]').count()).toBe(0);
    expect(await page.locator('[data-testid="chart"]').count()).toBe(0);
    expect(await page.locator('[data-testid="permalink"]').count()).toBe(0);
    expect(await page.locator('[data-testid="query-detail"]').count()).toBe(0);
    const meta = await page.locator('[data-testid="run-meta"]').allInnerTexts();
    for (const m of meta) expect(m).toContain('text-to-image');
    // Compare two runs of this task: the link names this task.
    await page.selectOption('[data-testid="retriever-select"]', 'bm25');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await page.fill('[data-testid="bm25-k1"]', '1.2');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await expect.poll(() => shownTasks(page)).toEqual(['text-to-image']);
    for (const box of await page.locator('[data-testid="compare-pick"]').all()) await box.check();
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 180_000 });
    const link2 = new URL(await page.inputValue('[data-testid="permalink"]'));
    expect(link2.searchParams.get('task')).toBe('text-to-image');
    expect(link2.searchParams.get('random-weights')).toBeNull();
    const runIds = await page
      .locator('[data-testid="runs-table"] tbody tr')
      .evaluateAll((t) => t.map((r) => r.getAttribute('data-run')));
    const cmpIds = await page
      .locator('[data-testid="comparison-table"] tr[data-run]')
      .evaluateAll((t) => t.map((r) => r.getAttribute('data-run')));
    for (const id of cmpIds) expect(runIds).toContain(id);
    // Back: the first task's comparison is still there, with its own link.
    await page.selectOption('[data-testid="task-select"]', TASK);
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 180_000 });
    expect(new URL(await page.inputValue('[data-testid="permalink"]')).searchParams.get('task')).toBe(TASK);
    expect(await shownTasks(page)).toEqual([TASK]);

    // Import a TREC run (the BM25 run exported) into this task.
    await page.locator('[data-testid="run-name"]', { hasText: /^BM25/ }).first().click();
    const file = join(mkdtempSync(join(tmpdir(), 'loupe-views-')), 'bm25.trec');
    writeFileSync(file, await download(page, 'export-run'));
    const before = await rows.count();
    await page.setInputFiles('[data-testid="import-run"]', file);
    await expect.poll(() => rows.count()).toBe(before + 1);

    // Switch shard: medquad's Benchmark shows none of vqa-rad's runs, Search none of its results.
    await view(page, 'shards');
    await page.click('[data-testid="demo-shards"] button[data-shard="medquad"]');
    await expect
      .poll(() => page.locator('[data-testid="shard-name"]').innerText(), { timeout: 60_000 })
      .toBe('medquad');
    await view(page, 'benchmark');
    expect(await page.locator('[data-testid="runs-table"]').count()).toBe(0);
    expect(await page.locator('[data-testid="comparison-table"]').count()).toBe(0);
    expect(await page.locator('[data-testid="no-runs"]').count()).toBe(1);
    await view(page, 'search');
    expect(await page.locator('[data-testid="result-column"]').count()).toBe(0);
    expect(pageErrors(page).join('\n')).toBe('');
  }, 600_000);

  test('each view fits 390, 1024 and 1440 px with runs, a comparison and results on screen; axe finds nothing serious; keyboard reaches the controls', async () => {
    const { page } = s;
    // The same permalink: stored runs are reused; the comparison holds BM25, CLIP, RRF and an import.
    await openComparison(page);
    await page.locator('[data-testid="query-list"] button').first().click();
    await view(page, 'search');
    // BM25: the shard's default image-text model is a hub model, which this offline machine cannot fetch.
    await page.selectOption('[data-testid="search-model"]', 'bm25');
    await page.fill('[data-testid="search-input"]', 'pneumothorax chest x-ray');
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-summary"]', { timeout: 120_000 });
    const problems: string[] = [];
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 860 });
      for (const route of ROUTES) {
        await view(page, route);
        await page.waitForTimeout(150);
        const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        if (sw > iw) problems.push(`${route} at ${width}px: page is ${sw}px wide`);
        // Every chart fits its box: drawn no wider than it, nothing to scroll sideways, no mark (a
        // bar's value, an axis label) drawn past the box's right edge.
        const charts = await page.evaluate(() =>
          [...document.querySelectorAll('[data-testid="chart"]')].map((fig) => {
            const box = fig.querySelector(':scope > div')!;
            const right = box.getBoundingClientRect().right;
            const svgs = [...box.querySelectorAll('svg')];
            const marks = svgs.flatMap((svg) => [...svg.querySelectorAll('text, rect, path, line')]);
            // An axis's title ("… →", "↑ …") is drawn clear of the axes' tick labels (Plot lays
            // them out for 10 px text; the page draws 13 px).
            const hit = (a: DOMRect, b: DOMRect) =>
              a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            const overlaps = svgs.flatMap((svg) => {
              const all = [...svg.querySelectorAll('text')];
              const titles = all.filter((t) => /→$|^↑/.test(t.textContent ?? ''));
              const ticks = [...svg.querySelectorAll('g[font-variant="tabular-nums"] text')];
              // Nor do two tick labels meet (one facet's −1.0 and the next facet's 1.0).
              const clash = ticks.flatMap((k, i) =>
                ticks
                  .slice(i + 1)
                  .filter((j) => hit(k.getBoundingClientRect(), j.getBoundingClientRect()))
                  .map((j) => `"${k.textContent}" meets "${j.textContent}"`),
              );
              return titles
                .flatMap((t) =>
                  ticks
                    .filter((k) => hit(t.getBoundingClientRect(), k.getBoundingClientRect()))
                    .map((k) => `"${t.textContent}" over "${k.textContent}"`),
                )
                .concat(clash);
            });
            return {
              chart: fig.getAttribute('data-chart'),
              scrolls: box.scrollWidth > box.clientWidth,
              past: marks.filter((m) => m.getBoundingClientRect().right > right + 1).length,
              svgs: svgs.length,
              overlaps,
            };
          }),
        );
        if (route === 'benchmark' && !charts.length) problems.push(`no chart on the benchmark at ${width}px`);
        // At desktop width the runs table shows every column without scrolling (its configuration
        // column wraps); a phone scrolls it in its own box.
        if (route === 'benchmark' && width === 1440) {
          const box = page.locator('[data-testid="runs-table"]').locator('xpath=..');
          const [scroll, client] = await box.evaluate((e) => [e.scrollWidth, e.clientWidth]);
          if (scroll > client) problems.push(`runs table at ${width}px: ${scroll}px wide in ${client}px`);
        }
        for (const c of charts)
          if (c.scrolls || c.past || c.overlaps.length)
            problems.push(`chart ${c.chart} at ${width}px: ${JSON.stringify(c)}`);
        if (route === 'search') {
          for (const id of ['search-input', 'search-image-zone', 'search-submit']) {
            const box = await page.locator(`[data-testid="${id}"]`).boundingBox();
            if (!box || box.y + box.height > 860 || box.x + box.width > width)
              problems.push(`${id} not in the first viewport at ${width}px`);
          }
        }
        await page.screenshot({ path: shotPath(`${route}-${width}.png`), fullPage: true });
      }
    }
    expect(problems).toEqual([]);

    // The full-page shots draw the drill-down's thumbnails below the fold as black boxes: they load
    // lazily. Scrolled into view on a phone, each one is a decoded image.
    await page.setViewportSize({ width: 390, height: 860 });
    await view(page, 'benchmark');
    const thumbs = page.locator('[data-testid="ranking"] img');
    await expect.poll(() => thumbs.count()).toBeGreaterThan(10);
    for (const i of [0, 10]) {
      await thumbs.nth(i).scrollIntoViewIfNeeded();
      await expect
        .poll(() => thumbs.nth(i).evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth))
        .toBeGreaterThan(0);
    }
    await page.screenshot({ path: shotPath('benchmark-ranking-390.png') });

    // Search results belong to the task they were asked on: another task shows none (its documents
    // were not searched); back on that task, they are there again.
    await page.setViewportSize({ width: 1400, height: 1000 });
    await view(page, 'search');
    const asked = await page.inputValue('[data-testid="task-select"]');
    const other = (
      await page
        .locator('[data-testid="task-select"] option')
        .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))
    ).find((v) => v !== asked)!;
    await page.selectOption('[data-testid="task-select"]', other);
    await expect.poll(() => page.locator('[data-testid="search-summary"]').count()).toBe(0);
    await page.selectOption('[data-testid="task-select"]', asked);
    await expect.poll(() => page.locator('[data-testid="search-summary"]').count()).toBe(1);
    // Two columns of results read down: rank 2 under rank 1, the second column after the first's
    // last rank (issue 36 item 10).
    const ranks = await page
      .locator('[data-testid="results"] .rank')
      .evaluateAll((rs) =>
        rs.map((r) => ({ x: r.getBoundingClientRect().x, y: r.getBoundingClientRect().y })),
      );
    const half = Math.ceil(ranks.length / 2);
    expect(ranks.length).toBeGreaterThan(3);
    expect([ranks[1].x, ranks[1].y > ranks[0].y, ranks[half].x > ranks[0].x]).toEqual([
      ranks[0].x,
      true,
      true,
    ]);

    for (const route of ROUTES) {
      await view(page, route);
      expect(await axeSerious(page), route).toEqual([]);
    }
    await view(page, 'search');
    const searchStops = await tabStops(page, 25);
    for (const id of [
      'nav-benchmark',
      'task-select',
      'search-input',
      'search-submit',
      'search-image-input',
      'search-model',
    ])
      expect(searchStops, id).toContain(id);
    await view(page, 'benchmark');
    const benchStops = await tabStops(page, 60);
    for (const id of ['run-task', 'compare-pick', 'run-name', 'baseline-pick', 'compare-run'])
      expect(benchStops, id).toContain(id);
    expect(pageErrors(page).join('\n')).toBe('');
  }, 600_000);

  test('the landing page offers the demo shards and fits a phone', async () => {
    const { page } = s;
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${baseUrl}/#/`);
    await page.waitForSelector('[data-testid="demo-shards"]');
    // With a shard cached from the tests above, the landing page still offers the demos.
    expect(await page.locator('[data-testid="demo-shards"] button').count()).toBeGreaterThanOrEqual(3);
    const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
    expect(sw).toBeLessThanOrEqual(iw);
    expect(await axeSerious(page)).toEqual([]);
    await page.setViewportSize({ width: 1400, height: 1000 });
  });
});
