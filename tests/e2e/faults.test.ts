// Fault injection below the UI, in real Chromium through the harness page: one named test per fault.
// Each checks the error says what failed and what to do, that nothing is left half-written (records
// without the store's commit marker), that shards stored before are kept, and that a retry or a
// reload recovers. Quota: the DevTools protocol's Storage.overrideQuotaForOrigin.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DATA_DIR } from '../paths';
import type { Harness, Outcome } from '../browser/harness';
import type { EncoderHarness } from '../browser/encoder-harness';
import type { IndexHarness } from '../browser/index-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { ZERO } from './idb-counts';
import { writeSubset } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/harness.html`;
const call = harnessCaller<Harness>('harness');

function shardFiles(name: string): string[] {
  const root = join(DATA_DIR, name);
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(root, join(d.parentPath, d.name)).split(sep).join('/'))
    .sort();
}

async function openHarness(page: Page, how: 'goto' | 'reload' | 'wait' = 'goto'): Promise<void> {
  if (how === 'goto') await page.goto(HARNESS);
  else if (how === 'reload') await page.reload();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r)}`);
  return r;
}

/** The single issue of a refused import. */
function issueOf(r: Outcome) {
  if (r.ok || !('issues' in r)) throw new Error(`expected issues, got ${JSON.stringify(r)}`);
  expect(r.issues).toHaveLength(1);
  return r.issues[0];
}

/** Page errors other than the browser's own log lines for failed or refused requests. */
function realErrors(page: Page): string[] {
  return pageErrors(page).filter((e) => !/Failed to load resource|net::ERR_/.test(e));
}

