// The built site (dist/) on a plain static server under a sub-path, with no COOP/COEP headers: the
// service worker makes the page cross-origin isolated (2 WASM threads), and after one visit the app
// works offline (cached shard, BM25, a dense query with a generated model) and says what to do when
// a hub model cannot be downloaded.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cpSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DATA_DIR } from '../paths';
import type { Page } from 'playwright-core';
import { launch, phase, type Session, isolatedWasmThreads } from './browser';
import { buildSite, serveStatic, type StaticServer } from './static-server';
import { packShard, writeSubset } from './shard-fixtures';

const ROOT = resolve(import.meta.dirname, '../..');
/** A build of its own (gitignored), so the test never depends on a stale dist/. */
const OUT = join(ROOT, '.test-results/deploy-dist');
const PREFIX = '/course/loupe/';
const MODEL = 'loupe-test/bert-tiny-random';
/** medquad's documents served here (of its 3,000). */
const DOCS = 1000;

/** The encoder worker's own counters (read in the worker: Playwright evaluates in workers too). */
async function encoderCounters(page: Page) {
  const w = page.workers().find((x) => x.url().includes('encoder.worker'));
  if (!w) throw new Error('no encoder worker');
  return w.evaluate(
    () => (self as unknown as { loupeEncoderCounters: Record<string, number> }).loupeEncoderCounters,
  );
}

/** A fresh profile's first dense run of medquad from `shardPath`: ms to the result, and the counters. */
async function firstDenseRun(page: Page, shardPath: string) {
  const t0 = Date.now();
  await page.goto(
    `${server.url}?shard=${shardPath}&retriever=dense&model=${MODEL}&device=wasm&dtype=fp32&run=1`,
  );
  expect(await phase(page, 'done', 'error')).toBe('done');
  return { ms: Date.now() - t0, counters: await encoderCounters(page) };
}

let server: StaticServer;

