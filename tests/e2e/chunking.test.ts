// Long texts (issue 11 item 5): xling-med's case-to-explanation (clinical cases of 100–500 words)
// with the generated bert-tiny encoder, whose 128-token window makes most cases and explanations
// several chunks. Random weights: the rankings exercise the pipeline, not retrieval quality.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { harnessCaller, launch, pageErrors, phase, type Session } from './browser';
import type { EncoderHarness } from '../browser/encoder-harness';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const URL_MAX =
  '/?shard=/shards/xling-med/&task=case-to-explanation&retriever=dense&model=loupe-test/bert-tiny-random' +
  '&device=wasm&dtype=fp32&chunks=max&overlap=32&run=1#/benchmark';

type Counters = Record<
  | 'docsEmbedded'
  | 'batchesEmbedded'
  | 'batchesReused'
  | 'chunksEmbedded'
  | 'multiChunkDocs'
  | 'batchesNotSaved',
  number
>;

/** The encoder worker's own counters (Playwright evaluates in workers too); null before it exists. */
async function encoderCounters(page: Page): Promise<Counters | null> {
  const w = page.workers().find((x) => x.url().includes('encoder.worker'));
  if (!w) return null;
  return w
    .evaluate(() => (self as unknown as { loupeEncoderCounters?: Counters }).loupeEncoderCounters ?? null)
    .catch(() => null);
}

