// Parquet (MIEB layout) import end to end in Chromium: the vqa-rad dataset written as Parquet by
// tests/fixtures/parquet/make-mieb.ts imports from File objects, a zip and a URL (HTTP range requests)
// to one cache entry, and BM25 on its derived tasks scores exactly like the JSONL vqa-rad shard. A
// broken row group, a missing column and a qrels row naming an unknown document each fail with the
// Parquet file, row group / row and the reason, and leave IndexedDB as it was. In the app, a dropped
// Parquet folder shows its column mapping for confirmation, imports with it and remembers it.
import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Harness, Outcome } from '../browser/harness';
import { makeMieb, MIEB_OUT_DIR, writeParquet, type MiebFixture } from '../fixtures/parquet/make-mieb';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { shotPath } from './artifacts';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/harness.html`;
const call = harnessCaller<Harness>('harness');

function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)).split(sep).join('/'))
    .sort();
}

/** URL of a generated dataset folder on the Vite server. */
function urlOf(dir: string): string {
  return `/${relative(join(import.meta.dirname, '../..'), dir)
    .split(sep)
    .join('/')}/`;
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r)}`);
  return r;
}

function issues(r: Outcome) {
  if (r.ok || !('issues' in r)) throw new Error(`expected validation issues, got ${JSON.stringify(r)}`);
  return r.issues;
}

