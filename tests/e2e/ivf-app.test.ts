// The packed IVF-int8 index through the app (issue 19, item 2), in real Chromium. The medquad corpus
// (1,000 of its 3,000 answers, real text: those the queries judge, then the first others) with 24 of
// its queries is packed here by `npm run pack-shard -- --index
// ivf` (the app's encoder in headless Chromium, the generated bert-tiny model: random weights, so the
// rankings exercise the pipeline, not retrieval quality), then served twice by a plain static server
// that honours Range and logs the body bytes of every response, under a sub-path: once as packed,
// once without the index (its sidecar names none), which the app reads the usual way (the whole .npy)
// for the exact reference. Opened by URL in the app, the packed shard's dense Search and Benchmark
// run read only Range slices (never the whole .npy), the bytes the UI shows equal the server log, the
// rankings agree with the exact ones within IVF recall, a repeated query transfers nothing (OPFS),
// and the Storage panel lists the shard's index cache and clears it.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DATA_DIR } from '../paths';
import { parseIvfHeader } from '../../src/lib/core/retrieval/ivf';
import { ivfBytes } from '../../src/lib/core/retrieval/ivf-report';
import { parseRun } from '../../src/lib/core/eval/trec';
import { Xoshiro128 } from '../../src/lib/core/eval/random';
import { writeNpyF16 } from '../../src/lib/core/shard/precomputed';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { serveRanges, type RangeLogEntry, type RangeServer } from './range-server';
import { packShard, writeSubset } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
const TASK = 'qa-answer-retrieval';
const PREFIX = '/course/loupe/';
const NLIST = 48;
const NQ = 24;
/** Documents packed: fewer than medquad's 3,000 keeps the packing (embedding in Chromium) short. */
const NDOCS = 1000;
const SET = `embeddings/${MODEL}/fp32/`;
const QUERY = 'What are the symptoms of glaucoma ?';

type Json = Record<string, unknown>;
const lines = (p: string) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Json);

/** medquad with its first NQ queries (and their qrels), NDOCS documents with every judged one; named `name`. */
function writeShard(dir: string, name: string): void {
  writeSubset(join(DATA_DIR, 'medquad'), dir, { docs: NDOCS, queries: NQ, name });
}

async function downloadText(page: Page, testId: string): Promise<string> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testId}"]`)]);
  return readFileSync(await dl.path(), 'utf8');
}

/** The Search view's results: doc ids of the (single) result column. */
async function searchHits(page: Page): Promise<string[]> {
  return page
    .locator('[data-testid="results"] [data-doc]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-doc') ?? ''));
}

/** Runs the Search form's query and waits for its results (a new summary line). */
async function search(page: Page): Promise<void> {
  const seq = await page
    .locator('[data-testid="search-summary"]')
    .getAttribute('data-seq', { timeout: 1000 })
    .catch(() => null);
  await page.fill('[data-testid="search-input"]', QUERY);
  await page.click('[data-testid="search-submit"]');
  await page.waitForFunction(
    (prev) => {
      const s = document.querySelector('[data-testid="search-summary"]');
      return !!s && s.getAttribute('data-seq') !== prev;
    },
    seq,
    { timeout: 300_000 },
  );
}