describe('faults: shard import and the shard cache', () => {
  let session: Session;
  let page: Page;
  /** A shard stored before each fault: it must survive every one of them. */
  let kept = '';

  /** Nothing half-written; the earlier shard still loads in full. */
  async function expectIntact(p: Page = page) {
    expect(await call(p, 'debris')).toEqual([]);
    const prev = await call(p, 'load', kept);
    expect(prev.ok).toBe(true);
  }

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await openHarness(page);
    kept = ok(await call(page, 'importUrl', '/shards/r2med-demo/')).summary.hash;
  });

  afterAll(async () => {
    await session?.dispose();
  });

  it('quota pre-flight: refused before writing, saying how much is needed and free', async () => {
    // Chromium reports a fake quota (usage + 10 GiB) to pages, so the check runs on the numbers a
    // browser with an honest estimate (Firefox, Safari) gives; see the quota test below.
    // The check itself, in the page, on the numbers a browser with an honest estimate gives.
    const r = await call(page, 'preflight', 50_000_000, 52_000_000, 4_800_000);
    expect(r).toMatchObject({
      ok: false,
      name: 'StorageQuotaError',
      needed: 4_800_000,
      available: 2_000_000,
    });
    expect(r.ok === false && r.message).toBe(
      'not enough browser storage for the shard "big": it needs about 4.8 MB, and 2.0 MB of the 52.0 MB this ' +
        'site may use is free. Delete cached shards or runs you no longer need, or allow this site more storage ' +
        'in the browser settings, then try again; nothing was written',
    );
    expect(await call(page, 'preflight', 50_000_000, 52_000_000, 1_900_000)).toEqual({ ok: true });
    await expectIntact();
  });

  it('storage full after two committed transactions (injected): what was written is removed, the earlier shard is kept', async () => {
    // The real quota (the test below) refuses at a moment Chromium picks, sometimes the very first
    // transaction; here the write fails as a full disk does once two transactions are committed, so
    // the removal of what was written runs every time.
    const r = await call(page, 'importUrl', '/shards/vqa-rad/', { simulateQuotaAfterTx: 2 });
    expect(issueOf(r)).toMatchObject({ file: '(browser storage)', code: 'storage-quota' });
    expect(issueOf(r).message).toContain(
      'the browser\'s storage filled up while saving the shard "vqa-rad"; what was written was removed',
    );
    // Documents were committed before the failure…
    expect(r.progress.some((p) => /^store:[1-9]/.test(p))).toBe(true);
    // …and none of them is left; the shard is not listed; the earlier one loads in full.
    await expectIntact();
    expect((await call(page, 'list')).map((x) => x.name)).not.toContain('vqa-rad');
    // With room, the same import succeeds from scratch.
    const again = ok(await call(page, 'importUrl', '/shards/vqa-rad/'));
    expect(again.cached).toBe(false);
    await call(page, 'delete', again.summary.hash);
    await expectIntact();
  });

  it('worker terminated mid-import: the call rejects (no hang), the sweep clears its records, a retry works', async () => {
    const r = await call(page, 'importUrl', '/shards/vqa-rad/', {
      cancelOn: 'store',
      minDone: 1,
      cancelHow: 'kill',
    });
    expect(r.ok).toBe(false);
    expect('error' in r && r.error.name).toBe('AbortError');
    // The browser releases the dead worker's lock; the next open sweeps what it left.
    await call(page, 'sweep', 5000);
    await expectIntact();
    expect(r.progress.some((p) => /^store:[1-9]/.test(p))).toBe(true);
    const again = ok(await call(page, 'importUrl', '/shards/vqa-rad/'));
    await call(page, 'delete', again.summary.hash);
  });

  it('page reloaded mid-import: the next start sweeps the half-written shard, a new import works', async () => {
    const reloaded = page.waitForEvent('load');
    // The write waits after its first transaction, so the reload lands mid-import on any machine (a CI
    // run once saw the import commit before the reload the first store tick sent).
    const during = await call(page, 'importUrl', '/shards/vqa-rad/', {
      reloadOn: 'store',
      minDone: 1,
      simulateHoldAfterTx: 1,
    }).catch((e: Error) => e);
    // Either the evaluate dies with its page, or the stopped worker's rejection gets out first.
    if (!(during instanceof Error)) expect(during.ok).toBe(false);
    await reloaded;
    await openHarness(page, 'wait');
    // Opening the store (list) sweeps debris of imports whose tab is gone.
    expect((await call(page, 'list')).map((s) => s.hash)).toEqual([kept]);
    await expectIntact();
    const again = ok(await call(page, 'importUrl', '/shards/vqa-rad/'));
    await call(page, 'delete', again.summary.hash);
  });

  it('a stored record whose bytes changed: detected on load, dropped, and a re-import restores it', async () => {
    const hash = ok(await call(page, 'importUrl', '/shards/medquad/')).summary.hash;
    await call(page, 'tamperDoc', hash, 1);
    const r = await call(page, 'load', hash);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.name).toBe('StaleCacheError');
    expect(r.message).toBe(
      'cached shard medquad is unusable (documents: chunk 1 does not match its checksum (its bytes were changed)); ' +
        'it was removed, import it again',
    );
    expect(await call(page, 'counts', hash)).toEqual(ZERO);
    await expectIntact();
    const again = ok(await call(page, 'importUrl', '/shards/medquad/'));
    expect(again.summary.hash).toBe(hash);
    expect((await call(page, 'load', hash)).ok).toBe(true);
    await call(page, 'delete', hash);
    expect(realErrors(page)).toEqual([]);
  });

  it('network cut during a URL import: the error names the file and says what to do; nothing is saved', async () => {
    // corpus.jsonl arrives, then the connection is gone for queries.jsonl.
    await session.context.route('**/shards/medquad/queries.jsonl', (route) =>
      route.abort('internetdisconnected'),
    );
    try {
      const r = await call(page, 'importUrl', '/shards/medquad/');
      expect(r.ok).toBe(false);
      const message = 'error' in r ? r.error.message : JSON.stringify(r);
      expect(message).toContain(`could not fetch ${baseUrl}/shards/medquad/queries.jsonl`);
      expect(message).toContain('check the network connection');
      expect(message).toContain('nothing was saved');
      await expectIntact();
    } finally {
      await session.context.unroute('**/shards/medquad/queries.jsonl');
    }
    const again = ok(await call(page, 'importUrl', '/shards/medquad/'));
    await call(page, 'delete', again.summary.hash);
  });

  it('a second tab deletes the shard the first is using: the first gets clear errors, and re-imports', async () => {
    const hash = ok(await call(page, 'importUrl', '/shards/medquad/')).summary.hash;
    const other = await session.context.newPage();
    try {
      await openHarness(other);
      await call(other, 'delete', hash);
    } finally {
      await other.close();
    }
    const load = await call(page, 'load', hash);
    expect(load.ok).toBe(false);
    if (!load.ok) {
      expect(load.name).toBe('StaleCacheError');
      expect(load.message).toBe(
        `cached shard ${hash.slice(0, 12)} is unusable (not in the cache); it was removed, import it again`,
      );
    }
    const put = await call(page, 'putArtifact', hash, 'bm25', 'k', { x: 1 });
    expect(put).toEqual({
      ok: false,
      message: `cannot store bm25 for shard ${hash.slice(0, 12)}: the shard is not cached`,
    });
    await expectIntact();
    ok(await call(page, 'importUrl', '/shards/medquad/'));
    expect((await call(page, 'load', hash)).ok).toBe(true);
    await call(page, 'delete', hash);
  });

  it('IndexedDB opened at a newer version by another tab: this tab does not block it, and says to reload', async () => {
    await call(page, 'holdOpen');
    const other = await session.context.newPage();
    try {
      await openHarness(other);
      // The older connection closes itself on versionchange, so the newer open is not blocked.
      expect(await call(other, 'openAtVersion', 2, 10_000)).toBe('opened at 2');
      const r = await call(page, 'importUrl', '/shards/medquad/');
      expect(r.ok).toBe(false);
      expect('error' in r && r.error.message).toBe(
        'the shard cache was written by a newer version of Loupe; reload the page',
      );
      expect('error' in r || r).toBeTruthy();
      // Recovery (what a reload into the newer version does): the newer schema replaces the database.
      await call(other, 'deleteDatabase');
    } finally {
      await call(page, 'release');
      await other.close();
    }
    const again = ok(await call(page, 'importUrl', '/shards/medquad/'));
    expect(again.cached).toBe(false);
    kept = ok(await call(page, 'importUrl', '/shards/r2med-demo/')).summary.hash;
    await expectIntact();
  });
});

