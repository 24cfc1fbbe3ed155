// Links that a person shares or mistypes (issue 36 items 2 and 3): a Search link that names a query
// answers it, in a fresh browser and after a reload (with the progress line while the model loads),
// and its URL names the model Search used, not the Benchmark's retriever; a reloaded Benchmark keeps
// its ticked runs and open comparison; a mistyped demo name says so and lists the demos (the route
// and the query kept), and a shard URL whose server answers with its index page says that in words.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';

const baseUrl = inject('baseUrl');
const QUERY = 'pleural effusion';
const SEARCH_LINK = `${baseUrl}/?shard=vqa-rad&task=text-to-image&q=pleural+effusion#/search`;

const route = (page: Page) => page.getAttribute('[data-testid="app"]', 'data-route');
const results = (page: Page) => page.locator('[data-testid="results"] [data-doc]');

/** Records every text the progress line shows (read in the page every 50 ms from its start). */
async function watchProgress(page: Page) {
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __progress: string[] }).__progress = seen;
    setInterval(() => {
      const t = document.querySelector('[data-testid="job"]')?.textContent?.trim();
      if (t && seen.at(-1) !== t) seen.push(t);
    }, 50);
  });
}
const progress = (page: Page) =>
  page.evaluate(() => (window as unknown as { __progress: string[] }).__progress);

describe('shared and mistyped links', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('a Search link with a query answers it in a fresh browser and after a reload; its URL names the model Search used', async () => {
    const { page } = s;
    await watchProgress(page);
    await page.goto(SEARCH_LINK);
    await results(page).first().waitFor({ timeout: 300_000 });
    expect(await route(page)).toBe('search');
    expect(await page.inputValue('[data-testid="search-input"]')).toBe(QUERY);
    expect(await results(page).count()).toBe(20);
    // The model had to load first: the progress line said so meanwhile.
    expect((await progress(page)).join('\n')).toMatch(/Searching with|Loading|Downloading|Warming up/);
    // The URL names the model the results came from (vqa-rad has images: an image model, not BM25),
    // and not the Benchmark's retriever.
    const used = await page.inputValue('[data-testid="search-model"]');
    expect(used).not.toBe('bm25');
    await expect.poll(() => new URL(page.url()).searchParams.get('search-model')).toBe(used);
    const params = new URL(page.url()).searchParams;
    expect(params.get('retriever')).toBeNull();
    expect(params.get('q')).toBe(QUERY);
    expect(params.get('task')).toBe('text-to-image');
    const first = await results(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-doc')));

    // Reloaded: answered again, the same results.
    await page.reload();
    await expect
      .poll(() => results(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-doc'))), {
        timeout: 300_000,
      })
      .toEqual(first);
    await page.setViewportSize({ width: 390, height: 900 });
    await page.screenshot({ path: shotPath('links-search-390.png') });
    await page.setViewportSize({ width: 1400, height: 1000 });
    expect(pageErrors(page)).toEqual([]);
  }, 600_000);

  test('a reloaded Benchmark keeps its ticked runs and the open comparison', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=vqa-rad&task=image-question-to-passage&run=1`);
    await phase(page, 'done');
    await page.fill('[data-testid="bm25-k1"]', '1.2');
    await page.fill('[data-testid="bm25-b"]', '0.5');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    const picks = page.locator('[data-testid="compare-pick"]');
    await expect.poll(() => picks.count()).toBeGreaterThanOrEqual(2);
    // The two newest runs ticked, the older one the baseline, compared.
    for (const box of await picks.all()) await box.uncheck();
    await picks.nth(0).check();
    await picks.nth(1).check();
    const ticked = await page
      .locator('[data-testid="compare-pick"]:checked')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-run')));
    expect(ticked).toHaveLength(2);
    await page.check(`[data-testid="baseline-pick"][data-run="${ticked[1]}"]`);
    await page.click('[data-testid="compare-run"]');
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 120_000 });
    const table = await page.locator('[data-testid="comparison-table"]').innerText();
    await expect.poll(() => new URL(page.url()).searchParams.get('compared')).toBe(ticked[1]);

    await page.reload();
    await page.waitForSelector('[data-testid="comparison-table"]', { timeout: 120_000 });
    expect(await route(page)).toBe('benchmark');
    expect(
      await page
        .locator('[data-testid="compare-pick"]:checked')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-run'))),
    ).toEqual(ticked);
    expect(await page.isChecked(`[data-testid="baseline-pick"][data-run="${ticked[1]}"]`)).toBe(true);
    expect(await page.locator('[data-testid="comparison-table"]').innerText()).toBe(table);
    expect(pageErrors(page)).toEqual([]);
  });

  test('a mistyped demo name says there is none, lists the demos as links, keeps the query and shows #/', async () => {
    {
      // (The same profile: vqa-rad's corpus embeddings from the first test make its answer quick.)
      const { page } = s;
      await page.goto(`${baseUrl}/?shard=vqa-radd&q=pleural+effusion#/search`);
      const note = page.getByTestId('no-such-demo');
      await note.waitFor({ timeout: 60_000 });
      expect(await note.innerText()).toMatch(
        /There is no demo shard called “vqa-radd” on this site\. Its demos:/,
      );
      const demos = await note.locator('a').allInnerTexts();
      expect(demos).toEqual(expect.arrayContaining(['vqa-rad', 'medquad']));
      // No parser error about the site's index page.
      expect(await page.locator('[data-testid="message"]').allInnerTexts()).not.toContainEqual(
        expect.stringMatching(/JSON|<!doctype/i),
      );
      // The route is the page shown (the landing page); the query stays in the URL.
      expect(await route(page)).toBe('home');
      await page.waitForSelector('#landing-h');
      await expect.poll(() => new URL(page.url()).hash).toBe('#/');
      expect(new URL(page.url()).searchParams.get('q')).toBe(QUERY);
      expect(new URL(page.url()).searchParams.get('shard')).toBe('vqa-radd');
      await page.setViewportSize({ width: 390, height: 900 });
      await page.screenshot({ path: shotPath('links-no-such-demo-390.png') });
      // The demo's link opens it and answers the query.
      await note.locator('a', { hasText: /^vqa-rad$/ }).click();
      await results(page).first().waitFor({ timeout: 300_000 });
      expect(await page.locator('[data-testid="shard-name"]').innerText()).toBe('vqa-rad');
      expect(await page.inputValue('[data-testid="search-input"]')).toBe(QUERY);
      expect(pageErrors(page)).toEqual([]);
    }
  }, 400_000);

  test('a shard URL whose server answers with its index page (an SPA fallback) is said in words', async () => {
    // Every path answers 200 with a web page, as a single-page app's host does for unknown paths.
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Access-Control-Allow-Origin': '*' });
      res.end('<!doctype html><html><body><div id="app"></div></body></html>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const host = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { page } = s;
      await page.goto(`${baseUrl}/?shard=${host}/shards/mine/#/search`);
      const msg = page.locator('[data-testid="message"][data-kind="error"]');
      await msg.first().waitFor({ timeout: 60_000 });
      const text = await msg.first().innerText();
      expect(text).toContain(`${host}/shards/mine/`);
      expect(text).toMatch(/is a web page \(text\/html\).*index page/);
      expect(text).not.toMatch(/malformed JSON|Unexpected token/);
      expect(await route(page)).toBe('home');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
