// Multi-image items in Chromium, on the synthetic vqa-rad-multi shard (scripts/make-multi-image-shard.ts:
// vqa-rad images grouped by organ and modality, gitignored) with the generated CLIP model (random
// weights): a shard whose `images` names a missing file fails with file, line and index and stores
// nothing; dense runs by mean and by max-sim, their drill-down with image strips; a query of several
// images dropped into the Search view. The shard is made from a vqa-rad subset written at test time
// (its first 120 documents and the queries judging them), so CLIP embeds tens of items, not all of them.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DATA_DIR } from '../paths';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { writeImageSubset } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
const OUT = join(ROOT, 'generated-shards/e2e-multi');
const SHARD = '/generated-shards/e2e-multi/vqa-rad-multi/';
const CLIP = 'model=loupe-test/clip-tiny-random,dtype=fp32,device=wasm';

describe('multi-image items', () => {
  let s: Session;
  beforeAll(async () => {
    const sub = join(OUT, 'vqa-rad-sub');
    writeImageSubset(join(DATA_DIR, 'vqa-rad'), sub, { docs: 120, name: 'vqa-rad-sub' });
    execFileSync('npx', ['tsx', 'scripts/make-multi-image-shard.ts', sub, OUT], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    // A copy whose second item lists an image the shard does not have.
    const bad = join(OUT, 'vqa-rad-multi-bad');
    rmSync(bad, { recursive: true, force: true });
    mkdirSync(bad);
    cpSync(join(OUT, 'vqa-rad-multi'), bad, { recursive: true });
    const lines = readFileSync(join(bad, 'corpus.jsonl'), 'utf8').split('\n');
    const item = JSON.parse(lines[1]);
    item.images[1].path = 'images/missing-view.jpg';
    lines[1] = JSON.stringify(item);
    writeFileSync(join(bad, 'corpus.jsonl'), lines.join('\n'));
    s = await launch();
  }, 120_000);
  afterAll(async () => {
    await s?.dispose();
  });

  test('Shards view: a missing image inside `images` is named with file, line and index; nothing is stored', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    await page.goto(`${baseUrl}/#/shards`);
    await phase(page, 'idle');
    const cachedBefore = await page.locator('[data-testid="cached-shards"] li').count();
    await page.fill('[data-testid="url-input"]', `${baseUrl}/generated-shards/e2e-multi/vqa-rad-multi-bad/`);
    await page.click('[data-testid="url-input"] ~ button');
    const issues = page.locator('[data-testid="shard-issues"]');
    await issues.waitFor({ timeout: 60_000 });
    expect(await issues.innerText()).toContain('corpus.jsonl:2');
    expect(await issues.innerText()).toContain('images[1] "images/missing-view.jpg" is not in the shard');
    expect(await page.locator('[data-testid="cached-shards"] li').count()).toBe(cachedBefore);
    expect(errors).toEqual([]);
  });

  test('dense runs by mean and by max-sim; the drill-down shows the query’s and the documents’ image strips', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    const specs = [`dense(${CLIP},images=mean)`, `dense(${CLIP},images=max)`].join(';');
    await page.goto(
      `${baseUrl}/?shard=${SHARD}&task=images-to-case&runs=${encodeURIComponent(specs)}#/benchmark`,
    );
    expect(await phase(page, 'done', 'error')).toBe('done');
    const names = await page.locator('[data-testid="run-name"]').allInnerTexts();
    expect(names.some((n) => /images mean/.test(n))).toBe(true);
    expect(names.some((n) => /images max-sim/.test(n))).toBe(true);
    expect(names.every((n) => /random weights|CLIP tiny/i.test(n))).toBe(true);
    // Drill-down of a multi-image query: its three views and each ranked item's images, as strips.
    await page.click('[data-testid="query-list"] button[data-qid]');
    const detail = page.locator('[data-testid="query-detail"]');
    await detail.waitFor();
    const qStrip = detail.locator('header [data-testid="image-strip"]');
    expect(await qStrip.locator('li').count()).toBeGreaterThanOrEqual(2);
    expect(await qStrip.locator('li').first().innerText()).toContain('view 1');
    expect(
      await detail.locator('[data-testid="ranking"] [data-testid="image-strip"]').count(),
    ).toBeGreaterThan(0);
    // "Why", recomputed from the embeddings as each run scored the top document.
    for (const [mode, name] of [
      ['max', /images max-sim/],
      ['mean', /images mean/],
    ] as const) {
      await page.locator('[data-testid="run-name"]', { hasText: name }).click();
      await detail.locator('[data-testid="why"]').first().click();
      const why = detail.locator('[data-testid="why-images"]');
      await why.waitFor({ timeout: 60_000 });
      expect(await why.getAttribute('data-mode')).toBe(mode);
      const text = await detail.locator('[data-testid="why-dense"]').innerText();
      const runScore = Number(/run score: (-?[0-9.]+)/.exec(text)![1]);
      let cosine: number;
      if (mode === 'max') {
        // The best pair: one of the query's views and one of the item's, by index and role.
        const pair = why.locator('[data-testid="why-image-pair"]');
        expect(await pair.innerText()).toMatch(
          /^query image \d of [2-4] × document image \d of [1-4] \(view \d\)$/,
        );
        cosine = Number(await why.locator('[data-testid="why-image-cosine"]').innerText());
      } else cosine = Number(/cosine of the query image with the document: (-?[0-9.]+)/.exec(text)![1]);
      expect(Math.abs(cosine - runScore)).toBeLessThan(2e-4);
      await detail.locator('[data-testid="why"]').first().click();
    }
    await page.setViewportSize({ width: 390, height: 900 });
    // Nothing sticks out of the page (wide tables scroll inside their own box).
    const wide = await page.evaluate(() =>
      [...document.querySelectorAll('*')]
        .filter((e) => !e.closest('.table-scroll') && e.getBoundingClientRect().right > innerWidth + 1)
        .map((e) => `${e.tagName} ${e.getAttribute('data-testid') ?? e.className}`),
    );
    expect(wide).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
    await page.screenshot({ path: shotPath('multi-image-benchmark-390.png'), fullPage: false });
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(errors).toEqual([]);
  });

  test('Search: two images dropped together make one query; results show each item’s images', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    await page.goto(
      `${baseUrl}/?shard=${SHARD}&task=images-to-case&search-model=loupe-test/clip-tiny-random&device=wasm&dtype=fp32&images=max#/search`,
    );
    await phase(page, 'ready');
    const shard = join(OUT, 'vqa-rad-multi');
    const q = readFileSync(join(shard, 'queries.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((x) => x.task === 'images-to-case');
    const files = q.images.slice(0, 2).map((i: { path: string }) => join(shard, i.path));
    await page.setInputFiles('[data-testid="search-image-input"]', files);
    await page.waitForSelector('[data-testid="search-image-more"]');
    expect(await page.locator('[data-testid="search-image-more"]').count()).toBe(1);
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-summary"]', { timeout: 120_000 });
    expect(await page.locator('[data-testid="search-summary"]').innerText()).toMatch(
      /results for 2 images with /,
    );
    const strips = page.locator('[data-testid="results"] [data-testid="image-strip"]');
    expect(await strips.count()).toBeGreaterThan(0);
    // Max-sim: the item the two views came from ranks first (its own images match, cosine 1).
    const first = await page.locator('[data-testid="results"] li button').first().getAttribute('data-doc');
    expect(first).toBe(q.exclude_ids[0]);
    // Each image, the first too, has its own ✕ of at least 24 px on its thumbnail (issue 36 item 10).
    const xs = await page.locator('[data-testid="search-image-zone"] .thumb').evaluateAll((ts) =>
      ts.map((t) => {
        const img = t.querySelector('img')!.getBoundingClientRect();
        const x = t.querySelector('[data-testid="search-image-remove"]')!.getBoundingClientRect();
        const inside =
          x.left >= img.left && x.right <= img.right && x.top >= img.top && x.bottom <= img.bottom;
        return { w: x.width >= 24, h: x.height >= 24, inside };
      }),
    );
    expect(xs).toEqual([0, 1].map(() => ({ w: true, h: true, inside: true })));
    // The first image removed by its ✕: the second is the query's image, a one-image query again.
    await page.locator('[data-testid="search-image-first"] [data-testid="search-image-remove"]').click();
    expect(await page.locator('[data-testid="search-image-more"]').count()).toBe(0);
    expect(await page.getAttribute('[data-testid="search-image-preview"]', 'alt')).toBe('Your query');
    await page.setViewportSize({ width: 390, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
    await page.screenshot({ path: shotPath('multi-image-search-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(errors).toEqual([]);
  });
});
