// Search with a DICOM query: a .dcm dropped into the Search view ranks like the JPEG it was made from,
// and (the control) two different pictures do not rank alike, so the comparison can fail.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  test('a .dcm whose JPEG data is corrupt: the error names the file, the frame and what libjpeg said (as dcmdjpeg does)', async () => {
    const { page } = s;
    const good = join(dir, 'good.dcm');
    execFileSync('img2dcm', [JPEG, good]);
    const bytes = new Uint8Array(readFileSync(good));
    // The JPEG stream's first DHT marker (FFC4) becomes FF02, a marker no JPEG decoder knows.
    const soi = bytes.findIndex((b, i) => b === 0xff && bytes[i + 1] === 0xd8 && bytes[i + 2] === 0xff);
    const dht = bytes.findIndex((b, i) => i > soi && b === 0xff && bytes[i + 1] === 0xc4);
    expect(soi).toBeGreaterThan(0);
    expect(dht).toBeGreaterThan(soi);
    bytes[dht + 1] = 0x02;
    const bad = join(dir, 'corrupt.dcm');
    writeFileSync(bad, bytes);
    // dcmtk (IJG libjpeg) on the same file: "F: <libjpeg's message>: decompressing file: …".
    const ref = spawnSync('dcmdjpeg', [bad, join(dir, 'out.dcm')], { encoding: 'utf8' });
    expect(ref.status).not.toBe(0);
    const said = /^F: (.+?): decompressing file/m.exec(ref.stderr + ref.stdout)?.[1];
    expect(said).toBe('Unsupported marker type 0x02');
    await page.goto(
      `${baseUrl}/?shard=/shards/vqa-rad/&task=image-to-image&device=wasm&dtype=fp32&search-model=loupe-test/clip-tiny-random#/search`,
    );
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
    await page.setInputFiles('[data-testid="search-image-input"]', bad);
    const error = page.locator('[data-testid="search-error"]');
    await error.waitFor();
    // libjpeg's message first (turbojpeg may add its own line after it), never a number.
    const want =
      'corrupt.dcm: 1.2.840.10008.1.2.4.50 (JPEG Baseline (Process 1)) pixel data of frame 0 could not be ' +
      `decoded: libjpeg-turbo: ${said}`;
    const text = await error.innerText();
    // libjpeg's message first; turbojpeg may add its own line after it ("; …"), never a number.
    expect(text.slice(0, want.length)).toBe(want);
    expect(text.slice(want.length)).toMatch(/^(; [A-Za-z].*)?$/);
    expect(pageErrors(page).join('\n')).toBe('');
  }, 300_000);
});
