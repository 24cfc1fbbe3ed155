// The shard cache end to end in real Chromium: import from a URL, a zip built in the page and File
// objects (one content hash), persistence across a browser restart, crash debris swept on open,
// corruption detected on load, invalid shards and cancelled imports leaving nothing behind.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DATA_DIR } from '../paths';
import type { Harness, Outcome } from '../browser/harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/harness.html`;
const STORES = ['shards', 'docs', 'queries', 'qrels', 'images', 'artifacts'] as const;
type Counts = Record<(typeof STORES)[number], number>;
const ZERO: Counts = { shards: 0, docs: 0, queries: 0, qrels: 0, images: 0, artifacts: 0 };

/** Every file of a demo shard, as shard-relative paths. */
function shardFiles(name: string): string[] {
  const root = join(DATA_DIR, name);
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(root, join(d.parentPath, d.name)).split(sep).join('/'))
    .sort();
}

/** Calls `window.harness[fn](...args)` in the page. */
const call = harnessCaller<Harness>('harness');

/** Loads (or reloads) the harness page and fetches medquad's files into it for zip and File imports. */
async function openHarness(page: Page, how: 'goto' | 'reload' = 'goto'): Promise<void> {
  if (how === 'goto') await page.goto(HARNESS);
  else await page.reload();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  await call(page, 'fetchShard', 'medquad', shardFiles('medquad'));
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r)}`);
  return r;
}

/** Page errors other than the browser's own log line for a 404 probe. */
function realErrors(page: Page): string[] {
  return pageErrors(page).filter((e) => !/Failed to load resource/.test(e));
}

describe('shard cache (IndexedDB) in Chromium', () => {
  let session: Session;
  let page: Page;
  let medquad = '';
  // A shard whose storing takes several 4 MB transactions after the first commit, for the cancels
  // and kills "in the middle of storing": vqa-rad's few small ones could all commit before a kill
  // sent at the first one landed (it did, on an idle machine).
  let tmp = '';
  let server: RangeServer;
  let big = '';

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'loupe-store-'));
    execFileSync(
      'npx',
      [
        'tsx',
        'scripts/make-scale-shard.ts',
        '--docs',
        '20000',
        '--queries',
        '100',
        '--out',
        join(tmp, 'big'),
      ],
      { cwd: resolve(import.meta.dirname, '../..'), stdio: 'pipe' },
    );
    server = await serveRanges(tmp, '/store/');
    big = `${server.url}big/`;
    session = await launch();
    page = session.page;
    await openHarness(page);
  });

  afterAll(async () => {
    await server?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await session?.dispose();
  });

  it('imports medquad from a URL, a zip and File objects with one content hash', async () => {
    const fromUrl = ok(await call(page, 'importUrl', '/shards/medquad/'));
    expect(fromUrl.cached).toBe(false);
    medquad = fromUrl.summary.hash;
    expect(medquad).toMatch(/^[0-9a-f]{64}$/);
    expect(fromUrl.summary.counts).toEqual({ docs: 3000, queries: 1000, qrels: 1000, images: 0 });
    expect(fromUrl.progress.some((p) => p.startsWith('store:'))).toBe(true);

    const zipRoot = ok(await call(page, 'importZip', 'medquad', {}));
    const zipFolder = ok(await call(page, 'importZip', 'medquad', { topFolder: 'medquad' }));
    const filesFolder = ok(await call(page, 'importFiles', 'medquad', { topFolder: 'medquad' }));
    const filesRoot = ok(await call(page, 'importFiles', 'medquad', {}));
    // A directory handle (OPFS stands in for showDirectoryPicker), picked at or above the shard folder.
    const dirRoot = ok(await call(page, 'importDirectory', 'medquad', {}));
    const dirParent = ok(await call(page, 'importDirectory', 'medquad', { nest: ['medquad'] }));
    for (const r of [zipRoot, zipFolder, filesFolder, filesRoot, dirRoot, dirParent]) {
      expect(r.summary.hash).toBe(medquad);
      expect(r.cached).toBe(true);
    }

    const list = await call(page, 'list');
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      hash: medquad,
      name: 'medquad',
      format: 'beir+images',
      sourceLabel: `${baseUrl}/shards/medquad/`,
      counts: { docs: 3000, queries: 1000, qrels: 1000, images: 0 },
    });
    expect(list[0].storedBytes).toBeGreaterThan(3_000_000);
    expect(list[0].notice).toContain('MedQuAD');

    // 3 chunks of 1000 docs, 1 of queries, 1 of qrels, the commit marker; nothing else.
    expect(await call(page, 'counts', medquad)).toEqual({
      ...ZERO,
      shards: 1,
      docs: 3,
      queries: 1,
      qrels: 1,
    });
    const loaded = await call(page, 'load', medquad);
    expect(loaded).toMatchObject({ ok: true, docs: 3000, queries: 1000, qrelQueries: 1000, qrelPairs: 1000 });
    if (loaded.ok) expect(loaded.firstDoc).toMatchObject({ id: 'mq-d00001', title: 'Common Cold' });

    expect(await call(page, 'describeDropOf', ['medquad.zip'])).toEqual({
      kind: 'zip',
      paths: ['medquad.zip'],
    });
    expect(await call(page, 'describeDropOf', ['corpus.jsonl', 'shard.json'])).toEqual({
      kind: 'files',
      paths: ['corpus.jsonl', 'shard.json'],
    });

    const est = await call(page, 'estimate');
    expect(est.usage).toBeGreaterThan(0);
    expect(est.quota).toBeGreaterThan(0);
    expect(typeof est.persisted).toBe('boolean');
  });

  it('is still listed after a browser restart, without reading the source again', async () => {
    const profileDir = session.profileDir;
    await session.close();
    session = await launch({ profileDir });
    page = session.page;
    const shardRequests: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/shards/')) shardRequests.push(r.url());
    });
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const list = await call(page, 'list');
    expect(list.map((s) => s.hash)).toEqual([medquad]);
    expect(await call(page, 'load', medquad)).toMatchObject({
      ok: true,
      docs: 3000,
      queries: 1000,
      qrelPairs: 1000,
    });
    expect(shardRequests).toEqual([]);
    await openHarness(page);
  });

  it('sweeps a half-written entry (no commit marker) on the next open', async () => {
    const half = 'f'.repeat(64);
    await call(page, 'writeHalfEntry', half);
    expect(await call(page, 'counts', half)).toEqual({
      shards: 1,
      docs: 2,
      queries: 1,
      qrels: 1,
      images: 1,
      artifacts: 1,
    });
    await openHarness(page, 'reload');
    const list = await call(page, 'list'); // opens the store, which sweeps
    expect(list.map((s) => s.hash)).toEqual([medquad]);
    expect(await call(page, 'counts', half)).toEqual(ZERO);
    expect(await call(page, 'counts', medquad)).toEqual({
      ...ZERO,
      shards: 1,
      docs: 3,
      queries: 1,
      qrels: 1,
    });
  });

  it('sweeps what a worker killed in the middle of storing left behind', async () => {
    const before = await call(page, 'counts');
    const r = await call(page, 'importUrl', big, {
      cancelOn: 'store',
      minDone: 1,
      cancelHow: 'kill',
    });
    expect(r.ok).toBe(false);
    if (!r.ok && 'error' in r) expect(r.error.name).toBe('AbortError');
    // The kill came after at least one committed batch and before the marker: debris, not a shard.
    expect(r.progress.some((p) => /^store:[1-9]/.test(p))).toBe(true);
    const debris = await call(page, 'counts');
    expect(debris.shards).toBe(before.shards);
    expect(debris.docs + debris.queries + debris.qrels + debris.images).toBeGreaterThan(
      before.docs + before.queries + before.qrels + before.images,
    );
    expect((await call(page, 'list')).map((s) => s.hash)).toEqual([medquad]);

    // The killed worker's lock is released by the browser; the next open sweeps.
    await openHarness(page, 'reload');
    await expect
      .poll(async () => (await call(page, 'list'), await call(page, 'counts')), { timeout: 10_000 })
      .toEqual(before);
  });

  it('cancelling an import leaves nothing in IndexedDB', async () => {
    const before = await call(page, 'counts');
    const whileReading = await call(page, 'importUrl', '/shards/vqa-rad/', { cancelOn: 'read' });
    expect(whileReading).toMatchObject({ ok: false, error: { name: 'AbortError' } });
    expect(await call(page, 'counts')).toEqual(before);

    const whileStoring = await call(page, 'importUrl', big, { cancelOn: 'store', minDone: 1 });
    expect(whileStoring).toMatchObject({ ok: false, error: { name: 'AbortError' } });
    expect(whileStoring.progress.some((p) => /^store:[1-9]/.test(p))).toBe(true);
    // No reload, no waiting: the cancel itself removed the half-written records.
    expect(await call(page, 'counts')).toEqual(before);
    expect((await call(page, 'list')).map((s) => s.hash)).toEqual([medquad]);

    // A cancel on the last batch races the worker's commit: whichever wins, an AbortError means that
    // nothing is left (a shard committed just before the abort landed is removed too).
    const atTheEnd = await call(page, 'importUrl', '/shards/vqa-rad/', {
      cancelOn: 'store',
      minDone: 'last',
    });
    if (!atTheEnd.ok && 'error' in atTheEnd) {
      expect(atTheEnd.error.name).toBe('AbortError');
      expect(await call(page, 'counts')).toEqual(before);
      expect((await call(page, 'list')).map((s) => s.hash)).toEqual([medquad]);
    } else {
      expect(atTheEnd.ok).toBe(true);
      expect((await call(page, 'list')).length).toBe(2);
      await call(page, 'delete', (await call(page, 'list')).find((s) => s.hash !== medquad)!.hash);
      expect(await call(page, 'counts')).toEqual(before);
    }
  });

  it('rejects an invalid shard, naming the file and line, and stores nothing', async () => {
    const before = await call(page, 'counts');
    const bad = await call(page, 'importZip', 'medquad', {
      edits: [{ path: 'corpus.jsonl', line: 3, text: '{"_id": "mq-d00003", "title": "t" broken' }],
    });
    expect(bad.ok).toBe(false);
    if (bad.ok || !('issues' in bad)) throw new Error(`expected validation issues: ${JSON.stringify(bad)}`);
    expect(bad.issues).toContainEqual(
      expect.objectContaining({
        file: 'corpus.jsonl',
        line: 3,
        code: 'malformed-json',
        // The place within the line is no second line number (issue 36 item 10).
        message: expect.stringMatching(/^malformed JSON: [^()]* at character 35 of the line$/),
      }),
    );
    expect(await call(page, 'counts')).toEqual(before);

    const notZip = await call(page, 'importGarbageZip');
    expect(notZip).toMatchObject({ ok: false, issues: [{ file: 'garbage.zip', code: 'not-a-zip' }] });
    const broken = await call(page, 'importZipWithBrokenEntry', 'medquad', 'corpus.jsonl');
    expect(broken).toMatchObject({
      ok: false,
      issues: [{ file: 'corpus.jsonl', code: 'zip-corrupt-entry' }],
    });
    expect(await call(page, 'counts')).toEqual(before);
  });

  it('reads documents by id through the document directory; a damaged chunk read so drops the shard', async () => {
    const corpus = readFileSync(join(DATA_DIR, 'medquad/corpus.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { _id: string; title: string; text: string });
    // The first and last documents, one from the middle chunk, and an id the shard does not have.
    const want = [corpus[0], corpus[corpus.length - 1], corpus[1500]];
    const r = await call(page, 'readDocs', medquad, [...want.map((d) => d._id), 'no-such-doc']);
    if (!r.ok) throw new Error(r.message);
    expect(r.rows).toEqual([0, corpus.length - 1, 1500, -1]);
    expect(r.docs.map((d) => d && [d.id, d.title, d.text])).toEqual([
      ...want.map((d) => [d._id, d.title, d.text]),
      null,
    ]);
    expect(r.facts).toMatchObject({ docs: corpus.length, imageDocs: 0, multiImageDocs: 0 });
    // A chunk changed after the import: the read names it, and the shard is dropped.
    await call(page, 'corruptChunk', medquad, 'docs', 1);
    const bad = await call(page, 'readDocs', medquad, [corpus[1500]._id]);
    expect(bad).toMatchObject({ ok: false, name: 'StaleCacheError', hash: medquad });
    if (!bad.ok) expect(bad.message).toMatch(/documents: chunk 1 does not match its checksum/);
    expect(await call(page, 'list')).toEqual([]);
    expect(await call(page, 'counts', medquad)).toEqual(ZERO);
    ok(await call(page, 'importZip', 'medquad', {}));
  });

  it('keeps precomputed embeddings in pieces, reads rows across them, ignores a set without its head', async () => {
    const hash = ok(await call(page, 'importUrl', '/shards/medquad/')).summary.hash;
    // 10 rows of 3 in pieces of 4 (4 + 4 + 2), read out of order and across pieces.
    const order = [9, 0, 5, 4, 3, 8];
    const r = await call(page, 'precomputedPieces', hash, 10, 3, 4, order);
    const key = 'loupe-test/pieces|fp32|text';
    expect(r.keys.sort()).toEqual([key, `${key}#rows0`, `${key}#rows1`, `${key}#rows2`]);
    // Row p holds sin(3p), sin(3p + 1), sin(3p + 2) at float16 precision (11 significant bits).
    const want = order.flatMap((p) => [0, 1, 2].map((j) => Math.sin(3 * p + j)));
    expect(r.rows).toHaveLength(want.length);
    r.rows.forEach((v, i) =>
      expect(Math.abs(v - want[i])).toBeLessThanOrEqual(Math.abs(want[i]) / 1024 + 1e-7),
    );
    expect(r.headless).toBe(true);
  });

  it('drops a corrupted entry on load with StaleCacheError, and the page lives on', async () => {
    await call(page, 'corruptChunk', medquad, 'docs', 1);
    const r = await call(page, 'load', medquad);
    expect(r).toMatchObject({ ok: false, name: 'StaleCacheError', hash: medquad });
    if (!r.ok) expect(r.message).toMatch(/documents/);
    expect(await call(page, 'list')).toEqual([]);
    expect(await call(page, 'counts', medquad)).toEqual(ZERO);
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    // The same content imports again cleanly.
    const again = ok(await call(page, 'importZip', 'medquad', {}));
    expect(again).toMatchObject({ cached: false, summary: { hash: medquad } });
  });

  it('delete removes every record of a shard from every store', async () => {
    const vqa = ok(await call(page, 'importUrl', '/shards/vqa-rad/'));
    const hash = vqa.summary.hash;
    expect(vqa.summary.counts).toEqual({ docs: 315, queries: 575, qrels: expect.any(Number), images: 315 });
    const image = await call(page, 'getImage', hash, 'images/synpic100132.jpg');
    expect(image).toMatchObject({ type: 'image/jpeg', head: [0xff, 0xd8, 0xff] });
    expect(await call(page, 'putArtifact', hash, 'bm25', 'k1=0.9,b=0.4', { postings: [1, 2, 3] })).toEqual({
      ok: true,
    });
    expect(
      await call(
        page,
        'putArtifact',
        hash,
        'embeddings',
        'model-a',
        new Float32Array([1, 2]) as unknown as number[],
      ),
    ).toEqual({ ok: true });
    expect(await call(page, 'getArtifact', hash, 'bm25', 'k1=0.9,b=0.4')).toEqual({ postings: [1, 2, 3] });
    expect(await call(page, 'putArtifact', 'e'.repeat(64), 'bm25', 'k', 1)).toMatchObject({ ok: false });

    const c = await call(page, 'counts', hash);
    for (const s of STORES) expect(c[s], s).toBeGreaterThan(0);
    expect(c.images).toBe(315);
    expect(c.artifacts).toBe(2);

    const others = await call(page, 'counts', medquad);
    await call(page, 'delete', hash);
    expect(await call(page, 'counts', hash)).toEqual(ZERO);
    expect(await call(page, 'counts', medquad)).toEqual(others);
    expect((await call(page, 'list')).map((s) => s.hash)).toEqual([medquad]);
    expect(await call(page, 'load', hash)).toMatchObject({ ok: false, name: 'StaleCacheError' });
    expect(realErrors(page)).toEqual([]);
  });
});
