// Reference vectors checked (issue 37, item 3), in real Chromium. A small medquad shard (120 of its
// answers, real text; 6 queries) is packed by `npm run pack-shard` with the generated XLM-R tiny
// model (random weights: the rankings exercise the pipeline, not retrieval quality; 32 dimensions,
// like the generated CLIP's text tower, so "another model" fits the sidecar's dimension) and copied
// three times with a wrong set whose sidecar still states the right settings (reference-sets.ts):
// a wrong document prefix, CLS pooling, and unit vectors of another model. Opened by URL, the right
// set passes the probe on WASM (a Benchmark run, the check in its details) and on SwiftShader WebGPU
// (a Search); each wrong set is refused before any result with the minimum cosine shown, and Run
// anyway gives a run marked unchecked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DATA_DIR } from '../paths';
import { launch, phase, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';
import { packShard, writeSubset } from './shard-fixtures';
import { writeWrongSet, type WrongWay } from './reference-sets';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/xlmr-tiny-random';
const TASK = 'qa-answer-retrieval';
const WRONG: WrongWay[] = ['prefix', 'pooling', 'model'];

describe('the check of a shard’s reference vectors', () => {
  let dir: string;
  let server: RangeServer;
  let s: Session;
  let page: Page;
  const shardUrl = (name: string) => `${server.url}shards/${name}/`;
  const runUrl = (name: string, device = 'wasm') =>
    `${baseUrl}/?shard=${shardUrl(name)}&task=${TASK}&retriever=dense&model=${MODEL}&device=${device}&dtype=fp32&run=1`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-reference-'));
    const right = join(dir, 'shards/ref-right');
    writeSubset(join(DATA_DIR, 'medquad'), right, { docs: 120, queries: 6, name: 'ref-right' });
    packShard(right, ['--model', MODEL]);
    for (const way of WRONG)
      await writeWrongSet(right, join(dir, `shards/ref-${way}`), `ref-${way}`, MODEL, way);
    server = await serveRanges(dir, '/');
    s = await launch();
    page = s.page;
  }, 600_000);

  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the right set passes on WASM: the check is a step of the plan and shown in the run’s details', async () => {
    await page.goto(runUrl('ref-right'));
    expect(await phase(page, 'done', 'error')).toBe('done');
    const plan = await page.locator('[data-testid="run-plan"] [data-testid="plan-step"]').allInnerTexts();
    expect(plan[1]).toMatch(
      /^Checked the shard’s reference vectors: a probe of 16 of the shard's documents \(seed 37\) embedded with fp32 on wasm and compared with the stored rows of embeddings\/loupe-test\/xlmr-tiny-random\/fp32\/text\.npy/,
    );
    const check = page.locator('[data-testid="run-panel"] [data-testid="reference-check"]');
    expect(await check.getAttribute('data-status')).toBe('passed');
    const min = Number(await check.getAttribute('data-min'));
    console.log(`reference check, right set on WASM: min cosine ${min.toFixed(6)}`);
    expect(min).toBeGreaterThanOrEqual(0.999);
    expect(await check.locator('[data-testid="reference-summary"]').innerText()).toMatch(
      /^Passed: 16 documents embedded here \(fp32 on wasm\) match the stored rows; lowest cosine (0\.9\d{3}|1\.0000) ≥ 0\.999\.$/,
    );
    // Recorded with the run: still there after a reload (the run from IndexedDB).
    await page.reload();
    await phase(page, 'done', 'ready');
    await page.locator('[data-testid="run-panel"] [data-testid="reference-check"]').waitFor();
    expect(await check.getAttribute('data-status')).toBe('passed');
  });

  test('the right set passes on SwiftShader WebGPU (the first Search with the model)', async () => {
    await page.goto(
      `${baseUrl}/?shard=${shardUrl('ref-right')}&task=${TASK}&search-model=${MODEL}&device=webgpu&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    await page.fill('[data-testid="search-input"]', 'What are the symptoms of glaucoma ?');
    await page.click('[data-testid="search-submit"]');
    const line = page.locator('[data-testid="search-reference"]');
    await line.waitFor({ timeout: 300_000 });
    expect(await line.getAttribute('data-status')).toBe('passed');
    expect(await line.getAttribute('data-device')).toBe('webgpu');
    const min = Number(await line.getAttribute('data-min'));
    console.log(`reference check, right set on WebGPU: min cosine ${min.toFixed(6)}`);
    expect(min).toBeGreaterThanOrEqual(0.999);
    expect(await page.locator('[data-testid="results"] [data-doc]').count()).toBeGreaterThan(0);
  });

  for (const way of WRONG)
    test(`a set made with the wrong ${way} is refused before any result, with the minimum cosine shown`, async () => {
      await page.goto(runUrl(`ref-${way}`));
      await phase(page, 'done', 'error');
      const check = page.locator('[data-testid="benchmark-view"] > [data-testid="reference-check"]');
      await check.waitFor();
      expect(await check.getAttribute('data-status')).toBe('failed');
      const min = Number(await check.getAttribute('data-min'));
      expect(min).toBeLessThan(0.999);
      expect(await check.locator('[data-testid="reference-min"]').innerText()).toBe(min.toFixed(4));
      expect(await check.locator('[data-testid="reference-cosine"]').count()).toBe(16);
      const causes = await check.locator('[data-testid="reference-cause"]').allInnerTexts();
      expect(causes.length).toBeGreaterThan(0);
      // Unrelated vectors name another model first, half-related ones the pooling, close ones a prefix.
      expect(causes[0]).toMatch(
        { model: /^another model or revision/, pooling: /^pooling/, prefix: /^document prefix/ }[way],
      );
      console.log(`reference check, wrong ${way}: min cosine ${min.toFixed(4)}; first cause: ${causes[0]}`);
      // No run was recorded: nothing ranked.
      expect(await page.locator('[data-testid="run-panel"]').count()).toBe(0);
      if (way !== 'prefix') return;
      // Run anyway: the run goes on, recorded as unchecked.
      await page.click('[data-testid="run-anyway"]');
      expect(await phase(page, 'done', 'error')).toBe('done');
      const recorded = page.locator('[data-testid="run-panel"] [data-testid="reference-check"]');
      await recorded.waitFor();
      expect(await recorded.getAttribute('data-status')).toBe('unchecked');
      expect(await recorded.locator('[data-testid="reference-summary"]').innerText()).toMatch(
        /^Unchecked: run anyway although the lowest cosine was 0\.\d{4}/,
      );
      const plan = await page.locator('[data-testid="run-plan"] [data-testid="plan-step"]').allInnerTexts();
      expect(plan[1]).toMatch(/not checked: run anyway as asked/);
    });

  test('a refused Search shows the check and asks before searching anyway', async () => {
    await page.goto(
      `${baseUrl}/?shard=${shardUrl('ref-model')}&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    await page.fill('[data-testid="search-input"]', 'What are the symptoms of glaucoma ?');
    await page.click('[data-testid="search-submit"]');
    const check = page.locator('[data-testid="reference-check"][data-status="failed"]');
    await check.waitFor({ timeout: 300_000 });
    expect(Number(await check.getAttribute('data-min'))).toBeLessThan(0.5);
    expect(await page.locator('[data-testid="results"] [data-doc]').count()).toBe(0);
    await page.click('[data-testid="run-anyway"]');
    await page
      .locator('[data-testid="reference-check"][data-status="unchecked"]')
      .waitFor({ timeout: 300_000 });
    expect(await page.locator('[data-testid="results"] [data-doc]').count()).toBeGreaterThan(0);
  });

  test('after Remove embeddings the next Search embeds the corpus and checks no set', async () => {
    // Still on the wrong-model shard, its refusal on record in this tab and in the encoder worker.
    await page.evaluate(() => (location.hash = '#/shards'));
    const shard = page
      .getByTestId('storage-panel')
      .locator('[data-testid="storage-shards"] li', { hasText: 'ref-model' });
    const remove = shard.getByTestId('remove-embeddings');
    await remove.click();
    await remove.click();
    await expect.poll(() => remove.count(), { timeout: 60_000 }).toBe(0);
    await page.evaluate(() => (location.hash = '#/search'));
    const seq = () =>
      page.evaluate(
        () => document.querySelector('[data-testid="search-summary"]')?.getAttribute('data-seq') ?? null,
      );
    const before = await seq();
    await page.fill('[data-testid="search-input"]', 'What causes glaucoma ?');
    await page.click('[data-testid="search-submit"]');
    // Until the query's results come, or it is refused again.
    const refused = page.locator('[data-testid="reference-check"][data-status="failed"]');
    await expect
      .poll(async () => (await seq()) !== before || (await refused.count()) > 0, { timeout: 300_000 })
      .toBe(true);
    // The set is gone: nothing to check, so no check is shown (neither the old refusal nor a new one).
    expect(await page.locator('[data-testid="reference-check"]').count()).toBe(0);
    expect(await page.locator('[data-testid="search-reference"]').count()).toBe(0);
    expect(await page.locator('[data-testid="results"] [data-doc]').count()).toBeGreaterThan(0);
  });
});
