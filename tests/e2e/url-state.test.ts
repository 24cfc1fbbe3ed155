// The URL is the state, on the static build under a sub-path: opening a demo shard, picking a task,
// a model and typing a query all land in the URL; a reload, back/forward and the link pasted into a
// fresh browser reopen that view; a link to a shard that cannot be opened says why on the page it
// leads to; the logo leads to the landing page.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { buildSite, serveStatic, type StaticServer } from './static-server';

const ROOT = resolve(import.meta.dirname, '../..');
const OUT = join(ROOT, '.test-results/url-state-dist');
const PREFIX = '/course/loupe/';
const TASK = 'image-question-to-passage';
const MODEL = 'loupe-test/clip-tiny-random';
const QUERY = 'pleural effusion on the left?';

let server: StaticServer;
let s: Session;

const route = (page: Page) => page.getAttribute('[data-testid="app"]', 'data-route');

/** What the Search view shows: shard, task, model, query text and route. */
async function searchView(page: Page) {
  await page.waitForSelector('[data-testid="search-input"]');
  return {
    route: await route(page),
    shard: await page.locator('[data-testid="shard-name"]').innerText(),
    task: await page.inputValue('[data-testid="task-select"]'),
    model: await page.inputValue('[data-testid="search-model"]'),
    q: await page.inputValue('[data-testid="search-input"]'),
  };
}

const WANTED = { route: 'search', shard: 'vqa-rad', task: TASK, model: MODEL, q: QUERY };

describe('the URL is the state (static build under a sub-path)', () => {
  beforeAll(async () => {
    buildSite(OUT);
    server = await serveStatic(OUT, PREFIX);
    s = await launch();
  }, 480_000);
  afterAll(async () => {
    await s?.dispose();
    await server?.close();
  });

  test('a demo opened from the landing page, its task, model and query: reload, back/forward and a pasted link reopen them', async () => {
    const { page } = s;
    await page.goto(server.url);
    // The 2-document R2MED sample says what it is on its card.
    expect(
      await page.locator('[data-testid="demo-shards"] button[data-shard="r2med-demo"]').innerText(),
    ).toMatch(/Format sample, not a benchmark/);
    await page.click('[data-testid="demo-shards"] button[data-shard="vqa-rad"]');
    await phase(page, 'ready');
    expect(await route(page)).toBe('search');
    // The search box has the focus (not <body>).
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe(
      'search-input',
    );
    // The shard is named by its demo name, under the sub-path.
    expect(new URL(page.url()).pathname).toBe(PREFIX);
    expect(new URL(page.url()).searchParams.get('shard')).toBe('vqa-rad');

    await page.selectOption('[data-testid="task-select"]', TASK);
    await page.selectOption('[data-testid="search-model"]', MODEL);
    await page.fill('[data-testid="search-input"]', QUERY);
    await expect.poll(() => new URL(page.url()).searchParams.get('q')).toBe(QUERY);
    const link = page.url();
    const params = new URL(link).searchParams;
    expect(params.get('task')).toBe(TASK);
    expect(params.get('search-model')).toBe(MODEL);
    expect(new URL(link).hash).toBe('#/search');

    await page.reload();
    await phase(page, 'ready');
    expect(await searchView(page)).toEqual(WANTED);
    expect(page.url()).toBe(link);

    // Back/forward: to the Benchmark and back; then to the previous task and forward again.
    await page.click('[data-testid="nav-benchmark"]');
    expect(await route(page)).toBe('benchmark');
    await page.selectOption('[data-testid="retriever-select"]', 'dense');
    await page.selectOption('[data-testid="model-select"]', MODEL);
    await expect.poll(() => new URL(page.url()).searchParams.get('model')).toBe(MODEL);
    expect(new URL(page.url()).searchParams.get('retriever')).toBe('dense');
    await page.goBack();
    await page.waitForSelector('[data-testid="app"][data-route="search"]');
    expect(await searchView(page)).toEqual(WANTED);
    await page.goForward();
    await page.waitForSelector('[data-testid="app"][data-route="benchmark"]');
    expect(await page.inputValue('[data-testid="retriever-select"]')).toBe('dense');
    expect(await page.inputValue('[data-testid="model-select"]')).toBe(MODEL);
    await page.selectOption('[data-testid="task-select"]', 'text-to-image');
    await page.goBack();
    await expect.poll(() => page.inputValue('[data-testid="task-select"]')).toBe(TASK);
    expect(await route(page)).toBe('benchmark');

    // The link pasted into a fresh browser (nothing cached): the same view.
    const fresh = await launch();
    try {
      await fresh.page.goto(link);
      await phase(fresh.page, 'ready');
      expect(await searchView(fresh.page)).toEqual(WANTED);
      expect(pageErrors(fresh.page)).toEqual([]);
    } finally {
      await fresh.dispose();
    }
    expect(pageErrors(page)).toEqual([]);
  });

  test('a link to a shard that cannot be opened says which and why, on the page it leads to', async () => {
    const { page } = s;
    await page.goto(`${server.url}?shard=shards/no-such-shard/&task=x#/search`);
    const msg = page.locator('[data-testid="message"][data-kind="error"]');
    await msg.first().waitFor();
    const text = await msg.innerText();
    expect(text).toContain("This link's shard");
    expect(text).toContain(`${PREFIX}shards/no-such-shard/`);
    // The reason: the server answered 404 for the shard's files.
    expect(text).toMatch(/404|not found/i);
    // The page shown is the landing page, and the URL says so.
    expect(await route(page)).toBe('home');
    await expect.poll(() => new URL(page.url()).hash).toBe('#/');
    // The link stays as it was (a reload tries again).
    expect(new URL(page.url()).searchParams.get('shard')).toBe('shards/no-such-shard/');

    // A cached-shard link in a browser that does not have it.
    await page.goto(`${server.url}?cached=0123abcd#/benchmark`);
    await page.locator('[data-testid="message"][data-kind="error"]').first().waitFor();
    expect(await page.locator('[data-testid="message"][data-kind="error"]').innerText()).toMatch(
      /could not be opened: it is not cached in this browser/,
    );
  });

  test('the logo leads to the landing page, with the shard still open; a reload stays there', async () => {
    const { page } = s;
    await page.goto(`${server.url}?shard=vqa-rad#/search`);
    await phase(page, 'ready');
    await page.click('header a.brand');
    await page.waitForSelector('#landing-h');
    expect(await route(page)).toBe('home');
    expect(new URL(page.url()).hash).toBe('#/');
    await page.reload();
    await phase(page, 'ready');
    await page.waitForSelector('#landing-h');
    expect(await route(page)).toBe('home');
    // The shard is open (its views are one click away).
    await page.click('[data-testid="landing-open"] a[href="#/search"]');
    await page.waitForSelector('[data-testid="search-input"]');
    expect(await page.locator('[data-testid="shard-name"]').innerText()).toBe('vqa-rad');
  });
});
