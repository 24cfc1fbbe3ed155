// End-to-end: the real UI in headless Chromium, the real IndexedDB, the real workers.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { zipSync, strToU8 } from 'fflate';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { DATA_DIR } from '../paths';
import { evaluate, standardMeasures } from '../../src/lib/core/eval/metrics';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';

const baseUrl = inject('baseUrl');
const MEASURES = standardMeasures([1, 5, 10, 100]);

/** Every file of a folder, zipped in memory (optionally under a top folder). */
function zipFolder(dir: string, top = ''): Uint8Array {
  const files: Record<string, Uint8Array> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else files[top + relative(dir, p).split('\\').join('/')] = readFileSync(p);
    }
  };
  walk(dir);
  return zipSync(files, { level: 0 });
}

/** Shows a view through its URL hash (as a link or the back button would). */
async function view(page: Page, route: 'search' | 'benchmark' | 'shards') {
  await page.evaluate((r) => (location.hash = `#/${r}`), route);
  await page.waitForSelector(`[data-testid="app"][data-route="${route}"]`);
}

/** Waits until `name` is the open shard (its name in the header). */
async function opened(page: Page, name: string, timeout = 60_000) {
  await expect
    .poll(
      () =>
        page
          .locator('[data-testid="shard-name"]')
          .innerText()
          .catch(() => ''),
      { timeout },
    )
    .toBe(name);
}

async function cachedNames(page: Page): Promise<string[]> {
  await view(page, 'shards');
  return page
    .locator('[data-testid="cached-shards"] li')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-name') ?? ''));
}

async function overall(page: Page, measure: string): Promise<number> {
  return Number(await page.locator(`tr[data-scope="overall"] td[data-measure="${measure}"]`).innerText());
}

/** Waits until the locator's text contains `text` (shard text is asserted literally). */
async function containsText(loc: Locator, text: string) {
  await expect.poll(() => loc.first().innerText(), { timeout: 60_000 }).toContain(text);
}

async function visible(loc: Locator) {
  await loc.first().waitFor({ state: 'visible', timeout: 60_000 });
}

async function count(loc: Locator, n: number) {
  await expect.poll(() => loc.count(), { timeout: 60_000 }).toBe(n);
}

async function download(page: Page, testId: string): Promise<string> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  const path = await dl.path();
  return readFileSync(path, 'utf8');
}