describe('faults: storage quota exhausted (DevTools Storage.overrideQuotaForOrigin)', () => {
  // Chromium applies the override only to an origin whose storage has not been used yet in this
  // browser (the quota is cached when IndexedDB first opens), so this runs in a fresh profile.
  it('quota exhausted during import: what was written is removed, the earlier shard is kept, and a restart with room recovers', async () => {
    const first = await launch();
    let profileDir = first.profileDir;
    try {
      const cdp = await first.context.newCDPSession(first.page);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: baseUrl, quotaSize: 4_500_000 });
      await openHarness(first.page);
      const kept = ok(await call(first.page, 'importUrl', '/shards/r2med-demo/')).summary.hash;
      // Chromium reports usage + 10 GiB to the page whatever the quota, so the pre-flight lets it through
      // and the write itself runs into the quota (skipPreflight makes that explicit for other browsers).
      const reported = await call(first.page, 'estimate');
      expect((reported.quota ?? 0) - (reported.usage ?? 0)).toBeGreaterThan(1e9);
      const r = await call(first.page, 'importUrl', '/shards/vqa-rad/', { skipPreflight: true });
      const issue = issueOf(r);
      expect(issue).toMatchObject({ file: '(browser storage)', code: 'storage-quota' });
      expect(issue.message).toBe(
        'the browser\'s storage filled up while saving the shard "vqa-rad"; what was written was removed and ' +
          'shards cached before are kept. Delete cached shards or runs you no longer need, or allow this site ' +
          'more storage in the browser settings, then import again',
      );
      // Usually the first transaction (about 1.3 MB) is committed before the quota runs out, and what
      // was written is then removed. In about 1 run in 6 under load Chromium refuses the first one
      // already (it did so with 3 and 4.5 MB of room measured over the usage: not a matter of room),
      // and nothing was written. Either way nothing of the shard is left.
      const stored = r.progress.filter((p) => p.startsWith('store:'));
      expect(stored[0]).toMatch(/^store:0\/\d+$/);
      if (!stored.some((p) => /^store:[1-9]/.test(p)))
        console.warn('quota test: the first transaction was refused; nothing was written to remove');
      expect(await call(first.page, 'debris')).toEqual([]);
      expect((await call(first.page, 'load', kept)).ok).toBe(true);
      expect(realErrors(first.page)).toEqual([]);
      await first.close();

      // The same profile with the browser's normal quota (the user made room): the import succeeds.
      const second = await launch({ profileDir });
      try {
        await openHarness(second.page);
        expect(await call(second.page, 'debris')).toEqual([]);
        expect((await call(second.page, 'load', kept)).ok).toBe(true);
        const again = ok(await call(second.page, 'importUrl', '/shards/vqa-rad/'));
        expect(again.cached).toBe(false);
        expect(realErrors(second.page)).toEqual([]);
      } finally {
        await second.dispose();
        profileDir = '';
      }
    } finally {
      if (profileDir) await first.dispose().catch(() => undefined);
    }
  });
});

