// Benchmark rough edges: at 390 px, after a BM25 and a dense run with every model picker on screen
// (the hub out of reach, so each option carries its offline note), no page scrolls sideways and no
// control sticks out of the window; a comparison and its ticks survive a switch to another shard and
// back; "Run all tasks" says what it ran and what it skipped (with the reason) and stays on the
// user's task.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';

/**
 * Page width against the window, and the controls whose right edge lies beyond it. A control inside
 * a box that scrolls sideways by design (a wide table) counts by that box's edge instead.
 */
async function overflow(page: Page) {
  return page.evaluate(() => {
    const iw = innerWidth;
    const scroller = (e: Element): Element | null => {
      for (let p = e.parentElement; p; p = p.parentElement)
        if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return p;
      return null;
    };
    const out = [...document.querySelectorAll('select, input:not([type="file"]), button, textarea')]
      .filter((e) => {
        const r = (scroller(e) ?? e).getBoundingClientRect();
        return e.getBoundingClientRect().width > 0 && r.right > iw + 0.5;
      })
      .map((e) => `${e.tagName.toLowerCase()}[data-testid=${e.getAttribute('data-testid')}]`);
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: iw, out };
  });
}

async function openDemo(page: Page, name: string) {
  await page.click('header a.brand');
  await page.click(`[data-testid="demo-shards"] button[data-shard="${name}"]`);
  await page.waitForSelector(`[data-testid="shard-name"]:text-is("${name}")`);
  await phase(page, 'ready', 'done');
}

describe('Benchmark fixes', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
    // No hub: every picker lists its models with "· needs the network" or "· offline (…)".
    await s.context.route(/^https:\/\/([^/]+\.)?(huggingface\.co|hf\.co)\//, (r) =>
      r.abort('internetdisconnected'),
    );
    await s.page.setViewportSize({ width: 390, height: 800 });
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('390 px after BM25 and dense runs: no sideways scroll and no control beyond the window, on every route', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=/shards/medquad/&run=1#/benchmark`);
    await phase(page, 'done');
    await page.selectOption('[data-testid="retriever-select"]', 'dense');
    await page.selectOption('[data-testid="model-select"]', MODEL);
    await page.selectOption('[data-testid="device-select"]', 'wasm');
    await page.selectOption('[data-testid="dtype-select"]', 'fp32');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done', 'error');
    expect(await page.locator('[data-testid="runs-table"] tbody tr').count()).toBeGreaterThanOrEqual(2);
    await page.waitForSelector('[data-testid="rerank-model"]');
    // The reranker picker marks its models like the other pickers (issue 36 item 10).
    const rerankers = await page.locator('[data-testid="rerank-model"] option').allInnerTexts();
    expect(rerankers.length).toBeGreaterThan(0);
    expect(rerankers.filter((o) => !/· (needs the network|offline \(.+\))$/.test(o))).toEqual([]);
    for (const route of ['benchmark', 'search', 'shards', 'home']) {
      if (route === 'home') await page.click('header a.brand');
      else await page.click(`[data-testid="nav-${route}"]`);
      await page.waitForSelector(`[data-testid="app"][data-route="${route}"]`);
      await page.waitForTimeout(300);
      await page.screenshot({ path: shotPath(`benchmark-fixes-390-${route}.png`), fullPage: true });
      const o = await overflow(page);
      expect({ route, ...o }).toEqual({ route, scrollWidth: o.innerWidth, innerWidth: 390, out: [] });
    }
    expect(
      pageErrors(page).filter((e) => !/Failed to load resource|ERR_INTERNET_DISCONNECTED/.test(e)),
    ).toEqual([]);
  });

  test('a comparison and its ticks are kept per (shard, task) across a switch to another shard and back', async () => {
    const { page } = s;
    await page.click('[data-testid="nav-benchmark"]');
    const picks = page.locator('[data-testid="compare-pick"]');
    await picks.nth(0).check();
    await picks.nth(1).check();
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 120_000 });
    await openDemo(page, 'vqa-rad');
    await page.click('[data-testid="nav-benchmark"]');
    expect(await page.locator('[data-testid="comparison-table"]').count()).toBe(0);
    await openDemo(page, 'medquad');
    await page.click('[data-testid="nav-benchmark"]');
    await page.waitForSelector('[data-testid="comparison-table"]');
    expect(await picks.nth(0).isChecked()).toBe(true);
    expect(await picks.nth(1).isChecked()).toBe(true);
  });

  test('"Run all tasks" lists what it ran and what it skipped, with the reason, and stays on the user\'s task', async () => {
    const { page } = s;
    await openDemo(page, 'vqa-rad');
    await page.click('[data-testid="nav-benchmark"]');
    await page.selectOption('[data-testid="task-select"]', 'image-question-to-passage');
    await page.selectOption('[data-testid="retriever-select"]', 'bm25');
    await page.click('[data-testid="run-all"]');
    const line = page.locator('[data-testid="message"] .text', { hasText: 'Run all tasks with BM25' });
    await line.waitFor({ timeout: 120_000 });
    const text = await line.innerText();
    expect(text).toMatch(/ran text-to-image, image-question-to-passage;/);
    expect(text).toMatch(
      /skipped image-to-image \(BM25 reads query text, and the queries of image-to-image are images only\)\./,
    );
    expect(await page.inputValue('[data-testid="task-select"]')).toBe('image-question-to-passage');
    expect(
      await page
        .locator('[data-testid="runs-table"] tr[data-task]')
        .evaluateAll((rs) => [...new Set(rs.map((r) => r.getAttribute('data-task')))]),
    ).toEqual(['image-question-to-passage']);
  });

  test('a cached shard opened by its name from the Shards view returns to the Benchmark (issue 36 item 10)', async () => {
    const { page } = s;
    await page.click('[data-testid="nav-benchmark"]');
    await page.click('[data-testid="nav-shards"]');
    await page.click('[data-testid="cached-shards"] li[data-name="medquad"] [data-testid="cached-name"]');
    await page.waitForSelector('[data-testid="shard-name"]:text-is("medquad")');
    await page.waitForSelector('[data-testid="app"][data-route="benchmark"]');
  });
});
