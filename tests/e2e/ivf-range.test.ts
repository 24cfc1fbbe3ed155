// A packed IVF-int8 index range-read from a static host (issue 19, item 2), in real Chromium: a
// 100,000 × 384 shard of clustered random unit vectors (float16 .npy + sidecar, as make-scale-shard
// --vectors random writes them) is packed by `npm run pack-ivf`, served under a sub-path by a plain
// static server that honours Range and logs the body bytes of every response, and searched by the
// index worker from the URL. Recall@10 against exact search (computed here in Node from the same
// float16 rows) must be ≥ 0.95; the bytes the worker reports for each query must equal the sum of
// the server's log for that query; later queries and a fresh worker read lists from the OPFS cache,
// and with the host gone the same answers come from the cache alone.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FIXTURE_MODEL, exactTopRows, writeIvfFixture } from '../../scripts/lib/ivf-fixture';
import type { IvfHarness } from '../browser/ivf-harness';
import type { IvfRemoteRequest, IvfRemoteResult } from '../../src/lib/clients/index-client';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';

const ROOT = resolve(import.meta.dirname, '../..');
const HARNESS = `${inject('baseUrl')}/tests/browser/ivf-harness.html`;
const N = 100_000;
const DIM = 384;
const NQ = 40;
const K = 10;
const NLIST = 256;
const PREFIX = '/course/loupe/';
const SHARD = 'shards/scale-100k';
const SET = `${SHARD}/embeddings/${FIXTURE_MODEL}/fp32/`;

const call = harnessCaller<IvfHarness>('ivfHarness');

