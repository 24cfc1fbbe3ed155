// A shard's images in one request (pack-shard --images): vqa-rad packed here, served under a sub-path
// by a static server that logs every response, imported by URL in real Chromium. The import asks
// for images.zip once and for no loose image, and stores the same 315 images byte for byte. A pack
// named in shard.json but missing, or damaged, fails the import naming it, and nothing is cached.
import {
  chmodSync,
  cpSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DATA_DIR } from '../paths';
import { launch, pageErrors, phase, type Session } from './browser';
import { idbCounts, ZERO } from './idb-counts';
import { serveRanges, type RangeServer } from './range-server';
import { packShard } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const PREFIX = '/hosted/';

async function importUrl(page: Page, url: string) {
  await page.goto(`${baseUrl}/#/shards`);
  await phase(page, 'idle');
  await page.fill('[data-testid="url-input"]', url);
  await page.click('[data-testid="url-input"] ~ button');
}

/** The stored images' paths and sizes (and the bytes of `one`), read with the plain IndexedDB API. */
function storedImages(page: Page, one: string) {
  return page.evaluate(
    (one) =>
      new Promise<{ sizes: Record<string, number>; bytes: number[] }>((resolve, reject) => {
        const req = indexedDB.open('loupe');
        req.onerror = () => reject(req.error);
        req.onsuccess = () => {
          const all = req.result.transaction('images').objectStore('images').getAll();
          all.onerror = () => reject(all.error);
          all.onsuccess = async () => {
            const rows = all.result as { path: string; blob: Blob }[];
            const sizes = Object.fromEntries(rows.map((r) => [r.path, r.blob.size]));
            const hit = rows.find((r) => r.path === one);
            const bytes = hit ? Array.from(new Uint8Array(await hit.blob.arrayBuffer())) : [];
            req.result.close();
            resolve({ sizes, bytes });
          };
        };
      }),
    one,
  );
}

/** A writable copy of vqa-rad under `root`/`name`. */
function copyVqaRad(root: string, name: string): string {
  const dir = join(root, name);
  cpSync(join(DATA_DIR, 'vqa-rad'), dir, { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'shard.json'), 0o644);
  return dir;
}

describe('a shard imported by URL reads its images from its pack', () => {
  let root: string;
  let server: RangeServer;
  let s: Session;
  const images = readdirSync(join(DATA_DIR, 'vqa-rad/images')).map((f) => `images/${f}`);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'loupe-images-pack-'));
    const packed = copyVqaRad(root, 'packed');
    packShard(packed, ['--images']);
    // shard.json names the pack, which is not there.
    const missing = copyVqaRad(root, 'missing');
    const manifest = JSON.parse(readFileSync(join(missing, 'shard.json'), 'utf8')) as object;
    writeFileSync(join(missing, 'shard.json'), JSON.stringify({ ...manifest, images_pack: 'images.zip' }));
    // The pack cut short (an interrupted upload): its central directory is gone.
    const damaged = copyVqaRad(root, 'damaged');
    packShard(damaged, ['--images']);
    truncateSync(join(damaged, 'images.zip'), 100_000);
    server = await serveRanges(root, PREFIX);
    s = await launch();
  }, 300_000);

  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test('one request for images.zip, none for a loose image; the same 315 images stored', async () => {
    const { page } = s;
    const from = server.log.length;
    await importUrl(page, `${server.url}packed/`);
    // On failure, what the page said is the assertion's message.
    if ((await phase(page, 'ready', 'error')) !== 'ready')
      expect(
        await page.locator('[data-testid="shard-issues"], [data-testid="message"]').allInnerTexts(),
      ).toEqual([]);
    const log = server.log.slice(from);
    expect(log.filter((e) => e.path.endsWith('/images.zip')).map((e) => [e.method, e.status])).toEqual([
      ['GET', 200],
    ]);
    expect(log.filter((e) => e.path.includes('/images/'))).toEqual([]);
    const stored = await storedImages(page, 'images/synpic100132.jpg');
    expect(Object.keys(stored.sizes).sort()).toEqual([...images].sort());
    for (const p of images) expect(stored.sizes[p]).toBe(readFileSync(join(DATA_DIR, 'vqa-rad', p)).length);
    expect(
      Buffer.compare(
        Buffer.from(stored.bytes),
        readFileSync(join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg')),
      ),
    ).toBe(0);
    expect(pageErrors(page)).toEqual([]);
  }, 300_000);

  test('the progress line names the pack while it downloads, and a cancel then leaves nothing', async () => {
    const fresh = await launch();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    server.hold = (path) => (path.endsWith('/packed/images.zip') ? held : undefined);
    try {
      const { page } = fresh;
      await importUrl(page, `${server.url}packed/`);
      const job = page.locator('[data-testid="job"] .text');
      await expect.poll(() => job.textContent(), { timeout: 120_000 }).toContain('images.zip');
      await page.click('[data-testid="cancel"]');
      release();
      await page.waitForSelector('[data-testid="job"]', { state: 'detached', timeout: 120_000 });
      expect(await idbCounts(page)).toEqual(ZERO);
      expect(pageErrors(page)).toEqual([]);
    } finally {
      server.hold = undefined;
      release();
      await fresh.dispose();
    }
  }, 300_000);

  test('a pack named in shard.json but missing, or damaged: the import fails naming it, nothing cached', async () => {
    const fresh = await launch();
    try {
      const { page } = fresh;
      for (const [name, expected] of [
        ['missing', 'images.zip is named in shard.json ("images_pack") but the shard has no such file'],
        ['damaged', 'images.zip is not a readable zip file'],
      ] as const) {
        await importUrl(page, `${server.url}${name}/`);
        const issues = page.locator('[data-testid="shard-issues"]');
        await issues.waitFor({ timeout: 120_000 });
        expect(await issues.textContent()).toContain(expected);
        expect(await idbCounts(page)).toEqual(ZERO);
      }
      // Failed loads of the missing pack are the browser's own 404 lines, nothing else.
      expect(pageErrors(page).filter((e) => !/Failed to load resource|net::ERR_/.test(e))).toEqual([]);
    } finally {
      await fresh.dispose();
    }
  }, 300_000);
});