describe('faults: model files', () => {
  const ENCODER_HARNESS = `${baseUrl}/tests/browser/encoder-harness.html`;
  const enc = harnessCaller<EncoderHarness>('encoderHarness');
  const MODEL = 'loupe-test/bert-tiny-random';
  const FILE = `**/${MODEL}/onnx/model.onnx`;
  const LOAD = { device: 'wasm', dtype: 'fp32', allowRemoteModels: false } as const;
  let session: Session;

  async function openEncoderHarness() {
    await session.page.goto(ENCODER_HARNESS);
    await session.page.waitForFunction(
      () => document.getElementById('status')?.textContent === 'ready',
      null,
      {
        timeout: 150_000,
      },
    );
  }

  beforeAll(async () => {
    session = await launch();
    await openEncoderHarness();
  });
  afterAll(async () => {
    await session?.dispose();
  });

  it('model file 404: the load fails naming the model and file; once it is back, loading again works', async () => {
    await session.context.route(FILE, (route) => route.fulfill({ status: 404, body: 'not found' }));
    try {
      const r = await enc(session.page, 'load', MODEL, LOAD);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.message).toMatch(/^could not load the model loupe-test\/bert-tiny-random \(fp32\): /);
        expect(r.error.message).toContain('loupe-test/bert-tiny-random/onnx/model.onnx');
        expect(r.error.message).toContain('then load it again');
      }
    } finally {
      await session.context.unroute(FILE);
    }
    expect((await enc(session.page, 'load', MODEL, LOAD)).ok).toBe(true);
  });

  it('truncated ONNX file: the load fails naming the model; the good file loads afterwards', async () => {
    await openEncoderHarness();
    // q8: a file not loaded (and cached by transformers.js) in the test before.
    const Q8 = `**/${MODEL}/onnx/model_quantized.onnx`;
    const good = readFileSync(
      join(import.meta.dirname, '../../models/generated', MODEL, 'onnx/model_quantized.onnx'),
    );
    await session.context.route(Q8, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/octet-stream',
        body: good.subarray(0, good.length >> 1),
      }),
    );
    try {
      const r = await enc(session.page, 'load', MODEL, { ...LOAD, dtype: 'q8' });
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.message).toMatch(/^could not load the model loupe-test\/bert-tiny-random \(q8\): /);
        expect(r.error.message).toContain('then load it again');
      }
    } finally {
      await session.context.unroute(Q8);
    }
    // A new encoder worker (as a reload gives): the same worker keeps failing on the file it parsed
    // (docs/failures.md), but the truncated copy is gone from the Cache API.
    await enc(session.page, 'stop');
    const again = await enc(session.page, 'load', MODEL, { ...LOAD, dtype: 'q8' });
    expect(again.ok, JSON.stringify(again)).toBe(true);
    expect(realErrors(session.page).filter((e) => !/model/i.test(e))).toEqual([]);
  });
});

