// The Shards view's Storage panel in the real app: what this site keeps (a shard's runs, corpus
// embeddings and index; model files in the browser cache; quota and persistence), removing embeddings
// and a model's files after a confirmation (checked in IndexedDB and the Cache API), and a layout that
// fits a phone. On 300 of medquad's documents (what the panel lists does not depend on the size).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { writeSubset } from './shard-fixtures';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const GEN = join(import.meta.dirname, '../../generated-shards/e2e-storage-panel');

/** Corpus embedding batches of every shard in IndexedDB, and the cached model files, read directly. */
async function stored(page: Page): Promise<{ emb: number; modelFiles: number }> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const r = indexedDB.open('loupe');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const all = await new Promise<{ kind: string }[]>((resolve, reject) => {
      const r = db.transaction('artifacts').objectStore('artifacts').getAll();
      r.onsuccess = () => resolve(r.result as { kind: string }[]);
      r.onerror = () => reject(r.error);
    });
    db.close();
    const modelFiles = (await caches.has('transformers-cache'))
      ? (await (await caches.open('transformers-cache')).keys()).length
      : 0;
    return { emb: all.filter((a) => a.kind === 'emb').length, modelFiles };
  });
}

describe('Storage panel', () => {
  let s: Session;
  beforeAll(async () => {
    writeSubset(join(DATA_DIR, 'medquad'), join(GEN, 'medquad'), { docs: 300 });
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
    rmSync(GEN, { recursive: true, force: true });
  });

  test('lists runs, embeddings and model files with the quota; removes embeddings and a model after confirming', async () => {
    const { page } = s;
    // A dense run caches the model's files and the corpus embeddings (and the shard).
    await page.goto(
      `${baseUrl}/?shard=/generated-shards/e2e-storage-panel/medquad/&retriever=dense&model=loupe-test/bert-tiny-random&device=wasm&dtype=fp32&run=1`,
    );
    await phase(page, 'done');
    const before = await stored(page);
    expect(before.emb).toBeGreaterThan(0);
    expect(before.modelFiles).toBeGreaterThan(0);

    await page.evaluate(() => (location.hash = '#/shards'));
    const panel = page.getByTestId('storage-panel');
    const shard = panel.locator('[data-testid="storage-shards"] li');
    await expect
      .poll(() => shard.first().innerText(), { timeout: 30_000 })
      .toMatch(/medquad\s+[\d.]+ MiB · 1 run · [1-9]\d* embedding batches/);
    expect(await panel.getByTestId('storage-quota').innerText()).toMatch(/used, .+ free\./);
    const model = panel.locator('[data-testid="storage-models"] li');
    await expect.poll(() => model.allInnerTexts()).toContainEqual(expect.stringMatching(/bert-tiny-random/));

    // Fits a phone and a desktop.
    for (const width of [390, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
      expect(sw).toBeLessThanOrEqual(iw);
      await panel.screenshot({ path: shotPath(`storage-panel-${width}.png`) });
    }

    // Removing asks first; the second click removes from IndexedDB and the list.
    const removeEmb = shard.first().getByTestId('remove-embeddings');
    await removeEmb.click();
    expect(await removeEmb.innerText()).toBe('Confirm: remove embeddings');
    expect((await stored(page)).emb).toBe(before.emb);
    await removeEmb.click();
    await expect.poll(() => stored(page).then((x) => x.emb)).toBe(0);
    await expect.poll(() => shard.first().innerText()).toMatch(/0 embedding batches/);
    expect(await shard.first().getByTestId('remove-embeddings').count()).toBe(0);

    const bert = model.filter({ hasText: 'bert-tiny-random' });
    await bert.getByTestId('remove-model').click();
    await bert.getByTestId('remove-model').click();
    await expect.poll(() => bert.count()).toBe(0);
    expect((await stored(page)).modelFiles).toBeLessThan(before.modelFiles);

    // The dense run asked for persistent storage once: the panel says what the browser answered.
    const persisted = await page.evaluate(() => navigator.storage.persisted());
    if (persisted) expect(await panel.getByTestId('storage-persisted').count()).toBe(1);
    else expect(await panel.getByTestId('keep-offline').count()).toBe(1);
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });
});
