// The first query tells its story (issue 20): one progress line that says what happens — each model
// file downloading with its rate and the time left, compiling, embedding the corpus n of N — each
// phase timed, with a cancel that works; no 404 on the way. Then latency hidden: the query image is
// embedded as it is added and the text on a typing pause, so pressing Search embeds neither again,
// and the results equal those of the same query embedded at once.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, phase, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';
import { writeSubset } from './shard-fixtures';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const TASK = 'image-question-to-passage';
const IMAGE = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');
const QUESTION = 'is there a pneumothorax?';
const MODEL = 'loupe-test/clip-tiny-random';
// The model is picked once the shard is open (a link that names it loads it while the shard imports:
// see the last tests).
const URL_ = `${baseUrl}/?shard=/shards/vqa-rad/&task=${TASK}&device=wasm#/search`;

/**
 * Records every text the progress line shows (and its phase) into `window.story`, from now on; run in
 * the page, or as an init script before its document exists (it then starts once the body does).
 */
function storyRecorder() {
  const w = window as unknown as { story: { text: string; phase: string | null }[] };
  w.story = [];
  const seen = () => {
    const el = document.querySelector('[data-testid="job"]');
    const text = el?.querySelector('.text')?.textContent?.trim();
    if (text && w.story.at(-1)?.text !== text) w.story.push({ text, phase: el!.getAttribute('data-phase') });
  };
  const watch = () =>
    new MutationObserver(seen).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
    });
  if (document.body) watch();
  else document.addEventListener('DOMContentLoaded', watch);
}

async function recordStory(page: Page) {
  await page.evaluate(storyRecorder);
}

const story = (page: Page) =>
  page.evaluate(() => (window as unknown as { story: { text: string; phase: string | null }[] }).story);

async function addImage(page: Page) {
  const remove = page.getByRole('button', { name: 'remove image' });
  if (await remove.count()) await remove.click();
  await page.setInputFiles('[data-testid="search-image-input"]', IMAGE);
  await page.waitForSelector('[data-testid="search-image-preview"]');
}

/** Presses Search and waits for a new query's results (data-seq moves on). */
async function submit(page: Page): Promise<string[]> {
  // Read now, without waiting: before the first query there is no summary (a locator would wait for
  // one for 30 s).
  const before = await page.evaluate(
    () => document.querySelector('[data-testid="search-summary"]')?.getAttribute('data-seq') ?? null,
  );
  await page.click('[data-testid="search-submit"]');
  await page.waitForFunction(
    (prev) =>
      !!document.querySelector('[data-testid="search-error"]') ||
      (document.querySelector('[data-testid="search-summary"]')?.getAttribute('data-seq') ?? null) !== prev,
    before,
    { timeout: 240_000 },
  );
  expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
  return page.locator('[data-testid="results"] li').allInnerTexts();
}

/** The stages the last query measured (loupe:tokenize, loupe:preprocess, loupe:encode…). */
const stages = (page: Page) =>
  page.evaluate(() =>
    performance
      .getEntriesByType('measure')
      .filter((e) => /^loupe:(tokenize|preprocess|encode|search)$/.test(e.name))
      .map((e) => e.name.slice(6)),
  );

