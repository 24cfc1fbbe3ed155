// The built site (dist/) on a plain static server under a sub-path, with no COOP/COEP headers: the
// service worker makes the page cross-origin isolated (2 WASM threads), and after one visit the app
// works offline (cached shard, BM25, a dense query with a generated model) and says what to do when
// a hub model cannot be downloaded.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, type Session } from './browser';
import { serveStatic, type StaticServer } from './static-server';

const ROOT = resolve(import.meta.dirname, '../..');
/** A build of its own (gitignored), so the test never depends on a stale dist/. */
const OUT = join(ROOT, '.test-results/deploy-dist');
const PREFIX = '/course/loupe/';

async function phase(page: Page, ...phases: string[]) {
  const sel = phases.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', ');
  await page.waitForSelector(sel, { timeout: 150_000 });
  return page.getAttribute('[data-testid="app"]', 'data-phase');
}

describe('static deploy under a sub-path, no COOP/COEP headers', () => {
  let server: StaticServer;
  let s: Session;
  beforeAll(async () => {
    execFileSync('npx', ['vite', 'build', '--outDir', OUT, '--emptyOutDir', '--logLevel', 'warn'], {
      cwd: ROOT,
      stdio: 'pipe',
      // vitest sets NODE_ENV=test; a deploy is a production build.
      env: { ...process.env, NODE_ENV: 'production' },
    });
    server = await serveStatic(OUT, PREFIX);
    s = await launch();
  }, 180_000);
  afterAll(async () => {
    await s?.dispose();
    await server?.close();
  });

  test('the service worker makes the page cross-origin isolated; dense runs on 2 WASM threads', async () => {
    const { page } = s;
    const index = JSON.parse(readFileSync(join(OUT, 'shards/index.json'), 'utf8'));
    // No absolute server path in the demo list: it works under any sub-path.
    expect(index.shards.map((x: { url: string }) => x.url)).toContain('shards/medquad/');
    for (const x of index.shards) expect(x.url.startsWith('/')).toBe(false);
    await page.goto(
      `${server.url}?shard=shards/medquad/&retriever=dense&model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32&run=1`,
    );
    expect(await phase(page, 'done', 'error')).toBe('done');
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    // The headers came from the service worker (the server sends none).
    const marker = await page.evaluate(async () =>
      (await fetch(location.href, { method: 'HEAD' })).headers.get('X-Loupe-Isolation'),
    );
    expect(marker).toBe('service-worker');
    expect(await page.locator('[data-testid="backend"]').innerText()).toMatch(/WASM · fp32 · 2 threads/);
    // Everything was requested under the sub-path: nothing assumed the origin root.
    expect(server.requests.filter((r) => !r.split(' ')[1].startsWith(PREFIX))).toEqual([]);
    // The demo list is there too (relative shards/index.json).
    await page.goto(server.url);
    await page.waitForSelector('[data-testid="demo-shards"] button[data-shard="medquad"]');
  });

  test('after one visit it works offline: cached shard, BM25 on a task, dense with a generated model', async () => {
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
    await context.setOffline(true);
    try {
      await page.goto(`${server.url}?shard=shards/medquad/&task=qa-answer-retrieval&run=1`);
      expect(await phase(page, 'done', 'error')).toBe('done');
      expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
      const ndcg = Number(
        await page.locator('tr[data-scope="overall"] td[data-measure="ndcg_cut_10"]').innerText(),
      );
      expect(ndcg).toBeGreaterThan(0.1);
      await page.goto(
        `${server.url}?shard=shards/medquad/&retriever=dense&model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32&run=1`,
      );
      expect(await phase(page, 'done', 'error')).toBe('done');
      expect(await page.locator('[data-testid="backend"]').innerText()).toMatch(/2 threads/);

      // A hub model cannot load: the message names the model, the file, the host and the offline choices.
      await page.goto(
        `${server.url}?shard=shards/medquad/&retriever=dense&model=all-minilm-l6-v2&device=wasm&dtype=q8&run=1`,
      );
      expect(await phase(page, 'error')).toBe('error');
      const msg = await page.locator('[data-testid="message"]').innerText();
      expect(msg).toContain('all-minilm-l6-v2');
      expect(msg).toContain('huggingface.co');
      expect(msg).toMatch(/config\.json|tokenizer|\.onnx/);
      expect(msg).toContain('loupe-test/bert-tiny-random (cached)');
      expect(msg).toContain('models/Xenova/all-MiniLM-L6-v2/');
      expect(msg).not.toMatch(/WebGPU/i);
    } finally {
      await context.setOffline(false);
    }
  });
});