describe('static deploy under a sub-path, no COOP/COEP headers', () => {
  let s: Session;
  beforeAll(async () => {
    buildSite(OUT);
    // medquad with precomputed embeddings (as npm run build:demo packs every demo shard), and a
    // copy without them for the comparison.
    // 1,000 of its 3,000 documents in place of the build's copy: embedding the whole corpus (the
    // second test) stays in seconds. Packed in place, after the plain copy is taken.
    const served = join(OUT, 'shards/medquad');
    rmSync(served, { recursive: true, force: true });
    writeSubset(join(DATA_DIR, 'medquad'), served, { docs: DOCS });
    cpSync(served, join(OUT, 'shards-plain/medquad'), { recursive: true });
    packShard(served, ['--model', MODEL]);
    // vqa-rad's images in one zip, as npm run build:demo packs them (into the build's own copy, which
    // is writable even though the data folder is not).
    const vqa = join(OUT, 'shards/vqa-rad');
    expect(statSync(join(vqa, 'shard.json')).mode & 0o200).toBe(0o200);
    packShard(vqa, ['--images']);
    server = await serveStatic(OUT, PREFIX);
    s = await launch();
  }, 480_000);
  afterAll(async () => {
    await s?.dispose();
    await server?.close();
  });

  test('the service worker makes the page cross-origin isolated; dense runs on 2 WASM threads (1 on one core); precomputed embeddings: no corpus document embedded', async () => {
    const { page } = s;
    const index = JSON.parse(readFileSync(join(OUT, 'shards/index.json'), 'utf8'));
    // No absolute server path in the demo list: it works under any sub-path.
    expect(index.shards.map((x: { url: string }) => x.url)).toContain('shards/medquad/');
    for (const x of index.shards) expect(x.url.startsWith('/')).toBe(false);
    // A fresh profile: the service worker's reload, the model load and the queries; no corpus document.
    const run = await firstDenseRun(page, 'shards/medquad/');
    expect(run.counters).toMatchObject({ docsEmbedded: 0, batchesEmbedded: 0, precomputedRows: DOCS });
    console.log(`fresh profile, first dense result with precomputed embeddings: ${run.ms} ms`);
    // The offline cache waits until the page is quiet (2 s after the run): the visit's model load
    // and run had the CPU and the connections to themselves, and the service worker kept no copy of
    // what it passed on meanwhile (the precache fetches the shell whole). The test after next sees it
    // filled.
    const shellCaches = page.evaluate(async () =>
      (await caches.keys()).filter((n) => n.startsWith('loupe-shell-')),
    );
    expect(server.requests.filter((r) => r.endsWith('/sw-precache.json'))).toEqual([]);
    expect(await shellCaches).toEqual([]);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    // The headers came from the service worker (the server sends none).
    const marker = await page.evaluate(async () =>
      (await fetch(location.href, { method: 'HEAD' })).headers.get('X-Loupe-Isolation'),
    );
    expect(marker).toBe('service-worker');
    // 2 threads (1 where the browser sees one core: test:slow pins to one).
    const threads = await isolatedWasmThreads(page);
    expect(await page.locator('[data-testid="backend"]').innerText()).toMatch(
      new RegExp(`WASM · fp32 · ${threads} threads?`),
    );
    // Everything was requested under the sub-path: nothing assumed the origin root.
    expect(server.requests.filter((r) => !r.split(' ')[1].startsWith(PREFIX))).toEqual([]);
    // The demo list is there too (relative shards/index.json).
    await page.goto(server.url);
    await page.waitForSelector('[data-testid="demo-shards"] button[data-shard="medquad"]');
  });

  test('without precomputed embeddings the first dense query embeds the whole corpus', async () => {
    const fresh = await launch();
    try {
      const run = await firstDenseRun(fresh.page, 'shards-plain/medquad/');
      expect(run.counters).toMatchObject({ docsEmbedded: DOCS, precomputedRows: 0 });
      console.log(`fresh profile, first dense result without precomputed embeddings: ${run.ms} ms`);
    } finally {
      await fresh.dispose();
    }
  });

  test('after one visit it works offline: cached shard, an image + text query, BM25 on a task, dense with a generated model; the picker marks offline models', async () => {
    const { page, context } = s;
    const { version, files } = JSON.parse(readFileSync(join(OUT, 'sw-precache.json'), 'utf8'));
    // The worker has cached the app shell and the ONNX Runtime wasm.
    await expect
      .poll(
        () =>
          page.evaluate(async (name) => {
            if (!(await caches.has(name))) return 0;
            return (await (await caches.open(name)).keys()).length;
          }, `loupe-shell-${version}`),
        { timeout: 120_000 },
      )
      .toBe(files.length + 1);
    // An image + text query online first: vqa-rad, the generated CLIP model and its corpus embeddings
    // are cached by using them, as a visitor would.
    const imageQuery = async () => {
      await page.fill('[data-testid="search-input"]', 'is there a pneumothorax?');
      await page.setInputFiles(
        '[data-testid="search-image-input"]',
        join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg'),
      );
      await page.waitForSelector('[data-testid="search-image-preview"]');
      await page.click('[data-testid="search-submit"]');
      await page.waitForSelector('[data-testid="search-summary"]', { timeout: 150_000 });
      expect(await page.locator('[data-testid="search-summary"]').innerText()).toMatch(
        /results for “is there a pneumothorax\?” \+ the image with /,
      );
      expect(await page.locator('[data-testid="results"] li').count()).toBeGreaterThan(0);
    };
    await page.goto(
      `${server.url}?shard=shards/vqa-rad/&task=image-question-to-passage&search-model=loupe-test/clip-tiny-random&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready');
    // Its images came in one request, through the static host under the sub-path.
    const vqaRequests = server.requests.filter((r) => r.includes('/shards/vqa-rad/'));
    expect(vqaRequests.filter((r) => r.endsWith('/images.zip'))).toHaveLength(1);
    expect(vqaRequests.filter((r) => r.includes('/shards/vqa-rad/images/'))).toEqual([]);
    await imageQuery();
    // The model's files reach the browser cache once the page is quiet after the query (not while the
    // visitor waits on it): a visitor who stays half a second has them offline.
    await expect
      .poll(
        () =>
          page.evaluate(async () => {
            if (!(await caches.has('transformers-cache'))) return [];
            const keys = await (await caches.open('transformers-cache')).keys();
            return keys
              .map((r) => r.url)
              .filter((u) => u.includes('/clip-tiny-random/onnx/'))
              .map((u) => u.split('/').pop());
          }),
        { timeout: 60_000 },
      )
      .toEqual(expect.arrayContaining(['text_model.onnx', 'vision_model.onnx']));

    await context.setOffline(true);
    try {
      // Offline, the Search view defaults to an image model that loads without the hub, and the
      // picker says which models do.
      await page.goto(`${server.url}?shard=shards/vqa-rad/&task=image-question-to-passage#/search`);
      await phase(page, 'ready');
      const picker = page.locator('[data-testid="search-model"]');
      await expect.poll(() => picker.inputValue()).toBe('loupe-test/clip-tiny-random');
      const options = await picker.locator('option').allInnerTexts();
      expect(options.find((o) => /clip-tiny|CLIP tiny/i.test(o))).toMatch(
        /· offline \((cached|generated)\)$/,
      );
      expect(options.filter((o) => /needs the network$/.test(o)).length).toBeGreaterThan(0);
      await imageQuery();

      await page.goto(`${server.url}?shard=shards/medquad/&task=qa-answer-retrieval&run=1`);
      expect(await phase(page, 'done', 'error')).toBe('done');
      expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
      const ndcg = Number(
        await page.locator('tr[data-scope="overall"] td[data-measure="ndcg_cut_10"]').innerText(),
      );
      expect(ndcg).toBeGreaterThan(0.1);
      // A hub cross-encoder cannot load offline and a rerank takes no stand-in: the error names the
      // cross-encoders that load offline here (the generated ones this build serves), no other kind.
      await page.selectOption('[data-testid="rerank-model"]', 'ms-marco-minilm-l6-v2');
      await page.fill('[data-testid="rerank-topn"]', '5');
      await page.click('[data-testid="rerank-run"]');
      const failed = page.locator('[data-testid="message"][data-kind="error"] .text');
      await expect.poll(() => failed.count(), { timeout: 120_000 }).toBeGreaterThan(0);
      const choices = /Available offline here: (.*)\./.exec(await failed.last().innerText())?.[1] ?? '';
      expect(choices).toMatch(/loupe-test\/cross-encoder-tiny-random \((generated|cached)\)/);
      expect(choices).not.toMatch(/loupe-test\/(clip|bert|minilm|xlmr)/);
      // The dense run of the first visit is stored (opening its link again shows it); a Search query
      // loads the generated model from the browser's cache and embeds offline.
      await page.goto(
        `${server.url}?shard=shards/medquad/&search-model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32&q=glaucoma#/search`,
      );
      await phase(page, 'ready', 'error');
      await page.click('[data-testid="search-submit"]');
      await page.waitForSelector('[data-testid="search-summary"]', { timeout: 120_000 });
      expect(await page.locator('[data-testid="results"] li').count()).toBe(20);

      // A hub model cannot load: the run falls back once to a text model that loads offline, and one
      // line names the model, the host, the model used instead and where to self-host the files (fp32:
      // the generated model was cached in fp32 by the first visit).
      await page.goto(
        `${server.url}?shard=shards/medquad/&retriever=dense&model=all-minilm-l6-v2&device=wasm&dtype=fp32&run=1`,
      );
      expect(await phase(page, 'done', 'error')).toBe('done');
      const msg = await page.locator('[data-testid="message"][data-kind="warning"] .text').innerText();
      expect(msg).toContain('all-MiniLM-L6-v2 could not be downloaded');
      expect(msg).toContain('huggingface.co');
      expect(msg).toContain('bert-tiny');
      expect(msg).toContain('(cached)');
      expect(msg).toContain('models/Xenova/all-MiniLM-L6-v2/');
      expect(msg).not.toMatch(/WebGPU/i);
      expect(await page.locator('[data-testid="message"][data-kind="error"]').count()).toBe(0);

      // "why?" needs the run's own model, with no stand-in: with its files gone from the browser's
      // cache, offline, the explanation says so and names the text models that load offline here.
      await page.evaluate(async () => {
        const cache = await caches.open('transformers-cache');
        for (const r of await cache.keys()) if (r.url.includes('/bert-tiny-random/')) await cache.delete(r);
      });
      await page.goto(`${server.url}?shard=shards/medquad/&task=qa-answer-retrieval#/benchmark`);
      await phase(page, 'ready', 'done');
      await page.locator('[data-testid="run-name"]', { hasText: /tiny/i }).first().click();
      await page.locator('[data-testid="query-list"] button').first().click();
      const detail = page.locator('[data-testid="query-detail"]');
      await detail.locator('[data-testid="why"]').first().click();
      const why = detail.locator('[data-testid="why-panel"] .error');
      await why.waitFor({ timeout: 120_000 });
      const said = await why.innerText();
      expect(said).toMatch(/Could not download \S+ of model loupe-test\/bert-tiny-random/);
      expect(said).toMatch(/(Available offline here: [^.]+|No model is available offline here)\.$/);
      expect(said).not.toMatch(/cross-encoder|clip-tiny/);
    } finally {
      await context.setOffline(false);
    }
  });
});