describe('a packed IVF index used by the app for a shard opened by URL', () => {
  let dir: string;
  let server: RangeServer;
  let s: Session;
  let page: Page;
  let npySize: number;
  const exact = {
    search: [] as string[],
    run: new Map<string, string[]>(),
    scores: new Map<string, number>(),
  };
  const packedUrl = () => `${server.url}shards/medquad-ivf/`;
  const since = (from: number): RangeLogEntry[] => server.log.slice(from);
  const sum = (es: RangeLogEntry[]) => es.reduce((a, e) => a + e.bytes, 0);
  /**
   * What the check of the shard's reference vectors read from the host before a search or run (the
   * packed index's rows of its 16 probed documents, and the header when it was first to need it), as
   * the page shows it: 0 when the check was made earlier in the tab or read everything from the cache.
   */
  const probeBytes = async (where: 'search' | 'run'): Promise<number> => {
    const el = page.locator(
      where === 'search'
        ? '[data-testid="search-reference"]'
        : '[data-testid="run-panel"] [data-testid="reference-check"]',
    );
    expect(await el.getAttribute('data-status')).toBe('passed');
    return Number((await el.getAttribute('data-bytes')) ?? 0);
  };
  /** The reads of the check (they come before the query's): the first entries that sum to `bytes`. */
  const splitProbe = (es: RangeLogEntry[], bytes: number): [RangeLogEntry[], RangeLogEntry[]] => {
    let n = 0;
    for (let acc = 0; acc < bytes; n++) acc += es[n].bytes;
    expect(sum(es.slice(0, n))).toBe(bytes);
    return [es.slice(0, n), es.slice(n)];
  };
  /** The cache entries (`l<list>`, `r<row>`) that Range reads of the index and of the .npy cover. */
  const refetched = (es: RangeLogEntry[]): string[] => {
    const bin = readFileSync(join(dir, 'shards/medquad-ivf', SET, 'ivf-text.bin'));
    const h = parseIvfHeader(new Uint8Array(bin), 'ivf-text.bin', bin.length);
    const out: string[] = [];
    for (const e of es) {
      const [a, b] = /^bytes=(\d+)-(\d+)$/
        .exec(e.range ?? '')!
        .slice(1)
        .map(Number);
      if (e.path.endsWith('/ivf-text.bin')) {
        if (a < h.headerBytes) out.push('header');
        for (let l = 0; l < h.nlist; l++) if (h.offsets[l] <= b && h.offsets[l + 1] > a) out.push(`l${l}`);
      } else if (e.path.endsWith('/text.npy')) {
        const rowBytes = h.dim * 2;
        const first = Math.floor((a - h.npyDataOffset) / rowBytes);
        const last = Math.floor((b - h.npyDataOffset) / rowBytes);
        for (let r = first; r <= last; r++) out.push(`r${r}`);
      } else out.push(e.path);
    }
    return out;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-ivf-app-'));
    const packed = join(dir, 'shards/medquad-ivf');
    writeShard(packed, 'medquad-ivf');
    // The packing command as a user runs it: embeddings, then the index beside them.
    packShard(packed, ['--model', MODEL, '--index', 'ivf', '--nlist', String(NLIST)]);
    // The same shard without the index (another name, so another shard): the exact reference.
    const plain = join(dir, 'shards/medquad-exact');
    cpSync(packed, plain, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(plain, 'shard.json'), 'utf8')) as Json;
    writeFileSync(join(plain, 'shard.json'), JSON.stringify({ ...manifest, name: 'medquad-exact' }));
    const sidecar = JSON.parse(readFileSync(join(plain, SET, 'sidecar-text.json'), 'utf8')) as Json;
    delete sidecar.ivf;
    writeFileSync(join(plain, SET, 'sidecar-text.json'), JSON.stringify(sidecar));
    rmSync(join(plain, SET, 'ivf-text.bin'));
    npySize = readFileSync(join(packed, SET, 'text.npy')).length;
    server = await serveRanges(dir, PREFIX);
    s = await launch();
    page = s.page;
  }, 600_000);

  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('pack-shard --index ivf writes the index and names it in the sidecar', () => {
    const folder = join(dir, 'shards/medquad-ivf', SET);
    const sidecar = JSON.parse(readFileSync(join(folder, 'sidecar-text.json'), 'utf8')) as Json;
    expect(sidecar).toMatchObject({ model_id: MODEL, dtype: 'fp32', part: 'text', ivf: 'ivf-text.bin' });
    const bin = readFileSync(join(folder, 'ivf-text.bin'));
    const h = parseIvfHeader(new Uint8Array(bin), 'ivf-text.bin', bin.length);
    expect(h).toMatchObject({ n: NDOCS, nlist: NLIST, dim: sidecar.dim });
    expect(existsSync(join(folder, 'ivf-text.bin.tmp'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(dir, 'shards/medquad-ivf/shard.json'), 'utf8')) as Json;
    expect(manifest.embeddings).toBe('embeddings/index.json');
  });

  test('the exact reference: the shard without an index reads the whole .npy', async () => {
    const url = `${server.url}shards/medquad-exact/`;
    await page.goto(
      `${baseUrl}/?shard=${url}&task=${TASK}&retriever=dense&model=${MODEL}&device=wasm&dtype=fp32&run=1`,
    );
    expect(await phase(page, 'done', 'error')).toBe('done');
    // Read the usual way: the whole .npy in one plain GET.
    expect(
      server.log.some((e) => e.path.endsWith('medquad-exact/' + SET + 'text.npy') && e.status === 200),
    ).toBe(true);
    for (const [q, docs] of parseRun(await downloadText(page, 'export-run'), 'run.trec')) {
      exact.run.set(
        q,
        docs.map((d) => d.docId),
      );
      for (const d of docs) exact.scores.set(`${q} ${d.docId}`, d.score);
    }
    expect(exact.run.size).toBe(NQ);
    await page.goto(
      `${baseUrl}/?shard=${url}&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    await search(page);
    exact.search = await searchHits(page);
    expect(exact.search).toHaveLength(20);
    expect(await page.locator('[data-testid="search-ivf"]').count()).toBe(0);
  });

  test('Search on the packed shard: Range reads only, bytes shown = server log, then 0 bytes from the cache', async () => {
    const from = server.log.length;
    await page.goto(
      `${baseUrl}/?shard=${packedUrl()}&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    const opened = server.log.length;
    // Opening the shard did not read the vectors.
    expect(since(from).filter((e) => e.path.endsWith('.npy') || e.path.endsWith('.bin'))).toEqual([]);
    await search(page);
    const line = page.locator('[data-testid="search-ivf"]');
    const shown = Number(await line.getAttribute('data-bytes'));
    // The first query checked the packed rows against the model first (issue 37): its reads come
    // first, the query's after them.
    const all = since(opened);
    const [probe, entries] = splitProbe(all, await probeBytes('search'));
    expect(probe.length).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="search-reference"]').innerText()).toMatch(
      /lowest cosine (0\.9\d{3}|1\.0000) \(fp32 on wasm\); the check read [\d.]+ (B|KiB) from the shard's host\.$/,
    );
    // Every request of the query was a Range read of the index or of rows of the .npy.
    expect(entries.length).toBeGreaterThan(2);
    expect(all.every((e) => e.status === 206 && !!e.range)).toBe(true);
    expect(all.every((e) => /\/(ivf-text\.bin|text\.npy)$/.test(e.path))).toBe(true);
    expect(shown).toBe(sum(entries));
    expect(sum(entries.filter((e) => e.path.endsWith('.npy')))).toBeLessThan(npySize / 4);
    // The figure on screen is the log's, in the units shown.
    expect(await line.innerText()).toMatch(
      /^IVF: [\d.]+ (B|KiB|MiB) fetched, \d+ of 16 lists from the network/,
    );
    expect(await line.innerText()).toContain(`IVF: ${ivfBytes(sum(entries))} fetched`);
    const [, lists, rows] = /(\d+) of 16 lists from the network.*, (\d+) rows fetched for rescoring/.exec(
      await line.innerText(),
    )!;
    // The ranking: the exact one within IVF recall (most of the top 10 the same).
    const hits = await searchHits(page);
    expect(hits).toHaveLength(20);
    const top = new Set(exact.search.slice(0, 10));
    expect(hits.slice(0, 10).filter((d) => top.has(d)).length).toBeGreaterThanOrEqual(8);

    // The same query again: everything from the cache, nothing on the wire.
    const again = server.log.length;
    await search(page);
    expect(since(again)).toEqual([]);
    expect(await line.getAttribute('data-bytes')).toBe('0');
    // The check is the first query's: said so, and its bytes not counted again.
    const checked = page.locator('[data-testid="search-reference"]');
    expect(await checked.innerText()).toMatch(/\(fp32 on wasm\), earlier in this tab\.$/);
    expect(await checked.getAttribute('data-bytes')).toBeNull();
    expect(await searchHits(page)).toEqual(hits);
    await page.screenshot({ path: shotPath('ivf-app-search.png'), fullPage: true });

    // A new page (a fresh index worker, nothing in memory): lists and rows come from OPFS; only the
    // index's 64-byte fixed part is read again, to check that the file has not changed. Cache writes
    // run after the answer: first every one of them is in OPFS (the header, each list, each row).
    // What the cache holds, by entry name (`header`, `l<list>`, `r<row>`): written entries only. An
    // entry exists from getFileHandle(create) on, and its bytes land when the write closes; until then
    // Chromium writes them to a `<name>.crswap` beside it, which is not the entry.
    let held = new Set<string>();
    const written = async () =>
      page.evaluate(async () => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle('loupe-ivf').catch(() => null);
        const names: string[] = [];
        if (dir)
          for await (const [, sub] of (
            dir as unknown as { entries(): AsyncIterable<[string, unknown]> }
          ).entries())
            for await (const [name, h] of (
              sub as { entries(): AsyncIterable<[string, FileSystemFileHandle]> }
            ).entries())
              if (
                /^(header|[lr]\d+)$/.test(name) &&
                (await h.getFile().then(
                  (f) => f.size,
                  () => 0,
                )) > 0
              )
                names.push(name);
        return names;
      });
    // (Polled with evaluate, which awaits the async listing: waitForFunction takes the promise an async
    // predicate returns as a truthy answer at once, microsoft/playwright#29132, and the page used to
    // reload with writes still open: the lost entries were fetched again.)
    const first = new Set(refetched(all));
    // The mapping from Range reads to entries, checked on the first query's reads (and the check's:
    // the header, read by whichever came first, and the probed rows, cached like a query's).
    const probedRows = refetched(probe).filter((name) => name.startsWith('r')).length;
    expect(probedRows).toBeGreaterThan(0);
    expect(first.size).toBe(1 + Number(lists) + Number(rows) + probedRows);
    await expect
      .poll(
        async () => {
          held = new Set(await written());
          return [...first].filter((name) => !held.has(name));
        },
        { timeout: 60_000, interval: 250 },
      )
      .toEqual([]);
    // The URL names the query (q=): the reloaded page answers it by itself once the shard is open
    // (a shared link answers its query), so that answer is the query after the reload.
    const fresh = server.log.length;
    await page.reload();
    await page.waitForSelector('[data-testid="search-summary"]', { timeout: 300_000 });
    await phase(page, 'ready', 'done');
    // The 64-byte check first; then nothing the cache holds comes from the network again. (The
    // query's lists and candidates are those of the first page; should one differ, only what the
    // cache lacks may be read.) Opening the shard reads neither file (asserted above).
    const after = since(fresh).filter((e) => /\/(ivf-text\.bin|text\.npy)$/.test(e.path));
    const refetchedHeld = refetched(after.slice(1)).filter((name) => held.has(name));
    if (refetchedHeld.length > 0 || sum(after) >= shown / 4)
      console.log('after the reload, fetched:', JSON.stringify(after), 'of which cached:', refetchedHeld);
    expect(after[0]).toMatchObject({ range: 'bytes=0-63', bytes: 64 });
    expect(refetchedHeld).toEqual([]);
    expect(sum(after)).toBeLessThan(shown / 4);
    // The check ran again in the new page (its rows from the cache): the query's bytes are the rest.
    expect(Number(await line.getAttribute('data-bytes')) + (await probeBytes('search'))).toBe(sum(after));
    expect(await searchHits(page)).toEqual(hits);
  });

  test('a Benchmark dense run on the packed shard: bytes per query in the run details = server log', async () => {
    const from = server.log.length;
    await page.goto(
      `${baseUrl}/?shard=${packedUrl()}&task=${TASK}&retriever=dense&model=${MODEL}&device=wasm&dtype=fp32&run=1`,
    );
    expect(await phase(page, 'done', 'error')).toBe('done');
    const entries = since(from);
    expect(entries.filter((e) => e.path.endsWith('.npy')).every((e) => e.status === 206 && !!e.range)).toBe(
      true,
    );
    const details = page.locator('[data-testid="run-ivf"]');
    await page
      .locator('[data-testid="run-panel"] [data-testid="reference-check"]')
      .screenshot({ path: shotPath('reference-passed-packed-run.png') });
    expect(Number(await details.getAttribute('data-total-bytes')) + (await probeBytes('run'))).toBe(
      sum(entries.filter((e) => /\/(ivf-text\.bin|text\.npy)$/.test(e.path))),
    );
    const text = await details.innerText();
    expect(text).toContain(`${NLIST} lists, nprobe 16`);
    expect(text).toContain('int8 codes + exact rescoring of the top');
    expect(text).toMatch(new RegExp(`for ${NQ} queries \\(median [\\d.]+ (B|KiB|MiB), largest`));
    const run = parseRun(await downloadText(page, 'export-run'), 'run.trec');
    expect(run.size).toBe(NQ);
    let hits = 0;
    for (const [q, docs] of run) {
      const truth = new Set(exact.run.get(q)!.slice(0, 10));
      hits += docs.slice(0, 10).filter((d) => truth.has(d.docId)).length;
      // Candidates are rescored exactly: a document in both runs has the exact run's cosine, within
      // the float16 rounding of the row's length (the exact run normalises each float16 row, the
      // index takes the inner product with the row as stored; the rows were unit length in float32).
      for (const d of docs) {
        const want = exact.scores.get(`${q} ${d.docId}`);
        if (want !== undefined) expect(Math.abs(d.score - want)).toBeLessThan(1e-3);
      }
    }
    const recall = hits / (NQ * 10);
    console.log(`IVF vs exact in the app: recall@10 = ${recall.toFixed(3)} over ${NQ} queries`);
    expect(recall).toBeGreaterThanOrEqual(0.9);
    await page.screenshot({ path: shotPath('ivf-app-benchmark.png'), fullPage: true });
  });

  test('the Storage panel lists the index cache of the shard and clears it', async () => {
    await page.evaluate(() => (location.hash = '#/shards'));
    const item = page.locator('[data-testid="storage-shards"] li', { hasText: 'medquad-ivf' });
    const ivf = item.locator('[data-testid="storage-ivf"]');
    await ivf.waitFor({ timeout: 30_000 });
    const cachedBytes = Number(await ivf.getAttribute('data-bytes'));
    expect(cachedBytes).toBeGreaterThan(0);
    expect(await ivf.innerText()).toMatch(/packed index cache/);
    const opfs = () =>
      page.evaluate(async () => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle('loupe-ivf').catch(() => null);
        const names: string[] = [];
        if (dir)
          for await (const k of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(k);
        return names;
      });
    expect((await opfs()).length).toBe(1);
    const opfsFiles = () =>
      page.evaluate(async () => {
        const root = await navigator.storage.getDirectory();
        const out: string[] = [];
        const walk = async (d: FileSystemDirectoryHandle, at: string) => {
          for await (const [k, h] of (
            d as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }
          ).entries())
            if (h.kind === 'directory') await walk(h as FileSystemDirectoryHandle, `${at}${k}/`);
            else {
              // A file being replaced may be gone by the time it is read.
              const size = await (h as FileSystemFileHandle).getFile().then(
                (f) => f.size,
                () => -1,
              );
              out.push(`${at}${k} ${size}`);
            }
        };
        await walk(root, '');
        return out;
      });
    const atClear = server.log.length;
    await item.locator('[data-testid="clear-ivf"]').click();
    await item.locator('[data-testid="clear-ivf"]').click();
    await ivf.waitFor({ state: 'detached', timeout: 30_000 }).catch(async (e) => {
      // What came back after Clear, and what the host served meanwhile (a search after the clear?).
      const files = await opfsFiles();
      console.log(
        `after Clear, OPFS holds:\n${files.join('\n')}\nserved since: ${JSON.stringify(since(atClear))}`,
      );
      throw e;
    });
    expect(await opfs()).toEqual([]);

    // Cleared: the next query reads the header and its lists from the host again.
    const from = server.log.length;
    await page.goto(
      `${baseUrl}/?shard=${packedUrl()}&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    await search(page);
    const bytes = Number(await page.locator('[data-testid="search-ivf"]').getAttribute('data-bytes'));
    expect(bytes).toBeGreaterThan(0);
    expect(bytes + (await probeBytes('search'))).toBe(
      sum(since(from).filter((e) => /\/(ivf-text\.bin|text\.npy)$/.test(e.path))),
    );
  });

  test('fits 390, 1024 and 1440 px with the readouts shown, without page errors', async () => {
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      for (const route of ['search', 'benchmark', 'shards']) {
        await page.evaluate((r) => (location.hash = `#/${r}`), route);
        await page.waitForSelector(`[data-testid="app"][data-route="${route}"]`);
        await page.waitForTimeout(200);
        const w = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        expect({ width, route, scroll: w[0] }).toEqual({ width, route, scroll: w[1] });
      }
    }
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });
});