describe('Parquet (MIEB layout) import in Chromium', () => {
  let session: Session;
  let page: Page;
  let fx: MiebFixture;
  /** A dataset whose corpus `text` is an INT64 column, as DuckDB writes one (issue 36 item 9). */
  const intText = join(MIEB_OUT_DIR, 'int-text');

  beforeAll(async () => {
    fx = makeMieb(MIEB_OUT_DIR);
    const int64 = (name: string) => ({ name, kind: 'int64' as const });
    const str = (name: string) => ({ name, kind: 'string' as const });
    const rows = [{ id: 'd1', text: 1n }];
    writeParquet(join(intText, 'corpus/test-00000-of-00001.parquet'), [str('id'), int64('text')], rows, 8);
    writeParquet(
      join(intText, 'query/test-00000-of-00001.parquet'),
      [str('id'), str('text')],
      [{ id: 'q1', text: 'x' }],
      8,
    );
    writeParquet(
      join(intText, 'qrels/test-00000-of-00001.parquet'),
      [str('query-id'), str('corpus-id'), int64('score')],
      [{ 'query-id': 'q1', 'corpus-id': 'd1', score: 1n }],
      8,
    );
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    for (const [name, dir] of Object.entries({
      valid: fx.valid,
      broken: fx.brokenRowGroup,
      missing: fx.missingColumn,
      unknown: fx.unknownId,
      intText,
    })) {
      await call(page, 'fetchFiles', name, urlOf(dir), filesOf(dir));
    }
  });

  afterAll(async () => {
    await session?.dispose();
  });

  it('imports from files, a zip and a URL to one shard whose BM25 metrics equal the JSONL shard’s', async () => {
    const jsonl = ok(await call(page, 'importUrl', '/shards/vqa-rad/'));
    const fromFiles = ok(await call(page, 'importFiles', 'valid', { topFolder: 'vqa-rad-mieb' }));
    expect(fromFiles.cached).toBe(false);
    expect(fromFiles.summary.counts).toEqual({ docs: 315, queries: 575, qrels: 6434, images: 315 });
    expect(fromFiles.summary.format).toBe('beir+images');
    expect(fromFiles.summary.name).toBe('vqa-rad-mieb');
    expect(fromFiles.summary.notice).toContain('MIEB layout');
    expect(fromFiles.summary.hash).not.toBe(jsonl.summary.hash);

    const fromZip = ok(await call(page, 'importZip', 'valid', { topFolder: 'vqa-rad-mieb' }));
    const ranges: string[] = [];
    const onRequest = (r: import('playwright-core').Request) => {
      const range = r.headers()['range'];
      if (range && r.url().endsWith('.parquet')) ranges.push(range);
    };
    page.context().on('request', onRequest);
    const fromUrl = ok(await call(page, 'importUrl', urlOf(fx.valid), { files: filesOf(fx.valid) }));
    page.context().off('request', onRequest);
    // The URL is read by range requests (footers, then row groups), not whole downloads.
    expect(ranges.length).toBeGreaterThan(5);
    for (const r of [fromZip, fromUrl]) {
      expect(r.summary.hash).toBe(fromFiles.summary.hash);
      expect(r.cached).toBe(true);
    }

    const a = await call(page, 'bm25Metrics', jsonl.summary.hash);
    const b = await call(page, 'bm25Metrics', fromFiles.summary.hash);
    // Each vqa-rad task is one Parquet task (split "test" × query modality), query for query.
    const pairs = {
      'text-to-image': 'test-text',
      'image-question-to-passage': 'test-image-text',
      'image-to-image': 'test-image',
    };
    expect(Object.keys(b).sort()).toEqual(Object.values(pairs).sort());
    for (const [task, pqTask] of Object.entries(pairs)) {
      expect(b[pqTask].queries).toEqual(a[task].queries);
      expect(b[pqTask].metrics).toEqual(a[task].metrics);
    }
    // Not vacuous: BM25 finds something on the tasks with query text (image-only queries have none).
    expect(b['test-text'].metrics.ndcg_cut_10).toBeGreaterThan(0.1);
    expect(b['test-image-text'].metrics.recip_rank).toBeGreaterThan(0.1);
    const loaded = await call(page, 'load', fromFiles.summary.hash);
    if (!loaded.ok) throw new Error(loaded.message);
    expect(loaded.firstDoc).toMatchObject({
      id: 'synpic676',
      meta: { organ: 'chest', imaging_modality: 'x-ray' },
    });
    const img = await call(page, 'getImage', fromFiles.summary.hash, loaded.firstDoc.image!);
    expect(img).toMatchObject({ type: 'image/jpeg', head: [0xff, 0xd8, 0xff] });
  });

  it('detects the mapping, remembers a confirmed one and imports with an edited one', async () => {
    const inspected = await call(page, 'inspectFiles', 'valid');
    if (!inspected.ok) throw new Error(JSON.stringify(inspected.issues));
    const { mapping, identity, splits } = inspected.inspection;
    expect(splits).toEqual(['test']);
    expect(mapping.qrels).toEqual({ queryId: 'query-id', corpusId: 'corpus-id', score: 'score' });
    expect(mapping.corpus).toMatchObject({ id: 'id', text: 'text', image: 'image', modality: 'modality' });

    expect(await call(page, 'initialMapping', 'valid')).toEqual({ mapping, remembered: false });
    const edited = {
      ...mapping,
      name: 'vqa-rad (edited)',
      corpusModality: { 'test-text': 'image' as const },
    };
    await call(page, 'rememberMapping', identity, edited);
    expect(await call(page, 'initialMapping', 'valid')).toEqual({ mapping: edited, remembered: true });

    const r = ok(await call(page, 'importFiles', 'valid', { parquet: edited }));
    expect(r.summary.name).toBe('vqa-rad (edited)');
    const tasks = Object.fromEntries(r.summary.manifest.tasks.map((t) => [t.id, t.corpusModality]));
    expect(tasks).toEqual({
      'test-text': 'image',
      'test-image-text': 'image+text',
      'test-image': 'image+text',
    });
  });

  it('fails broken files with file, row group / row and reason, caching nothing', async () => {
    const before = await call(page, 'counts');

    const broken = issues(await call(page, 'importFiles', 'broken'));
    expect(broken[0]).toMatchObject({
      file: 'corpus/test-00000-of-00002.parquet',
      rowGroup: 1,
      code: 'parquet-corrupt',
    });
    expect(broken[0].message).toMatch(/row group 1 cannot be decoded/);

    const missing = issues(await call(page, 'importFiles', 'missing'));
    expect(missing).toEqual([
      {
        file: 'corpus/test-00001-of-00002.parquet',
        code: 'missing-column',
        message: expect.stringContaining('column "text" (the document text) is not in this file'),
      },
    ]);

    const unknown = issues(await call(page, 'importFiles', 'unknown'));
    expect(unknown).toEqual([
      {
        file: 'qrels/test-00000-of-00001.parquet',
        rowGroup: 0,
        row: 100,
        code: 'unknown-document',
        message: 'document "synpic-not-there" is not in the corpus (2 Parquet files)',
      },
    ]);

    // An integer `text` column is refused by file, column, type and the type it needs (issue 36 item 9).
    expect(issues(await call(page, 'importFiles', 'intText'))).toEqual([
      {
        file: 'corpus/test-00000-of-00001.parquet',
        code: 'wrong-type',
        message:
          'column "text" (the document text) holds number values (Parquet INT64); the document text needs string or binary values',
      },
    ]);

    expect(await call(page, 'counts')).toEqual(before);
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  it('in the app: a dropped folder shows its mapping, a wrong edit is flagged, the confirmed one imports and is remembered', async () => {
    const ui = await session.context.newPage();
    const errors: string[] = [];
    ui.on('pageerror', (e) => errors.push(String(e)));
    try {
      await ui.goto(`${baseUrl}/#/shards`);
      await ui.waitForSelector(
        '[data-testid="app"][data-phase="idle"], [data-testid="app"][data-phase="ready"]',
      );
      await ui.setInputFiles('[data-testid="folder-input"]', fx.valid);
      const panel = ui.getByTestId('parquet-mapping');
      const corpus = panel.getByRole('group', { name: 'Corpus' });
      // Detected from the files' schemas: nothing is imported until the user confirms.
      await expect
        .poll(() => corpus.getByLabel('Text', { exact: true }).inputValue(), { timeout: 60_000 })
        .toBe('text');
      expect(await corpus.getByLabel('Image', { exact: true }).inputValue()).toBe('image');
      expect(
        await panel.getByRole('group', { name: 'Qrels' }).getByLabel('Relevance score').inputValue(),
      ).toBe('score');
      expect(await panel.textContent()).toContain('4 Parquet files');

      // A text column as the image: the reason is named and the import cannot start.
      await corpus.getByLabel('Image', { exact: true }).selectOption('title');
      await expect
        .poll(() => panel.getByRole('alert').textContent())
        .toContain('column "title" (the document image) holds string values');
      const confirm = panel.getByRole('button', { name: 'Import with these columns' });
      expect(await confirm.isDisabled()).toBe(true);
      await corpus.getByLabel('Image', { exact: true }).selectOption('image');
      await corpus.getByRole('checkbox', { name: 'plane' }).uncheck();
      await panel.getByLabel('Shard name').fill('vqa-rad via the app');
      // The mapping fits a phone screen and a desktop one.
      for (const width of [390, 1440]) {
        await ui.setViewportSize({ width, height: 900 });
        const [sw, iw] = await ui.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        expect(sw).toBeLessThanOrEqual(iw);
        await panel.screenshot({ path: shotPath(`parquet-mapping-${width}.png`) });
      }
      await confirm.click();

      // Imported and opened; its tasks run on the Benchmark view.
      await expect
        .poll(
          () =>
            ui
              .getByTestId('shard-name')
              .innerText()
              .catch(() => ''),
          { timeout: 120_000 },
        )
        .toBe('vqa-rad via the app');
      expect(await panel.count()).toBe(0);
      await ui.evaluate(() => (location.hash = '#/benchmark'));
      await ui.selectOption('[data-testid="task-select"]', 'test-text');
      await ui.click('[data-testid="run-task"]');
      await ui.waitForSelector('[data-testid="app"][data-phase="done"]', { timeout: 120_000 });
      const ndcg = Number(
        await ui.locator('tr[data-scope="overall"] td[data-measure="ndcg_cut_10"]').innerText(),
      );
      expect(ndcg).toBeGreaterThan(0.1);

      // The same dataset again: the confirmed mapping (name, metadata) comes back, said as such.
      await ui.evaluate(() => (location.hash = '#/shards'));
      await ui.setInputFiles('[data-testid="folder-input"]', fx.valid);
      await expect
        .poll(() => panel.textContent(), { timeout: 60_000 })
        .toContain('the mapping you confirmed last time');
      expect(await panel.getByLabel('Shard name').inputValue()).toBe('vqa-rad via the app');
      expect(await corpus.getByRole('checkbox', { name: 'plane' }).isChecked()).toBe(false);
      await panel.getByRole('button', { name: 'Cancel' }).click();
      expect(await panel.count()).toBe(0);

      // A qrels row naming an unknown document: the file, row group and row, and nothing cached.
      const cachedBefore = await ui.locator('[data-testid="cached-shards"] li').count();
      await ui.setInputFiles('[data-testid="folder-input"]', fx.unknownId);
      await panel.getByRole('button', { name: 'Import with these columns' }).click({ timeout: 60_000 });
      const problems = ui.getByTestId('shard-issues');
      await expect
        .poll(() => problems.textContent(), { timeout: 60_000 })
        .toContain('qrels/test-00000-of-00001.parquet (row group 0, row 100)');
      expect(await problems.textContent()).toContain('document "synpic-not-there" is not in the corpus');
      expect(await ui.locator('[data-testid="cached-shards"] li').count()).toBe(cachedBefore);
      // The shard opened before stays open.
      expect(await ui.getByTestId('shard-name').innerText()).toBe('vqa-rad via the app');
      await ui.screenshot({ path: shotPath('parquet-issues.png'), fullPage: true });

      // An integer text column: the mapping names file, column and type, and nothing can be imported.
      await ui.setInputFiles('[data-testid="folder-input"]', intText);
      await expect
        .poll(() => panel.getByRole('alert').textContent(), { timeout: 60_000 })
        .toContain(
          'corpus/test-00000-of-00001.parquet column "text" (the document text) holds number values (Parquet INT64)',
        );
      expect(await panel.getByRole('button', { name: 'Import with these columns' }).isDisabled()).toBe(true);
      expect(await ui.locator('[data-testid="cached-shards"] li').count()).toBe(cachedBefore);
      expect(errors).toEqual([]);
    } finally {
      await ui.close();
    }
  });
});