describe('the first query tells its story', () => {
  let s: Session;
  const notFound: string[] = [];
  beforeEach(async () => {
    s = await launch();
    notFound.length = 0;
    s.page.on('response', (r) => {
      if (r.status() === 404) notFound.push(r.url());
    });
  });
  afterEach(async () => {
    await s?.dispose();
  });

  test('download (rate, time left), compiling, embedding n of N, each phase timed; then the image and text embedded ahead', async () => {
    const { page, context } = s;
    await page.goto(URL_);
    await phase(page, 'ready');
    await page.selectOption('[data-testid="search-model"]', MODEL);
    await recordStory(page);
    // Model files at 6 MiB/s (the page's and its workers' requests): a download long enough to be seen.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 6 * 1024 * 1024,
      uploadThroughput: -1,
    });
    await addImage(page);
    await page.fill('[data-testid="search-input"]', QUESTION);
    const cold = await submit(page);
    expect(cold.length).toBeGreaterThan(0);
    // The time shown says what the first query's time included.
    const summary = page.locator('[data-testid="search-summary"]');
    expect(await summary.innerText()).toMatch(
      /in [\d.]+ (ms|s) \(first query: loading the model and embedding the corpus\)/,
    );
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    const lines = await story(page);
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l.text));
    const download = at(
      /^Downloading \S+(?: and \d+ more files?)?: [\d.]+ [KM]iB of [\d.]+ [KM]iB · [\d.]+ [KM]iB\/s · \d+ s left$/,
    );
    const compile = at(/^Warming up CLIP tiny.* on WASM \(compiling its kernels\)$/);
    const embed = at(/^Embedding the corpus: [\d,]+ \/ 314 documents/);
    expect(download, JSON.stringify(lines)).toBeGreaterThanOrEqual(0);
    // The model's files download side by side as one summed line: no line of another kind (a file's
    // "Loading", "Preparing the model") between its first and its last download line.
    const lastDownload = lines.map((l) => l.phase).lastIndexOf('download');
    expect(
      lines.slice(download, lastDownload + 1).filter((l) => l.phase !== 'download'),
      JSON.stringify(lines),
    ).toEqual([]);
    expect(compile, JSON.stringify(lines)).toBeGreaterThan(download);
    expect(embed, JSON.stringify(lines)).toBeGreaterThan(compile);
    expect(lines[download].phase).toBe('download');
    expect(lines[compile].phase).toBe('compile');
    expect(lines[embed].phase).toBe('embed');
    // Each phase is timed (performance measures the first-query benchmark reads).
    const phases = await page.evaluate(() =>
      performance
        .getEntriesByType('measure')
        .filter((e) => e.name.startsWith('loupe:phase:'))
        .map((e) => [e.name.slice(12), e.duration] as const),
    );
    for (const p of ['download', 'compile', 'embed'])
      expect(
        phases.some(([n, d]) => n === p && d > 0),
        JSON.stringify(phases),
      ).toBe(true);

    // Latency hidden: the same image added again (a new file object) and the same question typed, a
    // pause, then Search: neither part is embedded when Search is pressed…
    await addImage(page);
    await page.fill('[data-testid="search-input"]', '');
    await page.fill('[data-testid="search-input"]', QUESTION);
    await page.waitForTimeout(1500);
    const hidden = await submit(page);
    expect(await summary.innerText()).not.toMatch(/first query/);
    const measured = await stages(page);
    expect(measured).not.toContain('tokenize');
    expect(measured).not.toContain('preprocess');
    expect(measured).toContain('search');
    // …and the ranking is the one the query embedded at once gave.
    expect(hidden).toEqual(cold);
    // A new question without a pause: its text is embedded when Search is pressed, the image is not.
    await page.fill('[data-testid="search-input"]', 'which organ is shown?');
    await submit(page);
    const mixed = await stages(page);
    expect(mixed).toContain('tokenize');
    expect(mixed).not.toContain('preprocess');
    // Nothing on the way was a 404 (no probe of model files, no embeddings/index.json for a shard without).
    expect(notFound).toEqual([]);

    // After a reload the URL's query is answered by itself (a link that names a query answers it): the
    // model loads again, but the corpus embeddings are this browser's. The summary says so, and the
    // story, recorded from the page's start, never says the corpus is being embedded.
    expect(new URL(page.url()).searchParams.get('q')).toBeTruthy();
    await page.addInitScript(storyRecorder);
    await page.reload();
    await page.waitForSelector('[data-testid="search-summary"], [data-testid="search-error"]', {
      timeout: 240_000,
    });
    expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
    expect(await summary.innerText()).toMatch(
      /\(first query: loading the model and reading the corpus embeddings stored in this browser\)/,
    );
    expect((await story(page)).filter((l) => /^Embedding the corpus/.test(l.text))).toEqual([]);
  });

  test('cancel during the first query stops it; the next query loads again and succeeds', async () => {
    const { page } = s;
    await page.goto(URL_);
    await phase(page, 'ready');
    await page.selectOption('[data-testid="search-model"]', MODEL);
    await addImage(page);
    await page.fill('[data-testid="search-input"]', QUESTION);
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector(
      '[data-testid="job"][data-phase="load"], [data-testid="job"][data-phase="download"], [data-testid="job"][data-phase="compile"], [data-testid="job"][data-phase="embed"]',
      { timeout: 120_000 },
    );
    await page.click('[data-testid="job"] [data-testid="cancel"]');
    await page.waitForSelector('[data-testid="job"]', { state: 'detached', timeout: 60_000 });
    expect(await page.locator('[data-testid="message"][data-kind="info"]').allInnerTexts()).toEqual([
      expect.stringMatching(/cancelled/),
    ]);
    expect(await page.locator('[data-testid="results"] li').count()).toBe(0);
    expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
    const results = await submit(page);
    expect(results.length).toBeGreaterThan(0);
  });
});