describe('long texts: chunked dense retrieval', () => {
  let s: Session;
  /** The max run's first document for cq-en-test-004 (the Search view's ad-hoc query must agree). */
  let maxTop: string | null = null;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('documents longer than the window are embedded in several chunks, a reload mid-way resumes, the drill-down shows the matched chunks', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    // First visit: the run starts; reload once some chunked batches are stored.
    await page.goto(`${baseUrl}${URL_MAX}`);
    let before: Counters | null = null;
    await expect
      .poll(
        async () => {
          before = await encoderCounters(page);
          return before?.batchesEmbedded ?? 0;
        },
        { timeout: 90_000, interval: 100 },
      )
      .toBeGreaterThanOrEqual(3);
    expect(before!.chunksEmbedded).toBeGreaterThan(before!.docsEmbedded);
    // The tab goes away mid-run and the same link is opened again (a plain reload no longer reruns:
    // `run=1` is read once and then left out of the URL, issue 20).
    await page.goto(`${baseUrl}${URL_MAX}`);

    // After the reload the run starts again in a fresh worker and reuses every batch saved before.
    expect(await phase(page, 'done', 'error')).toBe('done');
    const after = (await encoderCounters(page))!;
    expect(after.batchesReused).toBeGreaterThanOrEqual(before!.batchesEmbedded);
    expect(after.batchesEmbedded).toBeGreaterThan(0);
    expect(after.batchesNotSaved).toBe(0);
    // Several chunks per long document: more chunks than documents, and many documents over the window.
    expect(after.chunksEmbedded).toBeGreaterThan(after.docsEmbedded);
    expect(after.multiChunkDocs).toBeGreaterThan(0);
    const message = await page.locator('[data-testid="message"]').allInnerTexts();
    const m = /Long texts: (\d+) chunks for (\d+) documents \((\d+) longer than one window\)/.exec(
      message.join('\n'),
    );
    expect(m, message.join('\n')).not.toBeNull();
    expect(Number(m![2])).toBe(2353);
    expect(Number(m![1])).toBeGreaterThan(2353);
    expect(Number(m![3])).toBeGreaterThan(0);
    // The run records the strategy (name, configuration, TREC tag).
    expect(await page.locator('[data-testid="run-meta"]').innerText()).toContain(
      'chunks max-sim (overlap 32)',
    );
    expect(await page.inputValue('[data-testid="chunking-select"]')).toBe('max');

    // Drill-down of a long English case (147 words: more than one 126-token window).
    await page.getByLabel('Filter queries').fill('25-year-old woman who wishes to become pregnant');
    await page.locator('[data-testid="query-list"] button[data-qid="cq-en-test-004"]').click();
    const detail = page.locator('[data-testid="query-detail"]');
    maxTop = await detail.locator('[data-testid="ranking"] li').first().getAttribute('data-doc');
    await detail.locator('[data-testid="why"]').first().click();
    const chunks = detail.locator('[data-testid="why-chunks"]');
    await chunks.waitFor({ timeout: 60_000 });
    expect(await chunks.getAttribute('data-aggregate')).toBe('max');
    const q = detail.locator('[data-testid="why-query-chunk"]');
    const d = detail.locator('[data-testid="why-doc-chunk"]');
    const qCount = Number(await q.getAttribute('data-count'));
    const qIndex = Number(await q.getAttribute('data-index'));
    expect(qCount).toBeGreaterThanOrEqual(2);
    expect(qIndex).toBeGreaterThanOrEqual(1);
    expect(qIndex).toBeLessThanOrEqual(qCount);
    expect(await q.innerText()).toMatch(new RegExp(`^query chunk ${qIndex} of ${qCount}: \\S`));
    expect(await d.innerText()).toMatch(/^document chunk \d+ of \d+: \S/);
    // The chunk's text is the query's own words (uncased WordPiece decodes to lower case), as text.
    const qText = (await q.locator('.chunk-text').innerText()).toLowerCase();
    expect(qText.split(/\s+/).filter((w) => /^[a-z]{6,}$/.test(w)).length).toBeGreaterThan(5);
    expect(await q.locator('.chunk-text *').count()).toBe(0);
    // The matched pair's cosine is the run's score for that document (max over chunk pairs).
    const why = await detail.locator('[data-testid="why-dense"]').innerText();
    const cosine = Number(/cosine of the query text with the document: (-?[0-9.]+)/.exec(why)![1]);
    const runScore = Number(/run score: (-?[0-9.]+)/.exec(why)![1]);
    expect(Math.abs(cosine - runScore)).toBeLessThan(2e-4);

    // The control: mean reads the same chunk vectors (nothing embedded again) and is a run of its own.
    const total = after.batchesReused + after.batchesEmbedded;
    const beforeMean = (await encoderCounters(page))!;
    await page.selectOption('[data-testid="chunking-select"]', 'mean');
    await page.click('[data-testid="run-task"]');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="run-meta"]')?.textContent?.includes('chunks mean'),
      null,
      { timeout: 60_000 },
    );
    expect(await phase(page, 'done', 'error')).toBe('done');
    const mean = (await encoderCounters(page))!;
    expect(mean.batchesEmbedded).toBe(beforeMean.batchesEmbedded);
    expect(mean.batchesReused - beforeMean.batchesReused).toBe(total);
    const names = await page.locator('[data-testid="run-name"]').allInnerTexts();
    expect(names.filter((n) => /chunks (max-sim|mean) \(overlap 32\)/.test(n))).toHaveLength(2);
    expect(errors).toEqual([]);
  });

  test('Search view: a long pasted case is chunked with the same setting and ranks as the max run did', async () => {
    const { page } = s;
    expect(maxTop).not.toBeNull();
    const text = readFileSync(join(DATA_DIR, 'xling-med/queries.jsonl'), 'utf8')
      .split('\n')
      .map((l) => (l.trim() ? (JSON.parse(l) as { _id: string; text: string }) : null))
      .find((q) => q?._id === 'cq-en-test-004')!.text;
    await page.goto(
      `${baseUrl}/?shard=/shards/xling-med/&task=case-to-explanation&search-model=loupe-test/bert-tiny-random` +
        `&device=wasm&dtype=fp32&chunks=max&q=${encodeURIComponent(text)}#/search`,
    );
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 60_000 });
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-summary"]', { timeout: 60_000 });
    const column = page.locator('[data-testid="result-column"]').first();
    expect(await column.getAttribute('aria-label')).toContain('chunks max-sim (overlap 32)');
    expect(await column.locator('[data-testid="results"] li').count()).toBe(20);
    expect(await column.locator('[data-testid="results"] li button').first().getAttribute('data-doc')).toBe(
      maxTop,
    );
    // The corpus chunks came from the cache: this page's encoder worker embedded none.
    const c = (await encoderCounters(page))!;
    expect(c.batchesEmbedded).toBe(0);
    expect(c.batchesReused).toBeGreaterThan(0);
  }, 90_000);

  // The worker's windows, framed by hand, give the tokenizer's own vectors: a text that fits is one
  // chunk equal to its embedding without chunking, and a long text is cut into full windows.
  test('worker: a text that fits is one chunk equal to its plain embedding, a long one full windows (WordPiece and SentencePiece)', async () => {
    const { page } = s;
    const call = harnessCaller<EncoderHarness>('encoderHarness');
    await page.goto(`${baseUrl}/tests/browser/encoder-harness.html`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const short = ['pneumothorax', 'Гипертония и диабет', 'What are the symptoms of the common cold?'];
    const long = Array.from({ length: 250 }, (_, i) => `finding ${i} of the chest radiograph`).join('; ');
    const cos = (a: number[], b: number[]) => a.reduce((x, v, i) => x + v * b[i], 0);
    // bert-tiny reads 128 tokens, xlmr-tiny 512 (the default): windows of 126 and 510 text tokens.
    for (const [model, window] of [
      ['loupe-test/bert-tiny-random', 126],
      ['loupe-test/xlmr-tiny-random', 510],
    ] as const) {
      const r = await call(page, 'load', model, { device: 'wasm', dtype: 'fp32', allowRemoteModels: false });
      expect(r.ok, JSON.stringify(r)).toBe(true);
      const texts = [...short, long];
      const first = await call(page, 'embedTexts', texts, 'document', 4);
      const chunks = await call(page, 'embedTextChunks', texts, 'document', {
        aggregate: 'max',
        overlap: 32,
      });
      expect(chunks.counts.slice(0, 3), model).toEqual([1, 1, 1]);
      // Each text's mean (the worker's): a text of one chunk is that chunk; the long one points
      // where the sum of its chunks does.
      for (let i = 0; i < 3; i++) expect(cos(chunks.mean[i], chunks.rows[i]), model).toBeGreaterThan(0.99999);
      const sum = chunks.rows.slice(3).reduce((a, r) => a.map((v, j) => v + r[j]));
      const norm = Math.hypot(...sum);
      expect(cos(chunks.mean[3], sum) / norm / Math.hypot(...chunks.mean[3]), model).toBeGreaterThan(0.99999);
      expect(chunks.counts[3], model).toBeGreaterThanOrEqual(3);
      for (let i = 0; i < 3; i++) expect(cos(chunks.rows[i], first[i]), model).toBeGreaterThan(0.99999);
      // The long text: its first chunk is the truncated text, closer to the truncated embedding than
      // any later chunk. Not equal: transformers.js truncation cuts the framed sequence, dropping the
      // closing [SEP] / </s> that every chunk keeps (the truncating path, `first`, is left as it was).
      const own = cos(chunks.rows[3], first[3]);
      for (let c = 4; c < chunks.rows.length; c++)
        expect(cos(chunks.rows[c], first[3]), model).toBeLessThan(own);
      // Full windows (the model's maximum minus its 2 special tokens), the first at the start.
      const spans = chunks.spans.slice(6);
      for (let c = 0; c < spans.length / 2; c++) expect(spans[2 * c + 1] - spans[2 * c]).toBe(window);
      expect(spans[0]).toBe(0);
    }
  }, 60_000);
});
