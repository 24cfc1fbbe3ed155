// Dense and CLIP retrieval through the UI, with the generated models (random weights: the numbers
// exercise the pipeline, not retrieval quality). The shards are subsets written at test time into
// gitignored generated-shards/e2e-dense (vqa-rad's first 120 documents and the queries judging them;
// medquad's first 150 queries with every document they judge and others up to 600), so the corpus
// and the queries are embedded in seconds.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session, isolatedWasmThreads } from './browser';
import { isHubProbe } from './offsite';
import { DATA_DIR } from '../paths';
import { writeImageSubset, writeSubset } from './shard-fixtures';
import { parseRun } from '../../src/lib/core/eval/trec';

const baseUrl = inject('baseUrl');
const GEN = join(import.meta.dirname, '../../generated-shards/e2e-dense');
/** vqa-rad documents kept: over 100, so that every image-to-image ranking (top 100) is full. */
const VQA_DOCS = 120;

async function downloadText(page: Page, testId: string) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

describe('dense retrieval in the UI', () => {
  let s: Session;
  const offsite: string[] = [];
  let vqa: Record<string, number>;
  let medquad: { docs: number; queries: number };
  beforeAll(async () => {
    vqa = writeImageSubset(join(DATA_DIR, 'vqa-rad'), join(GEN, 'vqa-rad-sub'), {
      docs: VQA_DOCS,
      name: 'vqa-rad-sub',
    });
    medquad = writeSubset(join(DATA_DIR, 'medquad'), join(GEN, 'medquad-sub'), {
      docs: 600,
      queries: 150,
      name: 'medquad-sub',
    });
    s = await launch();
    s.page.on('request', (r) => {
      if (
        !isHubProbe(r) &&
        !r.url().startsWith('http://127.0.0.1') &&
        !r.url().startsWith('blob:') &&
        !r.url().startsWith('data:')
      )
        offsite.push(r.url());
    });
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('vqa-rad with generated CLIP: image+text queries with score and feature fusion, image-to-image with exclusions', async () => {
    const { page } = s;
    await page.goto(
      `${baseUrl}/?shard=/generated-shards/e2e-dense/vqa-rad-sub/&task=image-question-to-passage&retriever=dense&model=loupe-test/clip-tiny-random&device=wasm&dtype=fp32&run=1`,
    );
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    // Backend shown: WASM, fp32, threads (cross-origin isolated → 2; 1 where the browser sees one
    // core, as under test:slow), the model.
    const backend = await page.locator('[data-testid="backend"]').innerText();
    const threads = await isolatedWasmThreads(page);
    expect(backend).toMatch(new RegExp(`WASM · fp32 · ${threads} threads? · loupe-test/clip-tiny-random`));
    // Both fusion strategies ran; at text weight 0.5 they rank every query identically, so one
    // run stands for both (marked as such), and the message says so.
    const names = await page.locator('[data-testid="run-name"]').allInnerTexts();
    expect(names).toHaveLength(1);
    expect(names[0]).toContain('feature fusion (= score fusion 0.5)');
    expect(await page.locator('[data-testid="message"]').last().innerText()).toMatch(
      /ranked every query identically/,
    );
    // The random-weight model is marked on the run.
    expect(await page.locator('[data-testid="runs-table"] [data-testid="random-weights"]').count()).toBe(1);
    const feature = parseRun(await downloadText(page, 'export-run'), 'run.trec');
    expect(feature.size).toBe(vqa['image-question-to-passage']);
    const sidecar = JSON.parse(await downloadText(page, 'export-sidecar'));
    expect(sidecar.config).toMatchObject({
      kind: 'dense',
      modelId: 'loupe-test/clip-tiny-random',
      dtype: 'fp32',
      device: 'wasm',
    });
    expect(sidecar.config.fusion).toMatchObject({ mode: 'feature', sameAsScore: true });
    expect(sidecar.randomWeights).toBe(true);
    // The first run computed the corpus embeddings; the message says what came from cache.
    expect(await page.locator('[data-testid="message"]').last().innerText()).toMatch(/batches from cache/);

    // text-to-image ranks the document images: the image part of the corpus is embedded now.
    await page.selectOption('[data-testid="task-select"]', 'text-to-image');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    expect(parseRun(await downloadText(page, 'export-run'), 'run.trec').size).toBe(vqa['text-to-image']);

    // image-to-image: image-only queries; each query's own image is excluded from its ranking.
    await page.selectOption('[data-testid="task-select"]', 'image-to-image');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    const i2i = parseRun(await downloadText(page, 'export-run'), 'run.trec');
    expect(i2i.size).toBe(vqa['image-to-image']);
    const queries = readFileSync(join(GEN, 'vqa-rad-sub/queries.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((q) => q.task === 'image-to-image');
    for (const q of queries) {
      const ranked = i2i.get(q._id)!.map((d) => d.docId);
      expect(ranked.length).toBe(100);
      for (const x of q.exclude_ids) expect(ranked).not.toContain(x);
    }
    // The image embeddings of text-to-image are reused: nothing computed.
    expect(await page.locator('[data-testid="message"]').last().innerText()).toMatch(/, 0 computed/);

    // Search: text + an X-ray with the CLIP model; both fusions rank identically at 0.5, so one
    // column with a note (and a different weight gives two columns side by side).
    await page.evaluate(() => (location.hash = '#/search'));
    await page.selectOption('[data-testid="search-model"]', 'loupe-test/clip-tiny-random');
    await page.fill('[data-testid="search-input"]', 'is there a pneumothorax?');
    await page.setInputFiles(
      '[data-testid="search-image-input"]',
      join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg'),
    );
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-summary"]', { timeout: 120_000 });
    expect(await page.locator('[data-testid="result-column"]').count()).toBe(1);
    expect(await page.locator('[data-testid="fusion-note"]').innerText()).toMatch(
      /rank these results identically/,
    );
    expect(await page.locator('[data-testid="result-column"] li').count()).toBe(20);
    await page.evaluate(() => (location.hash = '#/benchmark'));
    await page.selectOption('[data-testid="task-select"]', 'image-question-to-passage');
    await page.fill('[data-testid="text-weight"]', '0.7');
    await page.evaluate(() => (location.hash = '#/search'));
    // A new question, submitted at once: its text is embedded when Search is pressed (no typing pause);
    // the image was embedded when it was added (the model was loaded), so it is not embedded again.
    await page.fill('[data-testid="search-input"]', 'is the lung collapsed?');
    await page.click('[data-testid="search-submit"]');
    await expect
      .poll(() => page.locator('[data-testid="result-column"] h2').allTextContents(), { timeout: 120_000 })
      .toEqual(['Score fusion (text weight 0.7)', 'Feature fusion']);
    expect(await page.locator('[data-testid="result-column"]').first().locator('li').count()).toBe(20);
    // The query's performance measures (bench:latency reads them): every stage of an image + text
    // query with two fusions was timed, except the image's preprocessing (done as it was added), and the
    // stages fit inside the end-to-end time.
    await page.waitForFunction(() => performance.getEntriesByName('loupe:query', 'measure').length === 1);
    const timing = await page.evaluate(() =>
      Object.fromEntries(
        ['tokenize', 'preprocess', 'encode', 'search', 'fuse', 'render', 'query'].map((s) => [
          s,
          performance.getEntriesByName(`loupe:${s}`, 'measure').map((e) => e.duration),
        ]),
      ),
    );
    expect(timing.preprocess).toEqual([]);
    for (const [stage, durations] of Object.entries(timing)) {
      if (stage === 'preprocess') continue;
      expect(durations.length, stage).toBeGreaterThan(0);
      for (const d of durations) expect(d, stage).toBeGreaterThanOrEqual(0);
    }
    // Two fusions: the second ranking and the columns are the fuse stage.
    expect(timing.fuse.length).toBe(2);
    expect(timing.encode[0]).toBeGreaterThan(0);
    expect(timing.tokenize[0]).toBeGreaterThan(0);
    const stages = Object.entries(timing)
      .filter(([s]) => s !== 'query')
      .flatMap(([, d]) => d)
      .reduce((a, b) => a + b, 0);
    expect(stages).toBeLessThanOrEqual(timing.query[0]);
    expect(offsite).toEqual([]);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('medquad with the generated bert-tiny encoder; a forced WebGPU failure falls back to WASM with the reason', async () => {
    const { page } = s;
    await page.goto(
      `${baseUrl}/?shard=/generated-shards/e2e-dense/medquad-sub/&retriever=dense&model=loupe-test/bert-tiny-random&device=webgpu&dtype=fp32&simulate-webgpu-failure=1&run=1`,
    );
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    expect(await page.getAttribute('[data-testid="backend"]', 'data-device')).toBe('wasm');
    expect(await page.locator('[data-testid="fallback-reason"]').innerText()).toMatch(
      /fell back to WASM: .+/,
    );
    const run = parseRun(await downloadText(page, 'export-run'), 'run.trec');
    expect(run.size).toBe(medquad.queries);
    const metrics = JSON.parse(await downloadText(page, 'export-json'));
    expect(metrics.queries).toBe(medquad.queries);
    expect(metrics.overall.ndcg_cut_10).toBeGreaterThanOrEqual(0);
    expect(offsite).toEqual([]);
  });
});