describe('packed IVF-int8 index read with HTTP Range from a static host under a sub-path', () => {
  let dir: string;
  let server: RangeServer;
  let session: Session;
  let page: Page;
  let queries: Float32Array;
  let truth: number[][];
  let req: IvfRemoteRequest;
  /** Per query: the worker's answer rows. */
  let firstRows: number[][];

  /** Runs query i alone and returns its result with the server log entries it caused. */
  async function one(i: number): Promise<{ r: IvfRemoteResult; logBytes: number; entries: number }> {
    const from = server.log.length;
    const out = await call(page, 'search', req, Array.from(queries.subarray(i * DIM, (i + 1) * DIM)));
    if (!out.ok) throw new Error(out.error);
    const entries = server.log.slice(from);
    return { r: out.result, logBytes: entries.reduce((s, e) => s + e.bytes, 0), entries: entries.length };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-ivf-'));
    const fixture = writeIvfFixture(join(dir, SHARD), N, DIM, NQ);
    queries = fixture.queries;
    // The packing command as a user runs it (a smaller k-means sample keeps the test short).
    execFileSync(
      'npx',
      [
        'tsx',
        'scripts/pack-ivf.ts',
        '--shard',
        join(dir, SHARD),
        '--nlist',
        String(NLIST),
        '--sample',
        '8000',
        '--iterations',
        '4',
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    // Ground truth from the rows exactly as the .npy holds them.
    truth = Array.from({ length: NQ }, (_, i) =>
      exactTopRows(fixture.rows, DIM, queries.subarray(i * DIM, (i + 1) * DIM), K),
    );
    server = await serveRanges(dir, PREFIX);
    req = { url: `${server.url}${SET}ivf-text.bin`, vectorsUrl: `${server.url}${SET}text.npy`, k: K };
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  }, 240_000);

  afterAll(async () => {
    await session?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reaches recall@10 ≥ 0.95 against exact search, each query’s bytes equal to the server log', async () => {
    firstRows = [];
    let hits = 0;
    for (let i = 0; i < NQ; i++) {
      const { r, logBytes, entries } = await one(i);
      const q = r.perQuery[0];
      expect(r.perQuery).toHaveLength(1);
      // What the worker counted is what the server sent for this query, request for request.
      expect(q.bytes).toBe(logBytes);
      expect(q.requests).toBe(entries);
      expect(q.headerFetched).toBe(i === 0);
      if (i === 0) {
        expect(r).toMatchObject({ n: N, dim: DIM, nlist: NLIST, cache: 'opfs' });
        // The header (fixed part, then the rest) came first, as two Range requests.
        expect(server.log[0]).toMatchObject({ status: 206, range: 'bytes=0-63', bytes: 64 });
      }
      // Far less than the vectors: the 100k × 384 float16 .npy alone is 76.8 MB.
      expect(q.bytes).toBeLessThan(6_000_000);
      expect(q.listsFetched + q.listsCached + q.listsEmpty).toBe(r.nprobe);
      firstRows.push(r.rows[0]);
      const t = new Set(truth[i]);
      hits += r.rows[0].filter((x) => t.has(x)).length;
    }
    // Every request was a Range read answered with 206: nothing was downloaded whole.
    expect(server.log.every((e) => e.status === 206 && e.range)).toBe(true);
    const recall = hits / (NQ * K);
    console.log(`remote IVF recall@10 = ${recall.toFixed(4)} over ${NQ} queries`);
    expect(recall).toBeGreaterThanOrEqual(0.95);
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  it('answers a repeated query from the cache: no bytes, no requests', async () => {
    const { r, logBytes, entries } = await one(3);
    expect(r.rows[0]).toEqual(firstRows[3]);
    expect(r.perQuery[0]).toMatchObject({ bytes: 0, requests: 0, listsFetched: 0, rowsFetched: 0 });
    expect(r.perQuery[0].listsCached + r.perQuery[0].listsEmpty).toBe(r.nprobe);
    expect([logBytes, entries]).toEqual([0, 0]);
  });

  it('scores the probed lists on the WGSL kernel when asked (SwiftShader here), with the CPU’s very results', async () => {
    let onGpu = 0;
    for (let i = 0; i < 8; i++) {
      const q = Array.from(queries.subarray(i * DIM, (i + 1) * DIM));
      const gpu = await call(page, 'search', { ...req, scoring: 'webgpu' }, q);
      const cpu = await call(page, 'search', { ...req, scoring: 'cpu' }, q);
      if (!gpu.ok || !cpu.ok) throw new Error(gpu.ok ? (cpu as { error: string }).error : gpu.error);
      expect(gpu.result.rows).toEqual(cpu.result.rows);
      expect(gpu.result.scores).toEqual(cpu.result.scores);
      expect(gpu.result.rows[0]).toEqual(firstRows[i]);
      expect(cpu.result.perQuery[0].scoring).toMatchObject({ device: 'cpu' });
      const scoring = gpu.result.perQuery[0].scoring;
      if (scoring?.device === 'webgpu') onGpu++;
      // A cut too close for the float32 sums is scored again on the CPU, and says so.
      else expect(scoring).toMatchObject({ device: 'cpu', recomputed: true });
    }
    expect(onGpu).toBeGreaterThanOrEqual(6);
    // 'auto' (the default) keeps a software adapter out and says why.
    const auto = await one(0);
    expect(auto.r.perQuery[0].scoring).toMatchObject({
      device: 'cpu',
      reason: expect.stringMatching(/software WebGPU adapter/),
    });
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  }, 120_000);

  it('a fresh worker reads lists and rows from OPFS; only the 64-byte header check goes to the host', async () => {
    await call(page, 'restartWorker');
    const { r, logBytes, entries } = await one(5);
    expect(r.rows[0]).toEqual(firstRows[5]);
    expect(r.perQuery[0]).toMatchObject({
      bytes: 64,
      requests: 1,
      headerFetched: false,
      listsFetched: 0,
      rowsFetched: 0,
    });
    expect([logBytes, entries]).toEqual([64, 1]);
  });

  it('with the host gone, a fresh worker answers cached queries offline', async () => {
    await server.close();
    await call(page, 'restartWorker');
    for (const i of [0, 1, 2]) {
      const out = await call(page, 'search', req, Array.from(queries.subarray(i * DIM, (i + 1) * DIM)));
      if (!out.ok) throw new Error(out.error);
      expect(out.result.rows[0]).toEqual(firstRows[i]);
      expect(out.result.perQuery[0]).toMatchObject({ bytes: 0, offline: i === 0, listsFetched: 0 });
    }
    // An uncached query cannot be answered offline, and says which URL failed.
    await call(page, 'clearCache');
    const out = await call(page, 'search', req, Array.from(queries.subarray(0, DIM)));
    expect(out.ok).toBe(false);
  });

  it('writes a search’s header, lists and rows to OPFS once it is over, not during it', async () => {
    const host = await serveRanges(dir, PREFIX);
    try {
      await call(page, 'clearCache');
      const at = { url: `${host.url}${SET}ivf-text.bin`, vectorsUrl: `${host.url}${SET}text.npy`, k: K };
      const out = await call(page, 'search', at, Array.from(queries.subarray(4 * DIM, 5 * DIM)));
      if (!out.ok) throw new Error(out.error);
      const q = out.result.perQuery[0];
      expect(q.listsFetched).toBeGreaterThan(0);
      expect(q.rowsFetched).toBeGreaterThan(0);
      // Just answered: nothing is written yet (the caller is still showing the documents).
      expect(await call(page, 'cachedFiles')).toBe(0);
      // A moment later every file is there, whole: the header, each list and each row.
      await expect
        .poll(() => call(page, 'cachedFiles'), { timeout: 15_000 })
        .toBe(1 + q.listsFetched + q.rowsFetched);
    } finally {
      await host.close();
    }
  });

  it('refuses a host that ignores Range, naming the file', async () => {
    const plain = await serveRanges(dir, PREFIX, { ranges: false });
    try {
      const out = await call(
        page,
        'search',
        { url: `${plain.url}${SET}ivf-text.bin`, vectorsUrl: `${plain.url}${SET}text.npy`, k: K },
        Array.from(queries.subarray(0, DIM)),
      );
      expect(out).toMatchObject({ ok: false });
      expect(!out.ok && out.error).toMatch(
        /ivf-text\.bin: the server answered a Range request with status 200, not 206/,
      );
    } finally {
      await plain.close();
    }
  });
});