/**
 * Fills the origin's storage so that only `leaveBytes` of `quota` stay free: one Blob in a database
 * of its own (what another site's data or the user's other shards would take). With `brim`, it then
 * tops the filler up with smaller records until the browser refuses one of 1 KiB: Chromium refuses
 * a write by its own cached usage figure, not by what `estimate()` reports, so "leave 50 KB" could
 * leave far more (a CI run saved every batch after it). Here the top-up took 180 records, 9 MB past
 * the quota by `estimate()`, before the first refusal.
 * Returns the usage before, the filler's size and the records the top-up added.
 */
async function fillStorage(page: Page, quota: number, leaveBytes: number, brim = false) {
  return page.evaluate(
    async ([q, leave, toBrim]) => {
      const before = (await navigator.storage.estimate()).usage ?? 0;
      const size = Math.max(0, q - before - leave);
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open('loupe-test-filler', 1);
        r.onupgradeneeded = () => r.result.createObjectStore('filler');
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      const put = (key: string, bytes: number) =>
        new Promise<boolean>((resolve, reject) => {
          const tx = db.transaction('filler', 'readwrite');
          tx.objectStore('filler').put(new Blob([new Uint8Array(bytes)]), key);
          tx.oncomplete = () => resolve(true);
          tx.onabort = () => (tx.error?.name === 'QuotaExceededError' ? resolve(false) : reject(tx.error));
        });
      if (!(await put('blob', size))) throw new Error(`the filler of ${size} bytes did not fit`);
      let topUps = 0;
      if (toBrim)
        for (const bytes of [leave, leave / 16, leave / 256, 1024].map(Math.floor).filter((b) => b >= 1024))
          while (await put(`top-up-${topUps}`, bytes)) topUps++;
      db.close();
      // Chromium's quota checks use a cached usage figure: have it counted before going on.
      const after = (await navigator.storage.estimate()).usage ?? 0;
      return { before, size, after, topUps };
    },
    [quota, leaveBytes, brim] as const,
  );
}

/** Frees the filler again (the user made room). */
async function freeStorage(page: Page) {
  await page.evaluate(
    () =>
      new Promise<void>((resolve, reject) => {
        const r = indexedDB.deleteDatabase('loupe-test-filler');
        r.onsuccess = () => resolve();
        r.onerror = () => reject(r.error);
      }),
  );
}

