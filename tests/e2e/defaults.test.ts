// Defaults that load: without the Hugging Face hub, each picker defaults to a model of the right kind
// that loads here (an image model for an image task), models whose files were never generated are
// not offered, and the site's models are listed once (models/index.json), with no HEAD probe. When
// the hub answers but a model's files do not download, the action falls back once, in one line,
// and the line goes when a later action succeeds.
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, phase, type Session } from './browser';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const TASK = 'image-question-to-passage';
const IMAGE = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');

/** Submits the Search query and waits for its summary (or an error). */
async function search(page: Page, text: string, image = false) {
  await page.fill('[data-testid="search-input"]', text);
  if (image) {
    await page.setInputFiles('[data-testid="search-image-input"]', IMAGE);
    await page.waitForSelector('[data-testid="search-image-preview"]');
  }
  await page.click('[data-testid="search-submit"]');
  // The summary of this query (it names the query text), or an error.
  await page.waitForFunction(
    (t) =>
      !!document.querySelector('[data-testid="search-error"]') ||
      !!document.querySelector('[data-testid="search-summary"]')?.textContent?.includes(t),
    text,
    { timeout: 150_000 },
  );
}

const errors = (page: Page) =>
  page
    .locator('[data-testid="message"][data-kind="error"] .text, [data-testid="search-error"]')
    .allInnerTexts();

describe('defaults that load', () => {
  let s: Session;
  const requests: string[] = [];
  beforeEach(async () => {
    s = await launch();
    requests.length = 0;
    s.page.on('request', (r) => requests.push(`${r.method()} ${r.url()}`));
  });
  afterEach(async () => {
    await s?.dispose();
  });

  test('no hub: Search on vqa-rad defaults to an image model that loads; the first query succeeds with no error', async () => {
    const { page, context } = s;
    await context.route(/^https:\/\/([^/]+\.)?(huggingface\.co|hf\.co)\//, (r) =>
      r.abort('internetdisconnected'),
    );
    await page.goto(`${baseUrl}/?shard=/shards/vqa-rad/&task=${TASK}#/search`);
    await phase(page, 'ready');
    const picker = page.locator('[data-testid="search-model"]');
    await expect.poll(() => picker.inputValue()).toBe('loupe-test/clip-tiny-random');
    // Generated models are offered only when their files are served (the B/16 shape is not generated).
    const offered = await picker
      .locator('option')
      .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(offered).toContain('loupe-test/clip-tiny-random');
    expect(offered).not.toContain('loupe-test/clip-vit-b16-random');
    await search(page, 'is there a pneumothorax?', true);
    expect(await page.locator('[data-testid="search-summary"]').innerText()).toMatch(/\+ the image with /);
    expect(await page.locator('[data-testid="results"] li').count()).toBeGreaterThan(0);
    expect(await errors(page)).toEqual([]);
    // The Benchmark's default for this image task is an image model that loads too.
    await page.click('[data-testid="nav-benchmark"]');
    await page.selectOption('[data-testid="retriever-select"]', 'dense');
    expect(await page.inputValue('[data-testid="model-select"]')).toBe('loupe-test/clip-tiny-random');
    // The site's models were listed once, from models/index.json; no HEAD request probed a model file.
    expect(requests.filter((r) => r.includes('/models/index.json')).length).toBe(1);
    expect(requests.filter((r) => r.startsWith('HEAD ') && r.includes('/models/'))).toEqual([]);
  });

  test('the hub answers but a model does not download: one fallback, said in one line, gone after the next success', async () => {
    const { page, context } = s;
    // The probe (HEAD config.json) is answered; every download fails.
    await context.route(/^https:\/\/([^/]+\.)?(huggingface\.co|hf\.co)\//, (r) =>
      r.request().method() === 'HEAD'
        ? r.fulfill({ status: 200, headers: { 'access-control-allow-origin': '*' }, body: '' })
        : r.abort('internetdisconnected'),
    );
    await page.goto(`${baseUrl}/?shard=/shards/vqa-rad/&task=${TASK}#/search`);
    await phase(page, 'ready');
    const picker = page.locator('[data-testid="search-model"]');
    await expect.poll(() => picker.inputValue()).toBe('clip-vit-base-patch16');
    await search(page, 'pneumothorax');
    expect(await page.locator('[data-testid="results"] li').count()).toBeGreaterThan(0);
    const warnings = await page.locator('[data-testid="message"][data-kind="warning"] .text').allInnerTexts();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^CLIP ViT-B\/16 could not be downloaded \(huggingface\.co did not answer\): using CLIP tiny.* \(generated\) instead\./,
    );
    expect(warnings[0]).toContain('models/Xenova/clip-vit-base-patch16/');
    expect(warnings[0].split('\n')).toHaveLength(1);
    expect(await errors(page)).toEqual([]);
    expect(await picker.inputValue()).toBe('loupe-test/clip-tiny-random');
    // The next action succeeds: the line goes.
    await search(page, 'pleural effusion');
    await expect.poll(() => page.locator('[data-testid="message"][data-kind="warning"]').count()).toBe(0);
  });
});
