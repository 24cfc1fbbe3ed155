// A packed shard opened by URL "remote-first" (issue 19 item 2), in real Chromium: 1,000 medquad
// answers with 24 of its queries (tests/e2e/subset.ts), packed here by `npm run pack-shard -- --index
// ivf --offsets` (embeddings, the IVF index and corpus.offsets.bin; the generated bert-tiny model has
// random weights, so the ranking exercises the pipeline, not retrieval quality), served under a
// sub-path by a static server that honours Range and logs every response. Opened by URL in a fresh
// profile, the Search view answers a dense query through the packed index and shows the documents'
// text, with corpus.jsonl read only in Range slices of the lines shown; the Shards view says the
// documents come from the host and imports the corpus when asked.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DATA_DIR } from '../paths';
import { launch, pageErrors, phase, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';
import { shotPath } from './artifacts';
import { packShard, writeSubset } from './shard-fixtures';
import { encodeDocOffsets } from '../../src/lib/core/shard/doc-offsets';
import { fnv1aBytes } from '../../src/lib/core/shard/doc-offsets-v2';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
const TASK = 'qa-answer-retrieval';
const PREFIX = '/course/loupe/';
const NQ = 24;
const QUERY = 'What are the symptoms of glaucoma ?';

type Json = Record<string, unknown>;
const lines = (p: string) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Json);

/** medquad with its first NQ queries (and their qrels), 1,000 documents with every judged one. */
function writeShard(dir: string): void {
  writeSubset(join(DATA_DIR, 'medquad'), dir, { docs: 1000, queries: NQ, name: 'medquad-remote' });
}

