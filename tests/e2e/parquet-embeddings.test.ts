// Corpus embeddings made elsewhere, as a Parquet column, in Chromium: a small medquad subset (built
// here in gitignored generated-shards/) is embedded once in the page with the generated bert-tiny
// model (random weights: the rankings exercise the pipeline, not retrieval quality); the same vectors
// are then shipped twice, through the npy layout and as a list<float32> column written here by
// hyparquet-writer (rows shuffled, several row groups), and dense queries on both shards rank the
// same documents with the same scores, embedding no corpus document. A wrong dimension, a missing id
// and a NaN each fail the import with the file, the row and the document named, and IndexedDB is
// left exactly as it was. A well-formed set whose dimension is not the model's is not used at run time.
// The same vectors as a column of a Parquet dataset's corpus, named in the column mapping (in the
// app's mapping form, and through the harness), give the same dense run; a NaN there fails the same way.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { EncoderHarness } from '../browser/encoder-harness';
import { DATA_DIR } from '../paths';
import { embeddingParquet, stringsParquet } from '../fixtures/parquet/embedding-column';
import type { ParquetMapping } from '../../src/lib/core/media/parquet/mapping';
import { PRECOMPUTED_FORMAT, writeNpyF16 } from '../../src/lib/core/shard/precomputed';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { shotPath } from './artifacts';

const baseUrl = inject('baseUrl');
const HARNESS = `${baseUrl}/tests/browser/encoder-harness.html`;
const call = harnessCaller<EncoderHarness>('encoderHarness');
const OUT = join(resolve(import.meta.dirname, '../..'), 'generated-shards');
const MODEL = 'loupe-test/bert-tiny-random';
const LOAD = { device: 'wasm' as const, dtype: 'fp32' as const };
const TASK = 'qa-answer-retrieval';
const PQ = 'embeddings/medquad-bert-tiny.parquet';
const KEY = `${MODEL}|fp32|text`;

type Json = Record<string, unknown>;
const lines = (p: string) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Json);

/** Text files of a 60-document medquad subset: 8 queries, their answers and 52 other answers. */
function subset() {
  const src = join(DATA_DIR, 'medquad');
  const qrels = readFileSync(join(src, 'qrels/test.tsv'), 'utf8').trim().split('\n').slice(1, 9);
  const queries = lines(join(src, 'queries.jsonl')).filter((q) =>
    qrels.some((l) => l.startsWith(`${q._id}\t`)),
  );
  const relevant = new Set(qrels.map((l) => l.split('\t')[1]));
  const all = lines(join(src, 'corpus.jsonl'));
  const others = all.filter((d) => !relevant.has(d._id as string)).slice(0, 52);
  const keep = new Set([...relevant, ...others.map((d) => d._id as string)]);
  const manifest = JSON.parse(readFileSync(join(src, 'shard.json'), 'utf8')) as Json;
  delete manifest.counts;
  return {
    queries,
    corpus: all.filter((d) => keep.has(d._id as string)),
    qrels: ['query-id\tcorpus-id\tscore', ...qrels].join('\n') + '\n',
    manifest,
  };
}

/** Writes generated-shards/<name>/ (the subset, named `name`) plus `extra` files; returns its URL path. */
function writeShard(name: string, extra: Record<string, Uint8Array | string> = {}): string {
  const s = subset();
  const dir = join(OUT, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'qrels'), { recursive: true });
  // A shard opened by URL is asked for embeddings/index.json only when shard.json names it.
  const embeddings = 'embeddings/index.json' in extra ? { embeddings: 'embeddings/index.json' } : {};
  writeFileSync(join(dir, 'shard.json'), JSON.stringify({ ...s.manifest, name, ...embeddings }, null, 2));
  writeFileSync(join(dir, 'corpus.jsonl'), s.corpus.map((d) => JSON.stringify(d)).join('\n') + '\n');
  writeFileSync(join(dir, 'queries.jsonl'), s.queries.map((d) => JSON.stringify(d)).join('\n') + '\n');
  writeFileSync(join(dir, 'qrels/test.tsv'), s.qrels);
  for (const [path, bytes] of Object.entries(extra)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  }
  return `/generated-shards/${name}/`;
}