describe('Loupe in Chromium', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('medquad: demo shard → BM25 run → metrics equal a re-scoring of the exported run → drill-down', async () => {
    const { page } = s;
    await page.goto(baseUrl);
    await phase(page, 'idle');
    await page.click('[data-testid="demo-shards"] button[data-shard="medquad"]');
    await opened(page, 'medquad');
    // Opening a shard lands on Search, with the query box and the image input in the first viewport.
    expect(await page.getAttribute('[data-testid="app"]', 'data-route')).toBe('search');
    await expect.poll(() => cachedNames(page)).toEqual(['medquad']);
    await view(page, 'benchmark');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');

    const ndcg = await overall(page, 'ndcg_cut_10');
    expect(ndcg).toBeGreaterThan(0.3);

    // The exported TREC files, scored again outside the UI, give the same numbers (to 4 decimals
    // in the table; exactly in metrics.json).
    const runText = await download(page, 'export-run');
    const qrelsText = await download(page, 'export-qrels');
    const metrics = JSON.parse(await download(page, 'export-json'));
    const run = parseRun(runText, 'run.trec');
    expect(run.size).toBe(1000);
    const again = evaluate(parseQrels(qrelsText, 'qrels.trec'), run, MEASURES, { complete: true });
    for (const m of MEASURES) expect(again.all[m]).toBe(metrics.overall[m]);
    expect(again.all.ndcg_cut_10.toFixed(4)).toBe(ndcg.toFixed(4));
    // Per-field breakdown exists for medquad's `field` metadata.
    await count(page.locator('tr[data-scope="field=GARD"]'), 1);
    const csv = await download(page, 'export-csv');
    expect(csv.split('\n')[0]).toContain('nDCG@10');

    // Drill-down: the worst query shows its ranking and where its relevant answer ended up.
    await page.locator('[data-testid="query-list"] button').first().click();
    const detail = page.locator('[data-testid="query-detail"]');
    await visible(detail);
    await count(detail.locator('[data-testid="relevant-list"] li'), 1);
    expect(await detail.locator('[data-testid="ranking"] li').count()).toBeGreaterThan(0);

    // "why?" on a BM25 run: the term contributions add up to the document's score.
    await detail.locator('[data-testid="why"]').first().click();
    await visible(detail.locator('[data-testid="why-bm25"] tbody tr'));
    const total = Number(await detail.locator('[data-testid="why-bm25"] tr.total td.num').innerText());
    const first = Number(
      (await detail.locator('[data-testid="ranking"] li').first().locator('.score').innerText()).replace(
        'score ',
        '',
      ),
    );
    expect(Math.abs(total - first)).toBeLessThan(2e-4);
    // Ids are shown as the shard spells them.
    const qid = await detail.getAttribute('data-qid');
    expect(await detail.locator('.qid code').innerText()).toBe(qid);

    // Reload: the URL reopens the same shard and view (issue 20), from the cache: the source is not
    // read again.
    let shardRequests = 0;
    page.on('request', (r) => {
      if (r.url().includes('/shards/medquad/')) shardRequests++;
    });
    await page.reload();
    await opened(page, 'medquad');
    await page.waitForSelector('[data-testid="app"][data-route="benchmark"]');
    expect(await cachedNames(page)).toEqual(['medquad']);
    await view(page, 'benchmark');
    // The run was stored with the shard: listed again, with the same numbers.
    await count(page.locator('[data-testid="runs-table"] tbody tr'), 1);
    expect(await overall(page, 'ndcg_cut_10')).toBe(ndcg);
    // Rename survives a reload.
    await page.click('[data-testid="rename-run"]');
    await page.fill('[data-testid="run-name-input"]', 'baseline <b>bm25</b>');
    await page.press('[data-testid="run-name-input"]', 'Enter');
    await containsText(page.locator('[data-testid="run-name"]'), 'baseline <b>bm25</b>');
    // Re-importing the exported TREC file gives a second run with identical per-query metrics.
    const runFile = join(mkdtempSync(join(tmpdir(), 'loupe-run-')), 'exported.trec');
    writeFileSync(runFile, runText);
    await page.setInputFiles('[data-testid="import-run"]', runFile);
    await count(page.locator('[data-testid="runs-table"] tbody tr'), 2);
    const reimported = JSON.parse(await download(page, 'export-json'));
    expect(reimported.run.config.kind).toBe('import');
    expect(reimported.perQuery).toEqual(metrics.perQuery);
    await page.click('[data-testid="runs-table"] tr.current [data-testid="delete-run"]');
    await count(page.locator('[data-testid="runs-table"] tbody tr'), 1);
    await page.reload();
    await opened(page, 'medquad');
    await view(page, 'benchmark');
    await containsText(page.locator('[data-testid="run-name"]'), 'baseline <b>bm25</b>');
    await count(page.locator('[data-testid="runs-table"] tbody tr'), 1);

    // Search: BM25 (the text shard's default), ranked results with the query's terms marked.
    await view(page, 'search');
    await page.fill('[data-testid="search-input"]', 'symptoms of glaucoma');
    await page.press('[data-testid="search-input"]', 'Enter');
    await visible(page.locator('[data-testid="results"] li').first());
    expect(await page.locator('[data-testid="results"] li').count()).toBe(20);
    expect(
      (await page.locator('[data-testid="results"] li mark').allInnerTexts()).map((t) => t.toLowerCase()),
    ).toContain('glaucoma');
    // A click opens the document.
    await page.locator('[data-testid="results"] li button').first().click();
    await visible(page.locator('[data-testid="document-dialog"]'));
    await page.click('[data-testid="close-document"]');
    expect(shardRequests).toBe(0);

    // Delete (confirmed, its undo window left to pass): gone from the list, and after a reload too.
    await view(page, 'shards');
    await page.click('[data-testid="cached-shards"] li[data-name="medquad"] [data-testid="delete-shard"]');
    await page.click('[data-testid="confirm-delete-shard"]');
    await expect.poll(() => cachedNames(page)).toEqual([]);
    await page.getByTestId('undo-delete').waitFor({ state: 'detached', timeout: 30_000 });
    await page.reload();
    await phase(page, 'idle');
    expect(await cachedNames(page)).toEqual([]);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('vqa-rad from a folder and from a zip: one cache entry, BM25 over finding passages', async () => {
    const { page } = s;
    await page.goto(baseUrl);
    await phase(page, 'idle');
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="folder-input"]', join(DATA_DIR, 'vqa-rad'));
    await opened(page, 'vqa-rad');
    await expect.poll(() => cachedNames(page)).toEqual(['vqa-rad']);

    await view(page, 'benchmark');
    await page.selectOption('[data-testid="task-select"]', 'text-to-image');
    await containsText(page.locator('[data-testid="modality-note"]'), 'image-only document');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    expect(await overall(page, 'ndcg_cut_10')).toBeGreaterThan(0.1);
    // Per-organ breakdown is not query metadata here; image-question queries inherit it below.
    await page.locator('[data-testid="query-list"] button').first().click();
    await visible(page.locator('[data-testid="query-detail"] [data-testid="ranking"] img').first());

    await page.selectOption('[data-testid="task-select"]', 'image-to-image');
    await visible(page.locator('[data-testid="image-query-note"]'));
    expect(await page.locator('[data-testid="run-task"]').isDisabled()).toBe(true);

    await page.selectOption('[data-testid="task-select"]', 'image-question-to-passage');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await count(page.locator('tr[data-scope="organ=chest"]'), 1);

    // The same shard as a zip (files inside a top folder) is the same content: still one entry.
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="zip-input"]', {
      name: 'vqa-rad.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zipFolder(join(DATA_DIR, 'vqa-rad'), 'vqa-rad/')),
    });
    await phase(page, 'ready');
    await opened(page, 'vqa-rad');
    expect(await cachedNames(page)).toEqual(['vqa-rad']);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('a broken shard names file and line, caches nothing, and the page stays usable', async () => {
    const { page } = s;
    await page.goto(baseUrl);
    await phase(page, 'idle');
    const before = await cachedNames(page);
    const corpus = [
      '{"_id": "d1", "title": "", "text": "first"}',
      '{"_id": "d2", "title": "", "text": "second"}',
      '{"_id": "d3", "title": "", "text": "third"',
    ].join('\n');
    const zip = zipSync({
      'corpus.jsonl': strToU8(corpus + '\n'),
      'queries.jsonl': strToU8('{"_id": "q1", "text": "first", "task": "t"}\n'),
      'qrels/test.tsv': strToU8('query-id\tcorpus-id\tscore\nq1\td1\t1\n'),
      'shard.json': strToU8(
        JSON.stringify({
          name: 'broken',
          format: 'beir+images',
          tasks: [{ id: 't', query_modality: 'text', corpus_modality: 'text' }],
        }),
      ),
    });
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="zip-input"]', {
      name: 'broken.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zip),
    });
    const issues = page.locator('[data-testid="shard-issues"]');
    await containsText(issues, 'corpus.jsonl:3');
    expect(await cachedNames(page)).toEqual(before);
    await page.reload();
    await phase(page, 'idle');
    expect(await cachedNames(page)).toEqual(before);
    // Still usable: a good shard loads right after.
    await view(page, 'shards');
    await page.click('[data-testid="demo-shards"] button[data-shard="r2med-demo"]');
    await opened(page, 'r2med-demo');
    await view(page, 'shards');
    // R2MED's truncated demo: qrels name documents missing from its corpus → a warning, not a crash.
    await visible(page.locator('[data-testid="shard-warnings"]'));
  });

  test('shard text is shown as text, never run as HTML', async () => {
    const { page } = s;
    await page.goto(baseUrl);
    await phase(page, 'idle');
    let dialogs = 0;
    page.on('dialog', async (d) => {
      dialogs++;
      await d.dismiss();
    });
    const evil = '<img src=x onerror=alert(1)> lesion <b>bold</b>';
    const zip = zipSync({
      'corpus.jsonl': strToU8(
        [
          JSON.stringify({ _id: 'd1', title: '<script>alert(2)</script>', text: evil }),
          JSON.stringify({ _id: 'd2', title: 'plain', text: 'nothing to see here' }),
        ].join('\n') + '\n',
      ),
      'queries.jsonl': strToU8(JSON.stringify({ _id: 'q1', text: 'lesion <i>x</i>', task: 't' }) + '\n'),
      'qrels/test.tsv': strToU8('query-id\tcorpus-id\tscore\nq1\td1\t1\n'),
      'shard.json': strToU8(
        JSON.stringify({
          name: 'xss',
          format: 'beir+images',
          tasks: [{ id: 't', query_modality: 'text', corpus_modality: 'text' }],
        }),
      ),
    });
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="zip-input"]', {
      name: 'xss.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zip),
    });
    await opened(page, 'xss');
    await view(page, 'benchmark');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    await page.locator('[data-testid="query-list"] button').first().click();
    const ranking = page.locator('[data-testid="ranking"]');
    await containsText(ranking, evil);
    await containsText(ranking, '<script>alert(2)</script>');
    await expect.poll(() => page.locator('[data-testid="query-text"]').innerText()).toBe('lesion <i>x</i>');
    expect(await page.locator('img[src="x"], b:has-text("bold"), i:has-text("x")').count()).toBe(0);
    await view(page, 'search');
    await page.fill('[data-testid="search-input"]', 'lesion');
    await page.press('[data-testid="search-input"]', 'Enter');
    await containsText(page.locator('[data-testid="results"]'), evil);
    await page.locator('[data-testid="results"] li button').first().click();
    await containsText(page.locator('[data-testid="document-dialog"]'), '<script>alert(2)</script>');
    await page.click('[data-testid="close-document"]');
    expect(await page.locator('img[src="x"], b:has-text("bold"), i:has-text("x")').count()).toBe(0);
    expect(dialogs).toBe(0);
    await view(page, 'shards');
    await page.click('[data-testid="cached-shards"] li[data-name="xss"] [data-testid="delete-shard"]');
    await page.click('[data-testid="confirm-delete-shard"]');
  });

  test('a 50 MB line is refused by the default limit; raised by the URL option, it streams with progress and cancel', async () => {
    const { page } = s;
    await page.goto(baseUrl);
    await phase(page, 'idle');
    const before = await cachedNames(page);
    const big = 'carcinoma '.repeat(5 * 1024 * 1024); // 50 MiB of text in one document line
    const files = {
      'corpus.jsonl': strToU8(
        JSON.stringify({ _id: 'huge', title: '', text: big }) +
          '\n' +
          '{"_id": "small", "title": "", "text": "pneumothorax"}\n',
      ),
      'queries.jsonl': strToU8('{"_id": "q1", "text": "pneumothorax", "task": "t"}\n'),
      'qrels/test.tsv': strToU8('query-id\tcorpus-id\tscore\nq1\tsmall\t1\n'),
      'shard.json': strToU8(
        JSON.stringify({
          name: 'big-line',
          format: 'beir+images',
          tasks: [{ id: 't', query_modality: 'text', corpus_modality: 'text' }],
        }),
      ),
    };
    // Playwright refuses in-memory uploads over 50 MB: go through a file.
    const zip = join(mkdtempSync(join(tmpdir(), 'loupe-big-')), 'big-line.zip');
    writeFileSync(zip, zipSync(files, { level: 0 }));

    // No real corpus has a 50 MB document: the default per-line limit refuses it, naming file and line.
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="zip-input"]', zip);
    await containsText(page.locator('[data-testid="shard-issues"]'), 'corpus.jsonl:1');
    expect(await cachedNames(page)).toEqual(before);

    // Above the default limits (8 MiB per line, 4 Mi characters per field), raised by URL options, it is
    // read, streaming. Cancel mid-way: the job disappears, a message says so, nothing is cached.
    await page.goto(`${baseUrl}/?maxLineMB=64&maxFieldMB=64`);
    await phase(page, 'idle');
    await view(page, 'shards');
    await page.setInputFiles('[data-testid="zip-input"]', zip);
    await page.waitForSelector('[data-testid="job"]');
    await page.click('[data-testid="job"] [data-testid="cancel"]');
    await containsText(page.locator('[data-testid="message"]'), 'cancelled');
    await page.reload();
    await phase(page, 'idle');
    expect(await cachedNames(page)).toEqual(before);

    // Then the whole import, watching that progress is reported while the worker reads it.
    const seen = new Set<string>();
    const watch = setInterval(async () => {
      const t = await page
        .locator('[data-testid="job"] .text')
        .allInnerTexts()
        .catch(() => []);
      for (const x of t) seen.add(x.split(':')[0]);
    }, 50);
    await page.setInputFiles('[data-testid="zip-input"]', zip);
    await opened(page, 'big-line', 120_000);
    clearInterval(watch);
    expect(seen.size).toBeGreaterThan(0);
    await expect.poll(() => cachedNames(page)).toContain('big-line');
    await view(page, 'benchmark');
    await page.click('[data-testid="run-task"]');
    await phase(page, 'done');
    expect(await overall(page, 'recip_rank')).toBe(1);
    await view(page, 'shards');
    await page.click('[data-testid="cached-shards"] li[data-name="big-line"] [data-testid="delete-shard"]');
    await page.click('[data-testid="confirm-delete-shard"]');
  });
});