/** Measures of the page so far: name, start and end (ms since the page's time origin). */
const measures = (page: Page, prefix: string) =>
  page.evaluate(
    (p) =>
      performance
        .getEntriesByType('measure')
        .filter((e) => e.name.startsWith(p))
        .map((e) => ({ name: e.name, start: e.startTime, end: e.startTime + e.duration })),
    prefix,
  );

describe('a link that names the Search model loads it while a small shard imports', () => {
  let s: Session;
  let dir: string;
  let server: RangeServer;
  beforeAll(async () => {
    // A medquad subset whose shard.json states a million documents (the files win for the import,
    // with a warning; the preload goes by what shard.json states, before the corpus is read).
    dir = mkdtempSync(join(tmpdir(), 'loupe-first-query-'));
    const shard = join(dir, 'shards/stated-large');
    writeSubset(join(DATA_DIR, 'medquad'), shard, { docs: 60, queries: 4, name: 'stated-large' });
    const manifest = JSON.parse(readFileSync(join(shard, 'shard.json'), 'utf8')) as Record<string, unknown>;
    const counts = { corpus: 1_000_000 };
    writeFileSync(join(shard, 'shard.json'), JSON.stringify({ ...manifest, counts }, null, 2));
    server = await serveRanges(dir, '/');
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    s = await launch();
  });
  afterEach(async () => {
    await s?.dispose();
  });

  test('vqa-rad (315 documents): the model loads during the import; the first query does not load it', async () => {
    const { page } = s;
    await page.goto(
      `${baseUrl}/?shard=/shards/vqa-rad/&task=${TASK}&search-model=${MODEL}&device=wasm#/search`,
    );
    await phase(page, 'ready');
    const opened = await measures(page, 'loupe:phase:');
    expect(opened.length, JSON.stringify(opened)).toBeGreaterThan(0);
    await expect.poll(() => measures(page, 'loupe:preload:model'), { timeout: 120_000 }).toHaveLength(1);
    // It started before the import's last phase ended: the two overlapped.
    const [preload] = await measures(page, 'loupe:preload:model');
    expect(preload.start).toBeLessThan(Math.max(...opened.map((m) => m.end)));
    await recordStory(page);
    await addImage(page);
    await page.fill('[data-testid="search-input"]', QUESTION);
    expect((await submit(page)).length).toBeGreaterThan(0);
    const lines = await story(page);
    expect(
      lines.filter((l) => l.phase === 'download' || l.phase === 'compile' || l.phase === 'load'),
      JSON.stringify(lines),
    ).toEqual([]);
    const summary = await page.locator('[data-testid="search-summary"]').innerText();
    expect(summary).not.toMatch(/loading the model/);
    expect(summary).toMatch(/first query: embedding the corpus/);
  });

  test('a shard that states a million documents: the model loads on the first query, not during the import', async () => {
    const { page } = s;
    const url = `${server.url}shards/stated-large/`;
    await page.goto(
      `${baseUrl}/?shard=${url}&task=qa-answer-retrieval&search-model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready');
    expect(await page.locator('[data-testid="model-preload"]').count()).toBe(0);
    expect(await measures(page, 'loupe:preload:model')).toEqual([]);
    await page.fill('[data-testid="search-input"]', 'what causes glaucoma?');
    expect((await submit(page)).length).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="search-summary"]').innerText()).toMatch(
      /first query: loading the model and embedding the corpus/,
    );
  });
});
