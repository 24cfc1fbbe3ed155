// DICOM in real Chromium: the DICOM demo shard (vqa-rad wrapped by img2dcm, made by
// scripts/make-dicom-shard.sh into gitignored generated-shards/; here from a subset of vqa-rad written
// at test time — its first documents, the queries they judge — so that CLIP embeds tens of images,
// not the whole shard twice) imports, runs BM25 and the generated
// CLIP model, and gives the JPEG shard's dense top-10 for every query; a .dcm ad-hoc query image gives
// the JPEG's results; a shard with a 12-bit JPEG Extended image fails naming that transfer syntax.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { parseRun } from '../../src/lib/core/eval/trec';
import { DATA_DIR } from '../paths';
import type { DicomHarness } from '../browser/dicom-harness';
import { harnessCaller, launch, pageErrors, phase, type Session } from './browser';
import { writeImageSubset } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
const call = harnessCaller<DicomHarness>('dicomHarness');
const CLIP = 'retriever=dense&model=loupe-test/clip-tiny-random&device=wasm&dtype=fp32';
/** Where the subset and its DICOM shards are written (gitignored; served at /generated-shards/e2e-dicom/). */
const GEN = join(ROOT, 'generated-shards/e2e-dicom');
const JPEG = '/generated-shards/e2e-dicom/vqa-rad-sub/';
const DICOM = '/generated-shards/e2e-dicom/vqa-rad-dicom/';
const BAD = '/generated-shards/e2e-dicom/vqa-rad-dicom-bad/';
const CT = '/generated-shards/e2e-dicom/ct-phantom-dicom/';
/** Documents kept from vqa-rad (synpic100132, which the tests name, among them). */
const NDOCS = 60;

async function downloadText(page: Page, testId: string) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

/** The run's top 10 document ids per query. */
function top10(run: ReturnType<typeof parseRun>): Map<string, string[]> {
  return new Map([...run].map(([q, docs]) => [q, docs.slice(0, 10).map((d) => d.docId)]));
}

describe('DICOM shards in Chromium', () => {
  let s: Session;
  let perTask: Record<string, number>;
  beforeAll(async () => {
    perTask = writeImageSubset(join(DATA_DIR, 'vqa-rad'), join(GEN, 'vqa-rad-sub'), {
      docs: NDOCS,
      include: ['synpic100132'],
      name: 'vqa-rad-sub',
    });
    execFileSync('bash', ['scripts/make-dicom-shard.sh', join(GEN, 'vqa-rad-sub'), GEN], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('vqa-rad as DICOM: BM25 runs; dense CLIP top-10 equals the JPEG shard’s', async () => {
    const { page } = s;
    const runs: Record<string, Map<string, string[]>> = {};
    for (const [name, shard] of [
      ['dicom', DICOM],
      ['jpeg', JPEG],
    ]) {
      await page.goto(`${baseUrl}/?shard=${shard}&task=image-to-image&${CLIP}&run=1`);
      await phase(page, 'done', 'error');
      expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
      runs[name] = top10(parseRun(await downloadText(page, 'export-run'), 'run.trec'));
      expect(runs[name].size).toBe(perTask['image-to-image']);
    }
    expect(runs.dicom).toEqual(runs.jpeg);

    // BM25 reads only the text: the same run on both shards.
    const bm25: Record<string, string> = {};
    for (const [name, shard] of [
      ['dicom', DICOM],
      ['jpeg', JPEG],
    ]) {
      await page.goto(`${baseUrl}/?shard=${shard}&task=image-question-to-passage&retriever=bm25&run=1`);
      await phase(page, 'done', 'error');
      expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
      bm25[name] = await downloadText(page, 'export-run');
    }
    // Nearly every image+question query matches some passage (over 400 of 451 in the whole shard).
    expect(parseRun(bm25.dicom, 'run.trec').size).toBeGreaterThan(
      perTask['image-question-to-passage'] * 0.88,
    );
    expect(bm25.dicom).toBe(bm25.jpeg);
    expect(pageErrors(page).join('\n')).toBe('');
  });

  test('the CT phantom series (16-bit, rescale, four transfer syntaxes) imports and runs', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=${CT}&task=image-to-image&${CLIP}&run=1`);
    await phase(page, 'done', 'error');
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    expect(parseRun(await downloadText(page, 'export-run'), 'run.trec').size).toBe(1);
  });

  test('a .dcm query file (Search drop entry points): same embedding as its JPEG, PNG equal to the pixels, windows', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/tests/browser/dicom-harness.html`);
    await page.waitForSelector('#status:has-text("ready")').catch(() => {
      throw new Error(`harness did not load: ${pageErrors(page).join('; ')}`);
    });
    const jpg = `${JPEG}images/synpic100132.jpg`;
    const dcm = `${DICOM}images/synpic100132.dcm`;
    const [a, b] = await call(page, 'embed', [jpg, dcm]);
    // Same JPEG bitstream, decoded by Chromium and by libjpeg-turbo (wasm): the vectors agree.
    const cos = a.reduce((x, v, i) => x + v * b[i], 0) / Math.hypot(...a) / Math.hypot(...b);
    expect(cos).toBeGreaterThan(0.9999);

    const opened = await call(page, 'open', dcm);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.png).toMatchObject({ type: 'image/png', maxDiff: 0 });
    expect(opened.info.transferSyntax.uid).toBe('1.2.840.10008.1.2.4.50');
    expect(await call(page, 'displayable', dcm)).toEqual({ same: false, type: 'image/png' });
    expect(await call(page, 'displayable', jpg)).toEqual({ same: true, type: 'image/jpeg' });

    // CT: the file's two windows listed; the default is the first, the second can be chosen.
    const ct = `${CT}images/ct-04.dcm`;
    const soft = await call(page, 'open', ct);
    const lung = await call(page, 'open', ct, 1);
    if (!soft.ok || !lung.ok) throw new Error('CT phantom did not open');
    expect(soft.info.windows).toEqual([
      { center: 40, width: 400, explanation: 'SOFT TISSUE' },
      { center: -600, width: 1500, explanation: 'LUNG' },
    ]);
    expect(soft.window).toMatchObject({ center: 40, width: 400, source: 'file', index: 0 });
    expect(lung.window).toMatchObject({ center: -600, width: 1500, source: 'file', index: 1 });
    expect(soft.info).toMatchObject({
      modality: 'CT',
      bodyPart: 'CHEST',
      rescaleIntercept: -1024,
      bitsStored: 12,
    });
    // Patient data stays out unless asked for.
    expect(soft.identifying).toBeUndefined();
    expect(JSON.stringify(soft)).not.toContain('Phantom^Synthetic');

    const bad = await call(page, 'open', `${BAD}images/synpic100132.dcm`);
    expect(bad).toMatchObject({ ok: false, name: 'DicomError' });
    expect(pageErrors(page)).toEqual([]);
  });

  test('an unsupported transfer syntax fails the import with file and syntax named', async () => {
    const { page } = s;
    await page.goto(`${baseUrl}/?shard=${BAD}`);
    const issues = page.locator('[data-testid="shard-issues"]');
    await issues.waitFor({ timeout: 120_000 });
    const text = await issues.innerText();
    expect(text).toContain('images/synpic100132.dcm');
    expect(text).toContain(
      '1.2.840.10008.1.2.4.51 (JPEG Extended (Process 2 & 4)) with 12-bit samples is not supported',
    );
  });
});