describe('faults: storage filling up after the import (embeddings, index)', () => {
  const QUOTA = 80_000_000;
  const enc = harnessCaller<EncoderHarness>('encoderHarness');
  const idx = harnessCaller<IndexHarness>('indexHarness');
  const MODEL = 'loupe-test/bert-tiny-random';
  const LOAD = { device: 'wasm', dtype: 'fp32', allowRemoteModels: false } as const;

  it('quota exhausted during corpus embedding: the run finishes, says what was not saved, and the next run resumes from the saved batches', async () => {
    // 900 of medquad's 3,000 answers (served at /generated-shards/): 29 batches of 32 are plenty to
    // stop a run, fill the storage mid-way and resume; the whole corpus only tripled the embedding.
    const gen = resolve(import.meta.dirname, '../../generated-shards');
    mkdirSync(gen, { recursive: true });
    const dir = mkdtempSync(join(gen, 'faults-medquad-'));
    writeSubset(join(DATA_DIR, 'medquad'), dir, { docs: 900, name: basename(dir) });
    const s = await launch();
    try {
      const cdp = await s.context.newCDPSession(s.page);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: baseUrl, quotaSize: QUOTA });
      await s.page.goto(`${baseUrl}/tests/browser/encoder-harness.html`);
      await s.page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready', null, {
        timeout: 150_000,
      });
      // medquad's passages cut at 128 tokens instead of 512: as many vectors to save, in about a
      // third of the embedding time.
      const short = { overrides: { maxTokens: 128 } };
      const imported = await enc(s.page, 'importUrl', `/generated-shards/${basename(dir)}/`);
      if (!imported.ok) throw new Error(JSON.stringify(imported.issues));
      const hash = imported.hash;
      // A first run stopped a third of the way: some batches are saved.
      const stopped = await enc(s.page, 'embedCorpus', hash, MODEL, 'text', 32, LOAD, {
        abortAtDone: 300,
        ...short,
      });
      expect(stopped.ok).toBe(false);
      const savedBefore = (await enc(s.page, 'embRecords', hash)).filter((r) => r.batchNo !== null);
      expect(savedBefore.length).toBeGreaterThan(0);
      // Then the storage fills up (another site, other shards): the next batch cannot be saved.
      await fillStorage(s.page, QUOTA, 50_000, true);
      const first = await enc(s.page, 'embedCorpus', hash, MODEL, 'text', 32, LOAD, short);
      if (!first.ok) throw new Error(JSON.stringify(first));
      expect(first.notSaved).toMatch(
        /^the browser's storage filled up while saving the corpus embeddings of .+ \(batch \d+ of \d+\): this run has them all.*Delete cached shards or runs you no longer need \(Shards view\), or allow this site more storage/,
      );
      expect(first.reusedBatches).toBe(savedBefore.length);
      const records = await enc(s.page, 'embRecords', hash);
      const saved = records.filter((r) => r.batchNo !== null);
      expect(saved.length).toBeLessThan(first.totalBatches);
      // Whole batches only, and the plan (meta record) stays incomplete, so the next run resumes.
      for (const r of saved) expect(r.size).toBeGreaterThan(0);
      expect(records.find((r) => r.batchNo === null)?.complete).toBe(false);

      // The user made room: the next run reuses what was saved and saves the rest.
      await freeStorage(s.page);
      const second = await enc(s.page, 'embedCorpus', hash, MODEL, 'text', 32, LOAD, short);
      if (!second.ok) throw new Error(JSON.stringify(second));
      expect(second.notSaved).toBeNull();
      expect(second.reusedBatches).toBe(saved.length);
      expect(second.computedBatches).toBe(first.totalBatches - saved.length);
      expect(second.checksum).toBeCloseTo(first.checksum, 3);
      expect((await enc(s.page, 'embRecords', hash)).find((r) => r.batchNo === null)?.complete).toBe(true);
      expect(realErrors(s.page)).toEqual([]);
    } finally {
      await s.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('quota exhausted while saving the HNSW index: it searches in this tab, is not saved (nothing half-written), and saves once there is room', async () => {
    const s = await launch();
    try {
      const cdp = await s.context.newCDPSession(s.page);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: baseUrl, quotaSize: QUOTA });
      await s.page.goto(`${baseUrl}/tests/browser/index-harness.html`);
      await s.page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
      const N = 4000;
      const DIM = 128;
      await idx(s.page, 'generate', N, 20, DIM);
      const shard = await idx(s.page, 'createShard');
      // Less room than the vectors alone take: the serialized graph (vectors + links) cannot fit.
      await fillStorage(s.page, QUOTA, (N * DIM * 4) / 2, true);
      const params = { key: 'quota-test', shard, space: 'cosine' as const, M: 16, efConstruction: 64 };
      const r = await idx(s.page, 'build', params);
      if (!r.ok) throw new Error(JSON.stringify(r));
      expect(r.persisted).toBe(false);
      expect(r.notSaved).toMatch(
        /^the browser's storage filled up while saving the HNSW index \(.+\): it works in this tab but was not saved.*allow this site more storage/,
      );
      const found = await idx(s.page, 'search', 10);
      expect(found.counts.every((c: number) => c === 10)).toBe(true);
      // Nothing of the failed write is stored.
      expect(await idx(s.page, 'artifact', shard, r.artifact!.key)).toBeNull();

      await freeStorage(s.page);
      const again = await idx(s.page, 'build', params);
      if (!again.ok) throw new Error(JSON.stringify(again));
      expect(again.source).toBe('built');
      expect(again.persisted).toBe(true);
      const cached = await idx(s.page, 'build', params);
      expect(cached.ok && cached.source).toBe('cache');
      expect(realErrors(s.page)).toEqual([]);
    } finally {
      await s.dispose();
    }
  });
});

