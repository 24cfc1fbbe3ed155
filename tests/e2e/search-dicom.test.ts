// Search with a DICOM query: a .dcm dropped into the Search view ranks like the JPEG it was made from,
// and (the control) two different pictures do not rank alike, so the comparison can fail.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, type Session } from './browser';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const JPEG = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');
/** Another vqa-rad picture (a different study), for the control. */
const OTHER_JPEG = join(DATA_DIR, 'vqa-rad/images/synpic28210.jpg');

/** The query counter of the results on screen (data-seq of the summary), or 0 when none are shown. */
async function shownSeq(page: Page): Promise<number> {
  const summary = page.locator('[data-testid="search-summary"]');
  return (await summary.count()) ? Number(await summary.getAttribute('data-seq')) : 0;
}

/** Runs an image query and returns ITS top 10: waits for results newer than those shown before. */
async function top10(page: Page, file: string): Promise<string[]> {
  await page.setInputFiles('[data-testid="search-image-input"]', file);
  await page.waitForSelector('[data-testid="search-image-preview"]');
  const before = await shownSeq(page);
  await page.click('[data-testid="search-submit"]');
  await page.waitForFunction(
    (prev) =>
      Number(document.querySelector('[data-testid="search-summary"]')?.getAttribute('data-seq') ?? 0) > prev,
    before,
    { timeout: 300_000 },
  );
  expect(await shownSeq(page)).toBe(before + 1);
  const ids = await page
    .locator('[data-testid="results"] li button')
    .evaluateAll((b) => b.map((x) => x.getAttribute('data-doc') ?? ''));
  await page.click('text=remove image');
  return ids.slice(0, 10);
}

describe('Search with a DICOM query', () => {
  let s: Session;
  let dir: string;
  beforeAll(async () => {
    s = await launch();
    dir = mkdtempSync(join(tmpdir(), 'loupe-dcm-'));
  });
  afterAll(async () => {
    await s?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a .dcm (dcmtk img2dcm of a vqa-rad JPEG) gives the JPEG’s top 10, another picture does not; its header facts are shown', async () => {
    const { page } = s;
    const dcm = join(dir, 'query.dcm');
    execFileSync('img2dcm', [JPEG, dcm]);
    const otherDcm = join(dir, 'other.dcm');
    execFileSync('img2dcm', [OTHER_JPEG, otherDcm]);
    await page.goto(
      `${baseUrl}/?shard=/shards/vqa-rad/&task=image-to-image&device=wasm&dtype=fp32&search-model=loupe-test/clip-tiny-random#/search`,
    );
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
    const fromJpeg = await top10(page, JPEG);
    expect(fromJpeg).toHaveLength(10);
    // The control: a different picture ranks differently, so equal top 10s below mean something.
    const fromOther = await top10(page, OTHER_JPEG);
    expect(fromOther).toHaveLength(10);
    expect(fromOther).not.toEqual(fromJpeg);
    await page.setInputFiles('[data-testid="search-image-input"]', dcm);
    await expect.poll(() => page.locator('[data-testid="search-dicom"]').innerText()).toMatch(/^DICOM · /);
    await page.click('text=remove image');
    expect(await top10(page, dcm)).toEqual(fromJpeg);
    // And the other picture's .dcm ranks as that picture does, right after the first one's.
    expect(await top10(page, otherDcm)).toEqual(fromOther);
    expect(pageErrors(page).join('\n')).toBe('');
  }, 600_000);
});