// The CLIP retriever over a packed image + text shard (vqa-rad, generated clip-tiny: random weights):
// each task whose documents are one part is ranked through that part's index; a query's own image
// (`exclude_ids`) is left out; image + text queries use feature fusion. 16 lists probed of 16 and
// 4·k ≥ n rescored: the index ranks like exact search but for float16 rounding (the query image is
// embedded here, where the exact run reuses the corpus row of the same image).
describe('the CLIP retriever on a packed image + text shard opened by URL', () => {
  const CLIP = 'loupe-test/clip-tiny-random';
  const CLIP_SET = `embeddings/${CLIP}/fp32/`;
  const TASKS = ['text-to-image', 'image-to-image', 'image-question-to-passage'];
  let dir: string;
  let server: RangeServer;
  let s: Session;
  let page: Page;
  const exact = new Map<string, Map<string, string[]>>();

  /** Each task's check of the reference vectors (issue 37), as its run's details show it. */
  const checks = new Map<string, { status: string | null; min: number; text: string }>();

  /** Runs every task on the shard at `url`, the dense retriever with feature fusion; the runs by task. */
  async function runTasks(url: string): Promise<Map<string, Map<string, string[]>>> {
    const out = new Map<string, Map<string, string[]>>();
    checks.clear();
    await page.goto(
      `${baseUrl}/?shard=${url}&task=${TASKS[0]}&retriever=dense&model=${CLIP}&device=wasm&dtype=fp32&fusion=feature#/benchmark`,
    );
    await phase(page, 'ready', 'done');
    for (const task of TASKS) {
      await page.selectOption('[data-testid="task-select"]', task);
      await page.click('[data-testid="run-task"]');
      expect(await phase(page, 'done', 'error')).toBe('done');
      const run = parseRun(await downloadText(page, 'export-run'), 'run.trec');
      out.set(task, new Map([...run].map(([q, docs]) => [q, docs.map((d) => d.docId)])));
      const check = page.locator('[data-testid="run-panel"] [data-testid="reference-check"]');
      checks.set(task, {
        status: await check.getAttribute('data-status'),
        min: Number(await check.getAttribute('data-min')),
        text: await check.innerText(),
      });
    }
    return out;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-ivf-clip-'));
    // Every document and image of vqa-rad, the first 12 queries of each task (and their qrels).
    const packed = join(dir, 'shards/vqa-ivf');
    const src = join(DATA_DIR, 'vqa-rad');
    cpSync(src, packed, { recursive: true });
    const kept = lines(join(src, 'queries.jsonl')).filter(
      (q, i, all) => all.filter((x) => x.task === q.task).indexOf(q) < 12,
    );
    const ids = new Set(kept.map((q) => q._id as string));
    const qrels = readFileSync(join(src, 'qrels/test.tsv'), 'utf8').trim().split('\n');
    writeFileSync(join(packed, 'queries.jsonl'), kept.map((q) => JSON.stringify(q)).join('\n') + '\n');
    writeFileSync(
      join(packed, 'qrels/test.tsv'),
      [qrels[0], ...qrels.slice(1).filter((l) => ids.has(l.split('\t')[0]))].join('\n') + '\n',
    );
    const manifest = JSON.parse(readFileSync(join(packed, 'shard.json'), 'utf8')) as Json;
    delete manifest.counts;
    writeFileSync(join(packed, 'shard.json'), JSON.stringify({ ...manifest, name: 'vqa-ivf' }));
    packShard(packed, ['--model', CLIP, '--index', 'ivf', '--nlist', '16']);
    const plain = join(dir, 'shards/vqa-exact');
    cpSync(packed, plain, { recursive: true });
    writeFileSync(
      join(plain, 'shard.json'),
      JSON.stringify({ ...manifest, name: 'vqa-exact', embeddings: 'embeddings/index.json' }),
    );
    for (const part of ['text', 'image']) {
      const file = join(plain, CLIP_SET, `sidecar-${part}.json`);
      const side = JSON.parse(readFileSync(file, 'utf8')) as Json;
      expect(side.ivf).toBe(`ivf-${part}.bin`);
      delete side.ivf;
      writeFileSync(file, JSON.stringify(side));
    }
    // The packed shard again, its image rows replaced by seeded random unit vectors while its sidecar
    // still names the generated CLIP (a set made with another model): the index itself is unchanged.
    const wrong = join(dir, 'shards/vqa-ivf-wrong');
    cpSync(packed, wrong, { recursive: true });
    const packedManifest = JSON.parse(readFileSync(join(packed, 'shard.json'), 'utf8')) as Json;
    writeFileSync(join(wrong, 'shard.json'), JSON.stringify({ ...packedManifest, name: 'vqa-ivf-wrong' }));
    const side = JSON.parse(readFileSync(join(wrong, CLIP_SET, 'sidecar-image.json'), 'utf8')) as {
      doc_ids: string[];
      dim: number;
    };
    const rng = new Xoshiro128(7);
    const rows = new Float32Array(side.doc_ids.length * side.dim).map(() => rng.nextFloat() - 0.5);
    for (let r = 0; r < side.doc_ids.length; r++) {
      const row = rows.subarray(r * side.dim, (r + 1) * side.dim);
      const n = Math.hypot(...row);
      row.forEach((x, j) => (row[j] = x / n));
    }
    writeFileSync(join(wrong, CLIP_SET, 'image.npy'), writeNpyF16(rows, side.doc_ids.length, side.dim));
    server = await serveRanges(dir, PREFIX);
    s = await launch();
    page = s.page;
  }, 600_000);

  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Every task's run checked its document part's stored rows against the generated CLIP here: the
   * image tower for the image tasks, the text tower for the passages (`where`: the set's file).
   */
  function expectChecked(where: (part: 'text' | 'image') => RegExp) {
    for (const task of TASKS) {
      const part = task === 'image-question-to-passage' ? 'text' : 'image';
      const c = checks.get(task)!;
      expect({ task, status: c.status }).toEqual({ task, status: 'passed' });
      expect(c.min).toBeGreaterThanOrEqual(0.999);
      expect(c.text).toMatch(new RegExp(`Sets: ${part}: ${where(part).source}\\.`));
    }
  }

  test('the exact reference (the whole .npy files), their image and text rows checked first', async () => {
    for (const [task, run] of await runTasks(`${server.url}shards/vqa-exact/`)) exact.set(task, run);
    expect(await page.locator('[data-testid="run-ivf"]').count()).toBe(0);
    expectChecked((part) => new RegExp(`embeddings/${CLIP}/fp32/${part}\\.npy`));
  });

  test('every task through the packed index: Range reads only, exclusions kept, rankings as exact', async () => {
    const from = server.log.length;
    const runs = await runTasks(`${server.url}shards/vqa-ivf/`);
    const vectors = server.log.slice(from).filter((e) => /\.(npy|bin)$/.test(e.path));
    expect(vectors.length).toBeGreaterThan(0);
    expect(vectors.every((e) => e.status === 206 && !!e.range)).toBe(true);
    // Both indexes were read: the image part (text-to-image, image-to-image) and the text part.
    for (const part of ['text', 'image'])
      expect(vectors.some((e) => e.path.endsWith(`${CLIP_SET}ivf-${part}.bin`))).toBe(true);
    expect(await page.locator('[data-testid="run-ivf"]').innerText()).toContain('16 lists, nprobe 16');
    // The packed index's own rows (float16, range-read) were checked, each part's before its first run.
    expectChecked((part) => new RegExp(`http://[^ ]+/shards/vqa-ivf/${CLIP_SET}${part}\\.npy`));
    // Each set's check is made by the first run that takes it; image-to-image takes text-to-image's.
    for (const task of ['text-to-image', 'image-question-to-passage'])
      expect(checks.get(task)!.text).toMatch(/\d ms; it read [\d.]+ (B|KiB) from the shard's host\.$/m);
    expect(checks.get('image-to-image')!.text).toMatch(/; checked earlier in this tab\.$/m);
    const queries = lines(join(dir, 'shards/vqa-ivf/queries.jsonl'));
    // The generated CLIP's image vectors are all but identical (their 2nd and 12th nearest differ by
    // ~3e-6, under float16's resolution): image-to-image rankings are float16 noise, compared nowhere.
    for (const task of TASKS.filter((t) => t !== 'image-to-image')) {
      const run = runs.get(task)!;
      const want = exact.get(task)!;
      expect(run.size).toBe(want.size);
      let hits = 0;
      for (const [q, docs] of run) {
        const truth = new Set(want.get(q)!.slice(0, 10));
        hits += docs.slice(0, 10).filter((d) => truth.has(d)).length;
      }
      const recall = hits / [...run.values()].reduce((a, d) => a + Math.min(10, d.length), 0);
      console.log(`${task}: recall@10 vs exact ${recall.toFixed(3)}`);
      expect(recall).toBeGreaterThanOrEqual(0.95);
    }
    for (const q of queries.filter((x) => x.task === 'image-to-image')) {
      const ranked = runs.get('image-to-image')!.get(q._id as string)!;
      expect(ranked).toHaveLength(100);
      expect(ranked.length).toBe(exact.get('image-to-image')!.get(q._id as string)!.length);
      for (const x of q.exclude_ids as string[]) expect(ranked).not.toContain(x);
    }
    expect(pageErrors(page).filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });

  test('a packed image set made with another model is refused before any result, from 16 of its rows', async () => {
    const from = server.log.length;
    await page.goto(
      `${baseUrl}/?shard=${server.url}shards/vqa-ivf-wrong/&task=text-to-image&retriever=dense&model=${CLIP}&device=wasm&dtype=fp32&fusion=feature&run=1`,
    );
    // The link's run starts once the shard is open; the check comes after the model has loaded.
    const check = page.locator('[data-testid="benchmark-view"] > [data-testid="reference-check"]');
    await page
      .locator('[data-testid="benchmark-view"] > [data-testid="reference-check"], [data-testid="run-panel"]')
      .first()
      .waitFor({ timeout: 300_000 });
    expect(await check.getAttribute('data-status')).toBe('failed');
    const min = Number(await check.getAttribute('data-min'));
    console.log(`reference check, packed image rows of another model: min cosine ${min.toFixed(4)}`);
    expect(min).toBeLessThan(0.9);
    expect(await check.locator('[data-testid="reference-cosine"]').count()).toBe(16);
    expect((await check.locator('[data-testid="reference-cause"]').allInnerTexts())[0]).toMatch(
      /^another model or revision/,
    );
    expect(await check.innerText()).toMatch(
      /Sets: image: http:\/\/[^ ]+\/vqa-ivf-wrong\/[^ ]+\/image\.npy\./,
    );
    expect(await page.locator('[data-testid="run-panel"]').count()).toBe(0);
    await check.screenshot({ path: shotPath('reference-refused-packed-image.png') });
    // Nothing was searched: of the index, only its header was read (no list), and of the rows only
    // the probe's (16 rows of 2 float16 bytes per dimension, in runs of consecutive rows).
    const read = server.log
      .slice(from)
      .filter((e) => e.path.includes('/vqa-ivf-wrong/') && /\.(npy|bin)$/.test(e.path));
    const bin = readFileSync(join(dir, 'shards/vqa-ivf-wrong', CLIP_SET, 'ivf-image.bin'));
    const h = parseIvfHeader(new Uint8Array(bin), 'ivf-image.bin', bin.length);
    const starts = (e: RangeLogEntry) => Number(/^bytes=(\d+)-/.exec(e.range ?? '')?.[1]);
    expect(read.filter((e) => e.path.endsWith('ivf-image.bin')).every((e) => starts(e) < h.headerBytes)).toBe(
      true,
    );
    const rowsRead = read.filter((e) => e.path.endsWith('/image.npy'));
    expect(rowsRead.every((e) => e.status === 206)).toBe(true);
    expect(rowsRead.reduce((a, e) => a + e.bytes, 0)).toBe(16 * h.dim * 2);
    expect(read.some((e) => /ivf-text\.bin|\/text\.npy$/.test(e.path))).toBe(false);
  });
});