/** A Parquet-set index.json for the model at fp32. */
function parquetIndex(normalized: boolean, dim = 64): string {
  return JSON.stringify({
    format: PRECOMPUTED_FORMAT,
    sets: [
      {
        model_id: MODEL,
        dtype: 'fp32',
        parquet: PQ,
        id_column: '_id',
        column: 'embedding',
        dim,
        normalized,
        query_prefix: '',
        doc_prefix: '',
      },
    ],
  });
}

/** A fixed shuffle of 0…n-1 (so that the file's row order is not the shard's). */
function shuffled(n: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let seed = 7;
  for (let i = n - 1; i > 0; i--) {
    seed = (seed * 48271) % 2147483647;
    const j = seed % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

describe('corpus embeddings from a Parquet column', () => {
  let s: Session;
  let page: Page;
  const names = [
    'pe-plain',
    'pe-npy',
    'pe-parquet',
    'pe-bad-dim',
    'pe-bad-missing',
    'pe-bad-nan',
    'pe-other-dim',
    'pe-hf',
    'pe-hf-bad',
  ];
  /** The page-embedded vectors of the subset (documents with text, shard order). */
  let ids: string[] = [];
  let rows: number[][] = [];
  let order: number[] = [];
  /** Ranked lists of the subset's queries from the npy shard (first test). */
  let reference: { hits: { docId: string; score: number }[] }[] = [];

  beforeAll(async () => {
    writeShard('pe-plain');
    s = await launch();
    page = s.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  });
  afterAll(async () => {
    await s?.dispose();
    for (const n of names) rmSync(join(OUT, n), { recursive: true, force: true });
  });

  test('a dense run from the Parquet column equals the same vectors through the npy layout; no corpus document is embedded', async () => {
    const errors = pageErrors(page);
    const plain = await call(page, 'importUrl', '/generated-shards/pe-plain/');
    if (!plain.ok) throw new Error(JSON.stringify(plain.issues));
    const ref = await call(page, 'corpusTextRows', plain.hash, MODEL, LOAD);
    ({ ids, rows } = ref);
    expect(ids).toHaveLength(60);
    expect(ref.dtype).toBe('fp32');
    const spec = ref.spec;

    // The npy layout, as npm run pack-shard writes it.
    const n = ids.length;
    const npy = writeNpyF16(Float32Array.from(rows.flat()), n, 64);
    const sidecar = {
      format: PRECOMPUTED_FORMAT,
      model_id: MODEL,
      hub_id: spec.hubId,
      revision: spec.revision,
      dtype: 'fp32',
      part: 'text',
      pooling: spec.pooling,
      normalize: spec.normalize,
      query_prefix: spec.queryPrefix,
      doc_prefix: spec.docPrefix,
      max_tokens: spec.maxTokens,
      dim: 64,
      vectors: 'text.npy',
      doc_ids: ids,
      missing: [],
    };
    const npyUrl = writeShard('pe-npy', {
      'embeddings/index.json': JSON.stringify({
        format: PRECOMPUTED_FORMAT,
        sets: [{ model_id: MODEL, dtype: 'fp32', path: `${MODEL}/fp32/` }],
      }),
      [`embeddings/${MODEL}/fp32/text.npy`]: npy,
      [`embeddings/${MODEL}/fp32/sidecar-text.json`]: JSON.stringify(sidecar),
    });
    // The same vectors as a Parquet column: rows shuffled, row groups of 7.
    order = shuffled(n);
    const pqUrl = writeShard('pe-parquet', {
      'embeddings/index.json': parquetIndex(spec.normalize),
      [PQ]: embeddingParquet({
        ids: order.map((i) => ids[i]),
        vectors: order.map((i) => rows[i]),
        rowGroupSize: 7,
      }),
    });

    const viaNpy = await call(page, 'importUrl', npyUrl);
    const viaPq = await call(page, 'importUrl', pqUrl);
    if (!viaNpy.ok || !viaPq.ok) throw new Error(JSON.stringify([viaNpy, viaPq]));
    for (const r of [viaNpy, viaPq]) expect(r.precomputed).toEqual({ stored: [KEY], problems: [] });
    expect(new Set([plain.hash, viaNpy.hash, viaPq.hash]).size).toBe(3);

    const texts = subset().queries.map((q) => q.text as string);
    const before = await call(page, 'counters');
    const a = await call(page, 'adhocDense', viaNpy.hash, TASK, MODEL, texts, LOAD, 10);
    const b = await call(page, 'adhocDense', viaPq.hash, TASK, MODEL, texts, LOAD, 10);
    const after = await call(page, 'counters');
    // Only the queries were embedded: both corpora came from the shipped vectors.
    expect(after.docsEmbedded).toBe(before.docsEmbedded);
    expect(after.precomputedRows - before.precomputedRows).toBe(2 * n);
    expect(b.map((r) => r.hits)).toEqual(a.map((r) => r.hits));
    reference = a;
    // Not vacuous: full lists, and the queries do not all rank the same documents first.
    expect(a.every((r) => r.hits.length === 10)).toBe(true);
    expect(new Set(a.map((r) => r.hits[0].docId)).size).toBeGreaterThan(1);
    // (The harness page has no favicon: the browser logs that 404.)
    expect(errors.filter((e) => !e.includes('/favicon.ico'))).toEqual([]);
  }, 600_000);

  test('a wrong dimension, a missing id and a NaN each fail with the file, row and document named; nothing is cached', async () => {
    expect(ids).toHaveLength(60);
    const n = ids.length;
    const file = (vectors: number[][], rowIds = ids) =>
      embeddingParquet({
        ids: order.map((i) => rowIds[i]),
        vectors: order.map((i) => vectors[i]),
        rowGroupSize: 7,
      });
    // Row r of the file holds document order[r]; break file row 12 (and drop file row 30).
    const at = (r: number) => order[r];
    const shortRow = rows.map((v, i) => (i === at(12) ? v.slice(0, 63) : v));
    const nanRow = rows.map((v, i) => (i === at(12) ? v.map((x, j) => (j === 5 ? NaN : x)) : v));
    const keep = order.filter((_, r) => r !== 30);
    const missing = embeddingParquet({ ids: keep.map((i) => ids[i]), vectors: keep.map((i) => rows[i]) });
    const cases = [
      {
        name: 'pe-bad-dim',
        bytes: file(shortRow),
        want: { file: PQ, row: 12, code: 'embedding-dimension' },
        text: `row 12 (0-based), document "${ids[at(12)]}": 63 values, the set's dimension is 64`,
      },
      {
        name: 'pe-bad-missing',
        bytes: missing,
        want: { file: PQ, code: 'embedding-missing-id' },
        text: `${n - 1} rows, ${n} documents have text; no row for 1 of them: "${ids[at(30)]}"`,
      },
      {
        name: 'pe-bad-nan',
        bytes: file(nanRow),
        want: { file: PQ, row: 12, code: 'embedding-not-finite' },
        text: `row 12 (0-based), document "${ids[at(12)]}": value 5 (0-based) is NaN`,
      },
    ];
    for (const c of cases) {
      const url = writeShard(c.name, { 'embeddings/index.json': parquetIndex(true), [PQ]: c.bytes });
      const before = await call(page, 'stored');
      const r = await call(page, 'importUrl', url);
      if (r.ok) throw new Error(`${c.name} imported`);
      expect(r.issues).toHaveLength(1);
      expect(r.issues[0]).toMatchObject(c.want);
      expect(r.issues[0].message).toBe(c.text);
      // Nothing stored: no shard record (complete or not), no document chunk, no artifact.
      const after = await call(page, 'stored');
      expect(after).toEqual(before);
      expect(after.shards.map((x) => x.name)).not.toContain(c.name);
    }
  }, 300_000);

  test('a set whose dimension is not the loaded model’s is kept at import but not used: the corpus is embedded', async () => {
    expect(ids).toHaveLength(60);
    // Well-formed 32-dimensional rows, named for bert-tiny (64 dimensions).
    const url = writeShard('pe-other-dim', {
      'embeddings/index.json': parquetIndex(false, 32),
      [PQ]: embeddingParquet({ ids, vectors: rows.map((v) => v.slice(0, 32)) }),
    });
    const r = await call(page, 'importUrl', url);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.precomputed).toEqual({ stored: [KEY], problems: [] });
    const before = await call(page, 'counters');
    const [hit] = await call(page, 'adhocDense', r.hash, TASK, MODEL, ['What causes colds ?'], LOAD, 10);
    const after = await call(page, 'counters');
    expect(hit.hits).toHaveLength(10);
    expect(after.precomputedRows).toBe(before.precomputedRows);
    expect(after.docsEmbedded - before.docsEmbedded).toBe(60);
  }, 300_000);

  /**
   * The subset as a Parquet dataset (flat files) whose corpus carries the vectors in an `embedding`
   * column; `vectors` replaces them (a broken row).
   */
  function writeDataset(name: string, vectors = rows): { url: string; files: string[] } {
    const sub = subset();
    const dir = join(OUT, name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const doc = new Map(sub.corpus.map((d) => [d._id as string, d]));
    writeFileSync(
      join(dir, 'corpus.parquet'),
      embeddingParquet({
        ids,
        vectors,
        strings: {
          title: ids.map((id) => (doc.get(id)!.title as string) ?? null),
          text: ids.map((id) => doc.get(id)!.text as string),
        },
        rowGroupSize: 16,
      }),
    );
    writeFileSync(
      join(dir, 'queries.parquet'),
      stringsParquet({
        _id: sub.queries.map((q) => q._id as string),
        text: sub.queries.map((q) => q.text as string),
      }),
    );
    const judged = sub.qrels
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split('\t'));
    writeFileSync(
      join(dir, 'qrels-test.parquet'),
      stringsParquet({ 'query-id': judged.map((j) => j[0]), 'corpus-id': judged.map((j) => j[1]) }),
    );
    return {
      url: `/generated-shards/${name}/`,
      files: ['corpus.parquet', 'queries.parquet', 'qrels-test.parquet'],
    };
  }

  const mappingOf = (name: string): ParquetMapping => ({
    version: 1,
    name,
    corpus: { id: '_id', title: 'title', text: 'text', meta: [] },
    query: { id: '_id', text: 'text', meta: [] },
    qrels: { queryId: 'query-id', corpusId: 'corpus-id' },
    splits: ['test'],
    embedding: {
      column: 'embedding',
      model_id: MODEL,
      dtype: 'fp32',
      dim: 64,
      normalized: true,
      query_prefix: '',
      doc_prefix: '',
      part: 'text',
    },
  });

  test('a Parquet dataset whose column mapping names a corpus embedding column: set in the mapping form, same dense run, a NaN fails', async () => {
    expect(reference).toHaveLength(8);
    const ds = writeDataset('pe-hf');
    // In the app: the dropped folder's mapping form takes the column and what made it.
    const ui = await s.context.newPage();
    const uiErrors: string[] = [];
    ui.on('pageerror', (e) => uiErrors.push(String(e)));
    try {
      await ui.goto(`${baseUrl}/#/shards`);
      await ui.waitForSelector(
        '[data-testid="app"][data-phase="idle"], [data-testid="app"][data-phase="ready"]',
      );
      await ui.setInputFiles('[data-testid="folder-input"]', join(OUT, 'pe-hf'));
      const panel = ui.getByTestId('parquet-mapping');
      const emb = panel.getByRole('group', { name: 'Corpus embeddings (optional)' });
      await emb.getByLabel('Embedding column').selectOption('embedding', { timeout: 60_000 });
      const confirm = panel.getByRole('button', { name: 'Import with these columns' });
      // Without a model id and a dimension the mapping cannot be confirmed, and says why.
      await expect
        .poll(() => panel.getByRole('alert').textContent())
        .toContain('the embedding column "embedding" needs a model id, a positive integer dimension');
      expect(await confirm.isDisabled()).toBe(true);
      await emb.getByLabel('Embedding model id').fill(MODEL);
      await emb.getByLabel('Embedding dimension').fill('64');
      await panel.getByLabel('Shard name').fill('pe-hf via the app');
      expect(await confirm.isDisabled()).toBe(false);
      for (const width of [390, 1024, 1440]) {
        await ui.setViewportSize({ width, height: 900 });
        const [sw, iw] = await ui.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
        expect(sw).toBeLessThanOrEqual(iw);
      }
      await emb.screenshot({ path: shotPath('parquet-embedding-mapping-390.png') }).catch(() => undefined);
      await confirm.click();
      await expect
        .poll(
          () =>
            ui
              .getByTestId('shard-name')
              .innerText()
              .catch(() => ''),
          { timeout: 120_000 },
        )
        .toBe('pe-hf via the app');
      expect(uiErrors).toEqual([]);
    } finally {
      await ui.close();
    }
    const stored = await call(page, 'stored');
    const hash = stored.shards.find((x) => x.name === 'pe-hf via the app')?.hash;
    expect(hash).toBeTruthy();
    expect(stored.artifacts).toContain(`${hash}|precomputed|${KEY}`);

    // Through the harness, without and with the embedding column: one cache entry (the embedding
    // column is not part of the content hash); dense queries then rank as on the npy shard.
    const { embedding: _e, ...withoutEmbedding } = mappingOf('pe-hf');
    const plain = await call(page, 'importUrl', ds.url, { files: ds.files, parquet: withoutEmbedding });
    const r = await call(page, 'importUrl', ds.url, { files: ds.files, parquet: mappingOf('pe-hf') });
    if (!plain.ok || !r.ok) throw new Error(JSON.stringify([plain, r]));
    expect(plain.precomputed).toEqual({ stored: [], problems: [] });
    expect(r.hash).toBe(plain.hash);
    expect(r.precomputed).toEqual({ stored: [KEY], problems: [] });
    const texts = subset().queries.map((q) => q.text as string);
    const before = await call(page, 'counters');
    const got = await call(page, 'adhocDense', r.hash, 'test', MODEL, texts, LOAD, 10);
    const after = await call(page, 'counters');
    expect(after.docsEmbedded).toBe(before.docsEmbedded);
    expect(after.precomputedRows - before.precomputedRows).toBe(60);
    expect(got.map((x) => x.hits)).toEqual(reference.map((x) => x.hits));

    // A NaN in row 5 of the corpus file: named, and nothing is stored.
    const bad = writeDataset(
      'pe-hf-bad',
      rows.map((v, i) => (i === 5 ? v.map((x, j) => (j === 0 ? NaN : x)) : v)),
    );
    const was = await call(page, 'stored');
    const failed = await call(page, 'importUrl', bad.url, {
      files: bad.files,
      parquet: mappingOf('pe-hf-bad'),
    });
    if (failed.ok) throw new Error('a NaN was accepted');
    expect(failed.issues).toEqual([
      {
        file: 'corpus.parquet',
        row: 5,
        code: 'embedding-not-finite',
        message: `row 5 (0-based), document "${ids[5]}": value 0 (0-based) is NaN`,
      },
    ]);
    expect(await call(page, 'stored')).toEqual(was);
  }, 600_000);
});