describe('faults: page reloaded mid-index-build', () => {
  const idx = harnessCaller<IndexHarness>('indexHarness');

  it('page reloaded mid-index-build: nothing of that build is stored, and the next build is saved and reused', async () => {
    const s = await launch();
    try {
      const open = async () => {
        await s.page.goto(`${baseUrl}/tests/browser/index-harness.html`);
        await s.page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
        await idx(s.page, 'generate', 20_000, 10, 64);
        return idx(s.page, 'createShard');
      };
      const shard = await open();
      const params = { key: 'reload-test', shard, space: 'cosine' as const, M: 16, efConstruction: 100 };
      // Started without waiting; the page goes away while hnswlib inserts.
      await s.page.evaluate((p) => void window.indexHarness.build(p), params);
      await s.page.waitForTimeout(300);
      await s.page.reload();
      expect(await open()).toBe(shard);
      // The build had not finished: its graph is not stored.
      // (The worker's artifact key for these parameters; the build below confirms it.)
      const key = `${params.key}|space=${params.space}|M=${params.M}|efC=${params.efConstruction}`;
      expect(await idx(s.page, 'artifact', shard, key)).toBeNull();
      const r = await idx(s.page, 'build', params);
      expect(r.ok && r.artifact?.key).toBe(key);
      if (!r.ok) throw new Error(JSON.stringify(r));
      expect(await idx(s.page, 'artifact', shard, r.artifact!.key)).not.toBeNull();
      // Built here (the reloaded build had stored nothing to find), then reused.
      expect(r.source).toBe('built');
      expect(r.persisted).toBe(true);
      const again = await idx(s.page, 'build', params);
      expect(again.ok && again.source).toBe('cache');
      expect(realErrors(s.page)).toEqual([]);
    } finally {
      await s.dispose();
    }
  });
});

describe('faults: IndexedDB unavailable', () => {
  it('IndexedDB unavailable (private window): the app starts, says why nothing can be cached and what to do, and does not crash', async () => {
    const s = await launch();
    try {
      // As Firefox's private windows and blocked site data do: opening a database fails.
      await s.context.addInitScript(() => {
        IDBFactory.prototype.open = function () {
          throw new DOMException(
            'A mutation operation was attempted on a database that did not allow mutations.',
            'InvalidStateError',
          );
        };
      });
      await s.page.goto(baseUrl);
      await s.page.waitForSelector(
        '[data-testid="app"][data-phase="idle"], [data-testid="app"][data-phase="error"]',
        {
          timeout: 120_000,
        },
      );
      const message = s.page.locator('[data-testid="message"]').first();
      await expect
        .poll(() => message.innerText())
        .toMatch(
          /does not let Loupe use IndexedDB \(a private window, or site data blocked.*Open Loupe in a normal window, or allow this site to store data, then reload the page/s,
        );
      // The page stays usable: the demo list is there and the views switch.
      expect(await s.page.locator('[data-shard]').count()).toBeGreaterThan(0);
      await s.page.evaluate(() => (location.hash = '#/shards'));
      await s.page.waitForSelector('[data-testid="app"][data-route="shards"]');
      expect(pageErrors(s.page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
    } finally {
      await s.dispose();
    }
  });
});
