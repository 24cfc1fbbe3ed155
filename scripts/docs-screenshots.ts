// Refreshes the README's pictures of the app (docs/*.png) from the real UI in headless Chromium:
// the Search view on vqa-rad (text + X-ray, generated CLIP model), the same on a phone, and the
// Benchmark view with a comparison. `npm run docs:screenshots`; tests never write into docs/.
import { createServer } from 'vite';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { launch } from '../tests/e2e/browser';
import { DATA_DIR } from '../tests/paths';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'docs');
const server = await createServer({
  configFile: join(ROOT, 'vite.config.ts'),
  server: { port: 0 },
  logLevel: 'warn',
});
await server.listen();
const address = server.httpServer!.address();
if (!address || typeof address === 'string') throw new Error('vite did not bind a TCP port');
const base = `http://127.0.0.1:${address.port}`;
const s = await launch();
const { page } = s;
const phase = (p: string) =>
  page.waitForSelector(`[data-testid="app"][data-phase="${p}"]`, { timeout: 600_000 });

try {
  mkdirSync(OUT, { recursive: true });
  const clip = 'dense(model=loupe-test/clip-tiny-random,dtype=fp32,device=wasm,fusion=both,alpha=0.7)';
  const q = new URLSearchParams({
    shard: '/shards/vqa-rad/',
    task: 'image-question-to-passage',
    runs: `bm25(k1=0.9,b=0.4);${clip}`,
    fuse: 'rrf(k=60)',
    compare: '1',
  });
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto(`${base}/?${q}#/benchmark`);
  await phase('done');
  await page.waitForSelector('[data-testid="comparison-table"]');
  await page.locator('[data-testid="query-list"] button').nth(2).click();
  await page.locator('[data-testid="compare"]').screenshot({ path: join(OUT, 'compare.png') });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(OUT, 'benchmark.png') });

  await page.evaluate(() => (location.hash = '#/search'));
  await page.selectOption('[data-testid="search-model"]', 'loupe-test/clip-tiny-random');
  await page.fill('[data-testid="search-input"]', 'is there a pneumothorax?');
  await page.setInputFiles(
    '[data-testid="search-image-input"]',
    join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg'),
  );
  await page.click('[data-testid="search-submit"]');
  await page.waitForSelector('[data-testid="search-summary"]', { timeout: 600_000 });
  await page.screenshot({ path: join(OUT, 'search.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(OUT, 'search-phone.png') });
  console.log(`docs: search.png, search-phone.png, benchmark.png, compare.png written to ${OUT}`);
} finally {
  await s.dispose();
  await server.close();
}
