// Search with a DICOM query: a .dcm dropped into the Search view ranks like the JPEG it was made from.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, type Session } from './browser';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const JPEG = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');

async function top10(page: Page, file: string): Promise<string[]> {
  await page.setInputFiles('[data-testid="search-image-input"]', file);
  await page.waitForSelector('[data-testid="search-image-preview"]');
  await page.click('[data-testid="search-submit"]');
  await page.waitForSelector('[data-testid="search-summary"]', { timeout: 300_000 });
  const ids = await page
    .locator('[data-testid="results"] li button')
    .evaluateAll((b) => b.map((x) => x.getAttribute('data-doc') ?? ''));
  await page.click('text=remove image');
  return ids.slice(0, 10);
}

describe('Search with a DICOM query', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('a .dcm (dcmtk img2dcm of a vqa-rad JPEG) gives the JPEG’s top 10; its header facts are shown', async () => {
    const { page } = s;
    const dcm = join(mkdtempSync(join(tmpdir(), 'loupe-dcm-')), 'query.dcm');
    execFileSync('img2dcm', [JPEG, dcm]);
    await page.goto(
      `${baseUrl}/?shard=/shards/vqa-rad/&task=image-to-image&device=wasm&dtype=fp32&search-model=loupe-test/clip-tiny-random#/search`,
    );
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
    const fromJpeg = await top10(page, JPEG);
    expect(fromJpeg).toHaveLength(10);
    await page.setInputFiles('[data-testid="search-image-input"]', dcm);
    await expect.poll(() => page.locator('[data-testid="search-dicom"]').innerText()).toMatch(/^DICOM · /);
    await page.click('text=remove image');
    expect(await top10(page, dcm)).toEqual(fromJpeg);
    expect(pageErrors(page).join('\n')).toBe('');
  }, 600_000);
});