describe('a packed shard opened by URL answers dense queries before its corpus is imported', () => {
  let dir: string;
  let server: RangeServer;
  let s: Session;
  let page: Page;
  let corpus: Map<string, Json>;
  let corpusSize: number;
  const url = () => `${server.url}shards/medquad-remote/`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-remote-first-'));
    const packed = join(dir, 'shards/medquad-remote');
    writeShard(packed);
    packShard(packed, ['--model', MODEL, '--index', 'ivf', '--nlist', '48', '--offsets']);
    corpus = new Map(lines(join(packed, 'corpus.jsonl')).map((d) => [d._id as string, d]));
    corpusSize = readFileSync(join(packed, 'corpus.jsonl')).length;
    server = await serveRanges(dir, PREFIX);
    s = await launch();
    page = s.page;
  }, 600_000);

  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('pack-shard --offsets names corpus.offsets.bin in shard.json', () => {
    const manifest = JSON.parse(readFileSync(join(dir, 'shards/medquad-remote/shard.json'), 'utf8')) as Json;
    expect(manifest).toMatchObject({
      doc_offsets: 'corpus.offsets.bin',
      embeddings: 'embeddings/index.json',
    });
    // Its sidecar's rows are the corpus order: said by count and checksum, not 1,000 ids.
    const sidecar = JSON.parse(
      readFileSync(join(dir, `shards/medquad-remote/embeddings/${MODEL}/fp32/sidecar-text.json`), 'utf8'),
    ) as Json;
    expect(sidecar.doc_ids).toBeUndefined();
    expect(sidecar.corpus_order).toMatchObject({ docs: 1000 });
  });

  test('Search shows dense results with their text; corpus.jsonl is read only in Ranges', async () => {
    // The link's Search model loads while the shard opens: the host holds the qrels (read while the
    // shard opens) until the browser has asked for one of the model's files. Were the model loaded
    // only once the shard is open, or at Search, the hold would end after 60 s with none asked for.
    const modelFiles: string[] = [];
    let asked!: () => void;
    const modelAsked = new Promise<void>((r) => (asked = r));
    // The order in which the encoder worker's script and the shard's sets index were asked for.
    const order: string[] = [];
    const onRequest = (req: Request) => {
      // Once: a built site's worker is more than one script file (its entry and its chunks).
      if (/encoder\.worker/.test(req.url()) && !order.includes('encoder worker'))
        order.push('encoder worker');
      if (req.url().endsWith('/embeddings/index.json')) order.push('sets index');
      if (!req.url().includes(`/${MODEL}/`)) return;
      modelFiles.push(req.url());
      asked();
    };
    s.context.on('request', onRequest);
    let qrelsHeld: { askedFirst: boolean } | null = null;
    server.hold = (path) =>
      path.endsWith('/qrels/test.tsv') && !qrelsHeld
        ? Promise.race([modelAsked, new Promise((r) => setTimeout(r, 60_000))]).then(() => {
            qrelsHeld = { askedFirst: modelFiles.length > 0 };
          })
        : undefined;
    try {
      await page.goto(
        `${baseUrl}/?shard=${url()}&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
      );
      await phase(page, 'ready', 'done');
    } finally {
      server.hold = undefined;
      s.context.off('request', onRequest);
    }
    expect(qrelsHeld).toEqual({ askedFirst: true });
    // The link names the Search view's model: its worker starts as the shard opens, before the sets
    // say which dtype to load, so its scripts load meanwhile.
    expect(order.slice(0, 2)).toEqual(['encoder worker', 'sets index']);
    // Opening read only small parts: the offsets file's first 16 KiB by one Range request (its
    // header and top level; the queries and qrels are the ones pack-shard checked, so no id is
    // looked up), and a sidecar that names the corpus order instead of listing every id.
    const opened = server.log.filter((e) => e.method === 'GET');
    expect(opened.filter((e) => e.path.endsWith('/corpus.offsets.bin'))).toEqual([
      expect.objectContaining({ status: 206, range: 'bytes=0-16383' }),
    ]);
    const sidecar = opened.find((e) => e.path.endsWith('/sidecar-text.json'));
    expect(sidecar?.bytes).toBeLessThan(1000);
    expect(opened.some((e) => e.path.endsWith('/corpus.jsonl') || e.path.endsWith('.npy'))).toBe(false);
    // (The packed index's header is read meanwhile too, ahead of the first query: not counted here.)
    const openedBytes = opened.filter((e) => !e.path.includes('/ivf-')).reduce((a, e) => a + e.bytes, 0);
    expect(openedBytes).toBeLessThan(100_000);
    await page.fill('[data-testid="search-input"]', QUERY);
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-ivf"]', { timeout: 300_000 });
    // The packed rows were checked against the model first (issue 37): the probe's documents found
    // by their rows through the offsets file (the sidecar lists no ids), their lines read by Range.
    const checked = page.locator('[data-testid="search-reference"]');
    expect(await checked.getAttribute('data-status')).toBe('passed');
    expect(Number(await checked.getAttribute('data-min'))).toBeGreaterThanOrEqual(0.999);
    expect(Number(await checked.getAttribute('data-bytes'))).toBeGreaterThan(0);
    const hits = await page
      .locator('[data-testid="results"] [data-doc]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-doc') ?? ''));
    expect(hits).toHaveLength(20);
    // Each result shows its document's text, as corpus.jsonl has it (the first 220 characters).
    for (const id of hits.slice(0, 5)) {
      const text = corpus.get(id)!.text as string;
      const want = squash(text.length > 220 ? text.slice(0, 220) + '…' : text);
      const shown = page.locator(`[data-testid="results"] [data-doc="${id}"] .text`);
      await shown.waitFor({ timeout: 30_000 });
      expect(squash(await shown.innerText())).toBe(want);
    }
    const corpusReads = server.log.filter((e) => e.path.endsWith('/corpus.jsonl') && e.method === 'GET');
    expect(corpusReads.length).toBeGreaterThan(0);
    expect(corpusReads.every((e) => e.status === 206 && !!e.range)).toBe(true);
    // Only the lines shown: far less than the corpus.
    expect(corpusReads.reduce((a, e) => a + e.bytes, 0)).toBeLessThan(corpusSize / 20);
    await page.setViewportSize({ width: 390, height: 900 });
    await page.screenshot({ path: shotPath('remote-first-search-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(pageErrors(page)).toEqual([]);
  });

  test('a model picked instead of the one loading ahead answers the query (the preload is waited for)', async () => {
    // The link names another model (no packed index of it): it loads while the shard opens; the
    // student picks the packed index's model and searches at once, before that load has ended.
    const other = 'loupe-test/xlmr-tiny-random';
    await page.goto(
      `${baseUrl}/?shard=${url()}&task=${TASK}&search-model=${other}&device=wasm&dtype=fp32#/search`,
    );
    await phase(page, 'ready', 'done');
    await page.selectOption('[data-testid="search-model"]', MODEL);
    await page.fill('[data-testid="search-input"]', QUERY);
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-ivf"], [data-testid="search-error"]', {
      timeout: 300_000,
    });
    expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
    const hits = await page
      .locator('[data-testid="results"] [data-doc]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-doc') ?? ''));
    expect(hits).toHaveLength(20);
    expect(hits.every((id) => corpus.has(id))).toBe(true);
    // Through the packed index, which only bert-tiny has (xlmr-tiny would be refused: no index of it).
    expect(await page.locator('[data-testid="search-ivf"]').count()).toBe(1);
    expect(pageErrors(page)).toEqual([]);
  });

  test('a set packed for q8 queries: at dtype auto the model loads at q8, ahead of the query and for it', async () => {
    // bert-tiny's own default on WASM is fp32; this shard's index was packed with its q8 weights, as
    // a hub model's (q8 by default on WASM) would be with fp32 sentence-transformers vectors the
    // other way round. The link names no dtype: the set decides, for the load ahead and the query.
    const packed = join(dir, 'shards/medquad-q8');
    writeSubset(join(DATA_DIR, 'medquad'), packed, { docs: 300, queries: 6, name: 'medquad-q8' });
    packShard(packed, ['--model', MODEL, '--dtype', 'q8', '--index', 'ivf', '--nlist', '16', '--offsets']);
    const quantised = `/${MODEL}/onnx/model_quantized.onnx`;
    let asked!: () => void;
    const modelAsked = new Promise<void>((r) => (asked = r));
    const onRequest = (req: Request) => {
      if (req.url().includes(quantised)) asked();
    };
    s.context.on('request', onRequest);
    // As in the first test: the qrels wait until the q8 weights are asked for (the load ahead).
    let held: { askedFirst: boolean } | null = null;
    server.hold = (path) =>
      path.includes('/medquad-q8/') && path.endsWith('/qrels/test.tsv') && !held
        ? Promise.race([
            modelAsked.then(() => true),
            new Promise((r) => setTimeout(() => r(false), 60_000)),
          ]).then((first) => void (held = { askedFirst: first === true }))
        : undefined;
    try {
      await page.goto(
        `${baseUrl}/?shard=${server.url}shards/medquad-q8/&task=${TASK}&search-model=${MODEL}&retriever=dense&model=${MODEL}&device=wasm#/search`,
      );
      await phase(page, 'ready', 'done');
    } finally {
      server.hold = undefined;
      s.context.off('request', onRequest);
    }
    expect(held).toEqual({ askedFirst: true });
    await page.fill('[data-testid="search-input"]', QUERY);
    await page.click('[data-testid="search-submit"]');
    await page.waitForSelector('[data-testid="search-ivf"], [data-testid="search-error"]', {
      timeout: 300_000,
    });
    expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
    expect(await page.locator('[data-testid="results"] [data-doc]').count()).toBe(20);
    // The query's encoder, as the Benchmark view reports the last load: q8, and why.
    await page.evaluate(() => (location.hash = '#/benchmark'));
    const backend = page.locator('[data-testid="backend"]');
    await backend.waitFor();
    const line = squash(await backend.innerText());
    expect(line).toContain('WASM · q8');
    expect(line).toContain("q8 (the shard's embeddings of this model are for q8 queries)");
    // Imported, its q8 packed set is in the cache: a Benchmark run at dtype auto takes q8 from there,
    // searches that index on the host (its rows by Range), and embeds no document (the encoder
    // worker's own counters).
    await page.evaluate(() => (location.hash = '#/shards'));
    await page.click('[data-testid="import-remote"]');
    await page.locator('[data-testid="remote-first"]').waitFor({ state: 'detached', timeout: 300_000 });
    await phase(page, 'ready', 'done');
    await page.evaluate(() => (location.hash = '#/benchmark'));
    const from = server.log.length;
    await page.click('[data-testid="run-task"]');
    expect(await phase(page, 'done', 'error')).toBe('done');
    expect(
      server.log
        .slice(from)
        .some((e) => e.path.includes(`/medquad-q8/embeddings/${MODEL}/q8/`) && e.status === 206),
    ).toBe(true);
    const w = page.workers().find((x) => x.url().includes('encoder.worker'));
    const counters = await w!.evaluate(
      () => (self as unknown as { loupeEncoderCounters: Record<string, number> }).loupeEncoderCounters,
    );
    expect(counters).toMatchObject({ docsEmbedded: 0 });
    expect(squash(await backend.innerText())).toMatch(
      /WASM · q8 · \d threads? · loupe-test\/bert-tiny-random · WASM as requested/,
    );
    expect(squash(await backend.innerText())).toContain(
      "q8 (the shard's embeddings of this model are for q8 queries)",
    );
    expect(pageErrors(page)).toEqual([]);
  });

  test('qrels changed after packing are checked id by id; a version 1 offsets file still opens', async () => {
    const packed = join(dir, 'shards/medquad-remote');
    const copy = (name: string) => {
      const to = join(dir, 'shards', name);
      cpSync(packed, to, { recursive: true });
      return to;
    };
    const qrelsText = readFileSync(join(packed, 'qrels/test.tsv'), 'utf8');
    const qrelsLines = qrelsText.split('\n').filter(Boolean);
    // Appended lines start on a line of their own.
    const nl = qrelsText.endsWith('\n') ? '' : '\n';
    const [q0] = qrelsLines[1].split('\t');
    const ids = [...corpus.keys()];
    // A judgement added after packing, of a document the corpus has: the checksum no longer matches,
    // so the judged ids are looked up (blocks of the id table, by Range), and the shard opens.
    const added = copy('medquad-added');
    appendFileSync(join(added, 'qrels/test.tsv'), `${nl}${q0}\t${ids[500]}\t1\n`);
    // One of a document it lacks: refused, with the file and line named.
    const unknown = copy('medquad-unknown');
    appendFileSync(join(unknown, 'qrels/test.tsv'), `${nl}${q0}\tno-such-doc\t1\n`);
    // A shard.json that states another number of documents than the offsets file holds: refused.
    const miscounted = copy('medquad-miscounted');
    const stated = JSON.parse(readFileSync(join(miscounted, 'shard.json'), 'utf8')) as Json;
    writeFileSync(
      join(miscounted, 'shard.json'),
      JSON.stringify({ ...stated, counts: { corpus: ids.length + 1 } }, null, 2),
    );
    // A version 1 offsets file (every id, read whole) and a sidecar listing every id, as packed before.
    const old = copy('medquad-v1');
    const buf = readFileSync(join(old, 'corpus.jsonl'));
    const starts: number[] = [];
    const lengths: number[] = [];
    for (let at = 0; at < buf.length;) {
      let end = buf.indexOf(0x0a, at);
      if (end < 0) end = buf.length;
      if (end > at) (starts.push(at), lengths.push(end - at));
      at = end + 1;
    }
    writeFileSync(
      join(old, 'corpus.offsets.bin'),
      encodeDocOffsets({
        ids,
        starts,
        lengths,
        lines: starts.map((_, i) => i + 1),
        corpusBytes: buf.length,
        corpusFnv: fnv1aBytes(buf),
        format: 'beir+images',
      }),
    );
    const sidecarFile = join(old, `embeddings/${MODEL}/fp32/sidecar-text.json`);
    const { corpus_order: _order, ...rest } = JSON.parse(readFileSync(sidecarFile, 'utf8')) as Json;
    writeFileSync(sidecarFile, JSON.stringify({ ...rest, doc_ids: ids }));

    const open = async (name: string, ...phases: string[]) => {
      const from = server.log.length;
      await page.goto(
        `${baseUrl}/?shard=${server.url}shards/${name}/&task=${TASK}&search-model=${MODEL}&device=wasm&dtype=fp32#/search`,
      );
      await phase(page, ...(phases.length ? phases : ['ready', 'done']));
      return server.log.slice(from).filter((e) => e.method === 'GET' && e.path.includes(`/${name}/`));
    };
    const search = async () => {
      await page.fill('[data-testid="search-input"]', QUERY);
      await page.click('[data-testid="search-submit"]');
      await page.waitForSelector('[data-testid="search-ivf"], [data-testid="search-error"]', {
        timeout: 300_000,
      });
      expect(await page.locator('[data-testid="search-error"]').count()).toBe(0);
      const hits = await page
        .locator('[data-testid="results"] [data-doc]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-doc') ?? ''));
      expect(hits).toHaveLength(20);
      return hits;
    };

    const addedReads = await open('medquad-added');
    const offsetReads = addedReads.filter((e) => e.path.endsWith('/corpus.offsets.bin'));
    expect(offsetReads.length).toBeGreaterThan(1);
    expect(offsetReads.every((e) => e.status === 206)).toBe(true);
    const fresh = await search();

    await open('medquad-unknown', 'idle', 'error');
    const messages = page.locator('[data-testid="message"]');
    await messages.first().waitFor();
    const text = (await messages.allInnerTexts()).join(' ');
    expect(text).toContain(`qrels/test.tsv line ${qrelsLines.length + 1}`);
    expect(text).toContain('"no-such-doc" is not in corpus.jsonl');
    await open('medquad-miscounted', 'idle', 'error');
    await messages.first().waitFor();
    expect((await messages.allInnerTexts()).join(' ')).toContain(
      `corpus.offsets.bin: has ${ids.length} documents, shard.json's counts.corpus says ${ids.length + 1}`,
    );

    const oldReads = await open('medquad-v1');
    expect(
      oldReads.filter((e) => e.path.endsWith('/corpus.offsets.bin')).map((e) => [e.status, e.bytes]),
    ).toEqual([
      [206, 16384],
      [200, readFileSync(join(old, 'corpus.offsets.bin')).length],
    ]);
    // The same index and query: the same results as through the version 2 file.
    expect(await search()).toEqual(fresh);
    expect(pageErrors(page)).toEqual([]);
  });

  test('the Benchmark view says runs need the import, for BM25 and dense alike', async () => {
    for (const retriever of [`dense&model=${MODEL}&device=wasm&dtype=fp32`, 'bm25']) {
      await page.goto(`${baseUrl}/?shard=${url()}&task=${TASK}&retriever=${retriever}#/benchmark`);
      await phase(page, 'ready', 'done');
      await page.waitForSelector('[data-testid="run-blocker"]');
      expect(await page.locator('[data-testid="run-task"]').isDisabled()).toBe(true);
      expect(await page.locator('[data-testid="run-blocker"]').innerText()).toContain(
        'benchmark runs need the shard imported (its documents are read from the host on demand): Import in the Shards view.',
      );
    }
    // (medquad-q8, imported in an earlier test, was read whole.)
    const reads = server.log.filter((e) => e.path.endsWith('/medquad-remote/corpus.jsonl'));
    expect(reads.every((e) => e.status === 206)).toBe(true);
    expect(pageErrors(page)).toEqual([]);
  });

  test('the Shards view says so, and imports the corpus when asked', async () => {
    await page.evaluate(() => (location.hash = '#/shards'));
    const note = page.locator('[data-testid="remote-first"]');
    await note.waitFor();
    expect(squash(await note.innerText())).toContain('Documents are read from the host on demand');
    expect(await note.innerText()).toContain('Import for BM25 and benchmark runs');
    expect(await page.locator('[data-testid="docs-held"]').innerText()).toContain(
      'read from the shard’s host',
    );
    // Nothing was imported yet: the cached list does not have it.
    const cached = page.locator('[aria-labelledby="cached-h"]');
    expect(await cached.innerText()).not.toContain('medquad-remote');
    // It fits a phone's width as well as a desktop's.
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      if (width !== 1024)
        await page.screenshot({ path: shotPath(`remote-first-shards-${width}.png`), fullPage: true });
    }
    const from = server.log.length;
    await page.click('[data-testid="import-remote"]');
    await note.waitFor({ state: 'detached', timeout: 300_000 });
    await phase(page, 'ready', 'done');
    // The whole corpus this time (the import reads it), and the shard is cached.
    expect(server.log.slice(from).some((e) => e.path.endsWith('/corpus.jsonl') && e.status === 200)).toBe(
      true,
    );
    // The imported shard opened in its place (the app went to the Search view): no note any more.
    await page.evaluate(() => (location.hash = '#/shards'));
    await page.waitForSelector('[data-testid="shard-info"]');
    expect(await cached.innerText()).toContain('medquad-remote');
    expect(await note.count()).toBe(0);
    expect(pageErrors(page)).toEqual([]);
  });
});

function squash(t: string): string {
  return t.replace(/\s+/g, ' ').trim();
}
