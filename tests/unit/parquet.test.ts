// Parquet (MIEB layout) import in Node: the vqa-rad fixture written by tests/fixtures/parquet/make-mieb.ts
// reads to the same documents, queries and judgements as the JSONL shard; layouts and mappings are
// detected from paths and schemas; broken files fail with file, row group and row.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import {
  checkParquetMapping,
  classifyParquetPath,
  detectParquetMapping,
  normaliseQuerySplits,
  parseModality,
  type ParquetFileInfo,
} from '../../src/lib/core/media/parquet/mapping';
import { parseHubDatasetUrl } from '../../src/lib/platform/sources/hub-dataset';
import {
  recallParquetMapping,
  rememberParquetMapping,
} from '../../src/lib/platform/storage/parquet-mappings';
import { inspectParquet, readParquetShard } from '../../src/lib/core/media/parquet/read-parquet';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError, type ShardIssue } from '../../src/lib/core/shard/source';
import type { ParsedShard } from '../../src/lib/core/types';
import { makeMieb, writeParquet, type MiebFixture } from '../fixtures/parquet/make-mieb';
import { loadNodeDicomCodecs } from '../../scripts/lib/node-dicom-codecs';
import { readFileSync } from 'node:fs';
import { DATA_DIR } from '../paths';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { MemorySource } from '../../src/lib/core/shard/memory-source';

let out: string;
let fx: MiebFixture;

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'loupe-mieb-'));
  fx = makeMieb(out);
});
afterAll(() => rmSync(out, { recursive: true, force: true }));

async function issuesOf(dir: string): Promise<ShardIssue[]> {
  const source = new FsSource(dir);
  const inspection = await inspectParquet(source);
  try {
    await readParquetShard(source, inspection.mapping, { inspection });
  } catch (e) {
    if (e instanceof ShardValidationError) return e.issues;
    throw e;
  }
  throw new Error('expected the import to fail');
}

describe('Parquet layouts', () => {
  it('reads role and split from hub, refs/convert/parquet and flat paths', () => {
    expect(classifyParquetPath('corpus/test-00000-of-00001.parquet')).toEqual({
      role: 'corpus',
      config: 'corpus',
      split: 'test',
    });
    expect(classifyParquetPath('refs/convert/parquet/query/test/0000.parquet')).toEqual({
      role: 'query',
      config: 'query',
      split: 'test',
    });
    expect(classifyParquetPath('qrels/partial-dev/0001.parquet')).toEqual({
      role: 'qrels',
      config: 'qrels',
      split: 'dev',
    });
    expect(classifyParquetPath('queries/dev.parquet')).toEqual({
      role: 'query',
      config: 'queries',
      split: 'dev',
    });
    expect(classifyParquetPath('qrels-train.parquet')).toEqual({
      role: 'qrels',
      config: 'qrels',
      split: 'train',
    });
    expect(classifyParquetPath('corpus.parquet')).toEqual({
      role: 'corpus',
      config: 'corpus',
      split: 'test',
    });
    expect(classifyParquetPath('images/x.parquet').role).toBeNull();
  });

  it('parses MIEB modality values', () => {
    expect(parseModality('image,text')).toBe('image+text');
    expect(parseModality('text')).toBe('text');
    expect(parseModality('Image')).toBe('image');
    expect(parseModality('x-ray')).toBeNull();
  });
});

describe('Parquet mapping detection', () => {
  const file = (
    path: string,
    columns: [string, ParquetFileInfo['columns'][number]['kind']][],
  ): ParquetFileInfo => ({
    path,
    ...classifyParquetPath(path),
    rows: 1,
    rowGroups: [1],
    columns: columns.map(([name, kind]) => ({ name, kind })),
  });
  // MTEB's text retrieval layout: corpus/, queries/ and the qrels in the default configuration.
  const files = [
    file('corpus/corpus-00000-of-00001.parquet', [
      ['_id', 'string'],
      ['title', 'string'],
      ['text', 'string'],
    ]),
    file('queries/queries-00000-of-00001.parquet', [
      ['_id', 'string'],
      ['text', 'string'],
      ['lang', 'string'],
    ]),
    file('default/test-00000-of-00001.parquet', [
      ['query-id', 'string'],
      ['corpus-id', 'string'],
      ['score', 'number'],
    ]),
    file('default/train-00000-of-00001.parquet', [
      ['query-id', 'string'],
      ['corpus-id', 'string'],
      ['score', 'number'],
    ]),
  ];

  it('maps an MTEB text dataset and prefers the test split', () => {
    // The queries file's "split" (queries) is none of the qrels': it serves every qrels split.
    normaliseQuerySplits(files);
    expect(files[1].split).toBe('*');
    const m = detectParquetMapping(files, { name: 'scifact' });
    expect(m).toEqual({
      version: 1,
      name: 'scifact',
      corpus: { id: '_id', text: 'text', title: 'title', image: undefined, modality: undefined, meta: [] },
      query: {
        id: '_id',
        text: 'text',
        image: undefined,
        modality: undefined,
        excludeIds: undefined,
        meta: ['lang'],
      },
      qrels: { queryId: 'query-id', corpusId: 'corpus-id', score: 'score' },
      splits: ['test'],
    });
    expect(checkParquetMapping(files, m)).toEqual([]);
  });

  it('names what an edited mapping gets wrong', () => {
    const m = detectParquetMapping(files, { name: 'x' });
    const issues = checkParquetMapping(files, {
      ...m,
      corpus: { ...m.corpus, text: 'body', image: 'title' },
    });
    expect(issues.map((i) => [i.file, i.code])).toEqual([
      ['corpus/corpus-00000-of-00001.parquet', 'missing-column'],
      ['corpus/corpus-00000-of-00001.parquet', 'wrong-type'],
    ]);
    expect(checkParquetMapping(files, { ...m, splits: ['dev'] }).map((i) => [i.file, i.code])).toEqual([
      ['qrels/', 'missing-file'],
    ]);
  });

  it('remembers a mapping per dataset identity', () => {
    const data = new Map<string, string>();
    const store = {
      getItem: (k: string) => data.get(k) ?? null,
      setItem: (k: string, v: string) => void data.set(k, v),
      removeItem: (k: string) => void data.delete(k),
    };
    const m = detectParquetMapping(files, { name: 'x' });
    expect(recallParquetMapping('id-1', store)).toBeNull();
    rememberParquetMapping('id-1', m, store);
    expect(recallParquetMapping('id-1', store)).toEqual(JSON.parse(JSON.stringify(m)));
    expect(recallParquetMapping('id-2', store)).toBeNull();
    data.set('loupe:parquet-mapping:id-3', JSON.stringify({ ...m, version: 0 }));
    expect(recallParquetMapping('id-3', store)).toBeNull();
  });

  it('parses Hugging Face dataset URLs', () => {
    expect(parseHubDatasetUrl('https://huggingface.co/datasets/MIEB/foo')).toEqual({
      repo: 'MIEB/foo',
      revision: 'main',
      folder: '',
      resolveBase: 'https://huggingface.co/datasets/MIEB/foo/resolve/main/',
    });
    expect(
      parseHubDatasetUrl('https://huggingface.co/datasets/MIEB/foo/resolve/refs%2Fconvert%2Fparquet/corpus/'),
    ).toMatchObject({ revision: 'refs/convert/parquet', folder: 'corpus' });
    expect(parseHubDatasetUrl('https://example.org/datasets/a/b')).toBeNull();
  });
});

describe('small Parquet datasets in memory', () => {
  const strings = (name: string, data: (string | null)[]) => ({ name, data, type: 'STRING' as const });
  const file = (columnData: Parameters<typeof parquetWriteBuffer>[0]['columnData'], codec?: 'GZIP') =>
    new Uint8Array(
      parquetWriteBuffer({
        columnData,
        ...(codec ? { codec, compressors: { GZIP: (b: Uint8Array) => new Uint8Array(gzipSync(b)) } } : {}),
      }),
    );
  const dataset = () => ({
    // gzip pages need hyparquet-compressors; the reader has no random access here (whole-file fallback).
    'corpus.parquet': file(
      [strings('_id', ['d1', 'd2', 'd3']), strings('text', ['heart attack', 'broken leg', 'flu symptoms'])],
      'GZIP',
    ),
    'queries.parquet': file([
      strings('_id', ['q1', 'q2', 'q3']),
      strings('text', ['myocardial', 'fracture', 'cold']),
    ]),
    'qrels-test.parquet': file([
      strings('query-id', ['q1', 'q2']),
      strings('corpus-id', ['d1', 'd2']),
      { name: 'score', data: [1, 2], type: 'INT32' as const },
    ]),
  });

  it('reads flat files with gzip pages; a query without judgements is skipped with a warning', async () => {
    const source = new MemorySource(dataset(), { label: 'tiny' });
    const inspection = await inspectParquet(source);
    const shard = await readParquetShard(source, inspection.mapping, { inspection });
    expect(shard.docs.map((d) => [d.id, d.text])).toEqual([
      ['d1', 'heart attack'],
      ['d2', 'broken leg'],
      ['d3', 'flu symptoms'],
    ]);
    expect(shard.manifest).toMatchObject({
      name: 'tiny',
      tasks: [{ id: 'test', queryModality: 'text', corpusModality: 'text' }],
    });
    expect(shard.queries.map((q) => q.id)).toEqual(['q1', 'q2']);
    expect(shard.qrels.get('q2')).toEqual(new Map([['d2', 2]]));
    expect(shard.warnings).toEqual([
      expect.objectContaining({ file: 'queries.parquet', code: 'queries-without-qrels', examples: ['q3'] }),
    ]);
  });

  it('names a file that is not Parquet, and a duplicate id by its row', async () => {
    const garbage = new MemorySource({ ...dataset(), 'corpus.parquet': 'not parquet at all, just text' });
    await expect(inspectParquet(garbage)).rejects.toMatchObject({
      issues: [{ file: 'corpus.parquet', code: 'parquet-invalid' }],
    });
    const dup = new MemorySource({
      ...dataset(),
      'corpus.parquet': file([strings('_id', ['d1', 'd2', 'd1']), strings('text', ['a', 'b', 'c'])]),
    });
    const inspection = await inspectParquet(dup);
    await expect(readParquetShard(dup, inspection.mapping, { inspection })).rejects.toMatchObject({
      issues: [
        {
          file: 'corpus.parquet',
          rowGroup: 0,
          row: 2,
          code: 'duplicate-id',
          message: 'duplicate document _id "d1" (first in corpus.parquet, row group 0, row 0)',
        },
      ],
    });
  });
});

describe('Parquet messages name the real column and split (issue 23)', () => {
  const strings = (name: string, data: (string | null)[]) => ({ name, data, type: 'STRING' as const });
  const file = (columnData: Parameters<typeof parquetWriteBuffer>[0]['columnData']) =>
    new Uint8Array(parquetWriteBuffer({ columnData }));
  const corpus = (ids: (string | null)[]) =>
    file([
      strings('id', ids),
      strings(
        'text',
        ids.map((_, i) => `text ${i}`),
      ),
    ]);
  const queries = file([strings('id', ['q1']), strings('text', ['heart'])]);
  const qrels = file([
    strings('query-id', ['q1']),
    strings('corpus-id', ['d1']),
    { name: 'score', data: [1], type: 'INT32' as const },
  ]);
  async function issues(files: Record<string, Uint8Array>): Promise<ShardIssue[]> {
    const source = new MemorySource(files, { label: 'mieb' });
    const inspection = await inspectParquet(source);
    const err = await readParquetShard(source, inspection.mapping, { inspection }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ShardValidationError);
    return (err as ShardValidationError).issues;
  }

  it('reports a null or invalid id once, by its column "id" (not the virtual "_id")', async () => {
    const found = await issues({
      'corpus/test-00000-of-00001.parquet': corpus(['d1', null, 'a b']),
      'query/test-00000-of-00001.parquet': queries,
      'qrels/test-00000-of-00001.parquet': qrels,
    });
    expect(found).toEqual([
      {
        file: 'corpus/test-00000-of-00001.parquet',
        rowGroup: 0,
        row: 1,
        code: 'missing-field',
        message: 'column "id" is empty (null); every row needs an id',
      },
      {
        file: 'corpus/test-00000-of-00001.parquet',
        rowGroup: 0,
        row: 2,
        code: 'invalid-id',
        message: expect.stringMatching(/^column "id" holds "a b", not a valid id: use only A-Z/),
      },
    ]);
    expect(found.map((i) => i.message).join('\n')).not.toContain('_id');
  });

  it('names the split it looked for when the qrels are missing, and the splits there are', async () => {
    const base = {
      'corpus/test-00000-of-00001.parquet': corpus(['d1']),
      'query/test-00000-of-00001.parquet': queries,
    };
    expect(await issues(base)).toEqual([
      {
        file: 'qrels/',
        code: 'missing-file',
        message:
          'no qrels Parquet files for split test (expected qrels/*.parquet or qrels/<split>/*.parquet)',
      },
    ]);
    const elsewhere = await issues({
      'corpus/test-00000-of-00001.parquet': corpus(['d1']),
      'query/dev-00000-of-00001.parquet': queries,
      'query/x-00000-of-00001.parquet': queries,
      'qrels/train-00000-of-00001.parquet': qrels,
    });
    expect(elsewhere.map((i) => i.message)).toEqual([
      'no query Parquet files for split test (expected query/*.parquet or query/<split>/*.parquet; there are query files for splits dev, x)',
      'no qrels Parquet files for split test (expected qrels/*.parquet or qrels/<split>/*.parquet; there are qrels files for split train)',
    ]);
    expect(elsewhere.map((i) => i.message).join('\n')).not.toContain('(none)');
  });

  it('refuses a role column of the wrong type by file, column and type (issue 36 item 9)', async () => {
    // DuckDB writes an integer `text`; an image kept as a path string: both are mapped, then refused.
    const found = await issues({
      'corpus/test-00000-of-00001.parquet': file([
        strings('id', ['d1']),
        { name: 'text', data: [7n], type: 'INT64' as const },
        strings('image', ['images/d1.png']),
      ]),
      'query/test-00000-of-00001.parquet': queries,
      'qrels/test-00000-of-00001.parquet': qrels,
    });
    expect(found).toEqual([
      {
        file: 'corpus/test-00000-of-00001.parquet',
        code: 'wrong-type',
        message:
          'column "text" (the document text) holds number values (Parquet INT64); the document text needs string or binary values',
      },
      {
        file: 'corpus/test-00000-of-00001.parquet',
        code: 'wrong-type',
        message:
          'column "image" (the document image) holds string values (Parquet BYTE_ARRAY UTF8); the document image needs image or binary values',
      },
    ]);
    // A qrels score of text and a query id of booleans are refused the same way.
    const qrelsFile = file([
      strings('query-id', ['q1']),
      strings('corpus-id', ['d1']),
      { name: 'score', data: [true], type: 'BOOLEAN' as const },
    ]);
    const more = await issues({
      'corpus/test-00000-of-00001.parquet': corpus(['d1']),
      'query/test-00000-of-00001.parquet': file([
        { name: 'id', data: [true], type: 'BOOLEAN' as const },
        strings('text', ['heart']),
      ]),
      'qrels/test-00000-of-00001.parquet': qrelsFile,
    });
    expect(more.map((i) => [i.file, i.message.split(';')[0]])).toEqual([
      [
        'query/test-00000-of-00001.parquet',
        'column "id" (the query id) holds boolean values (Parquet BOOLEAN)',
      ],
      [
        'qrels/test-00000-of-00001.parquet',
        'column "score" (the relevance score) holds boolean values (Parquet BOOLEAN)',
      ],
    ]);
  });
});

describe('DICOM in a Parquet image column', () => {
  const PYDICOM_DATA = '/usr/lib/python3/dist-packages/pydicom/data/test_files';
  const dcm = (name: string) => new Uint8Array(readFileSync(join(PYDICOM_DATA, name)));

  /** A MIEB dataset whose corpus images are `images` (DICOM bytes) and whose one query judges d0. */
  function dataset(images: Uint8Array[]): string {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-pq-dicom-'));
    const corpus = images.map((bytes, i) => ({
      id: `d${i}`,
      text: `scan ${i}`,
      image: { bytes, path: `d${i}.dcm` },
    }));
    writeParquet(
      join(dir, 'corpus/test-00000-of-00001.parquet'),
      [
        { name: 'id', kind: 'string' },
        { name: 'text', kind: 'string' },
        { name: 'image', kind: 'image' },
      ],
      corpus,
      64,
    );
    writeParquet(
      join(dir, 'query/test-00000-of-00001.parquet'),
      [
        { name: 'id', kind: 'string' },
        { name: 'text', kind: 'string' },
      ],
      [{ id: 'q0', text: 'scan' }],
      64,
    );
    writeParquet(
      join(dir, 'qrels/test-00000-of-00001.parquet'),
      [
        { name: 'query-id', kind: 'string' },
        { name: 'corpus-id', kind: 'string' },
        { name: 'score', kind: 'int64' },
      ],
      [{ 'query-id': 'q0', 'corpus-id': 'd0', score: 1n }],
      64,
    );
    return dir;
  }

  async function read(dir: string) {
    const source = new FsSource(dir);
    const inspection = await inspectParquet(source);
    const stored: [string, number][] = [];
    const shard = await readParquetShard(source, inspection.mapping, {
      inspection,
      loadDicomCodecs: loadNodeDicomCodecs,
      onImage: (path, bytes) => void stored.push([path, bytes.length]),
    });
    return { shard, stored };
  }

  it('keeps decodable DICOM images as shard images', async () => {
    const dir = dataset([dcm('CT_small.dcm'), dcm('MR_small.dcm')]);
    try {
      const { shard, stored } = await read(dir);
      expect(shard.docs.map((d) => d.image)).toEqual(stored.map(([p]) => p));
      expect(stored.map(([p]) => p)).toEqual(['images/corpus/d0.dcm', 'images/corpus/d1.dcm']);
      expect(stored.map(([, n]) => n)).toEqual([dcm('CT_small.dcm').length, dcm('MR_small.dcm').length]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the Parquet file, row group, row and column of a DICOM image Loupe cannot decode', async () => {
    // JPEG-lossy.dcm is 12-bit JPEG Extended: a transfer syntax without a decoder here.
    const dir = dataset([dcm('CT_small.dcm'), dcm('JPEG-lossy.dcm')]);
    try {
      const err = await read(dir).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ShardValidationError);
      const issues = (err as ShardValidationError).issues;
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatchObject({ file: 'corpus/test-00000-of-00001.parquet', rowGroup: 0, row: 1 });
      expect(issues[0].message).toMatch(/^column "image" /);
      expect(issues[0].message).toMatch(/1\.2\.840\.10008\.1\.2\.4\.51|JPEG Extended/);
      expect(issues[0].message).not.toContain('corpus.jsonl');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('MIEB vqa-rad fixture', () => {
  let jsonl: ParsedShard;
  let pq: ParsedShard;

  beforeAll(async () => {
    jsonl = await readShard(new FsSource(join(DATA_DIR, 'vqa-rad')));
    const source = new FsSource(fx.valid);
    const inspection = await inspectParquet(source);
    expect(inspection.mapping).toMatchObject({
      corpus: { id: 'id', text: 'text', title: 'title', image: 'image', modality: 'modality' },
      query: { id: 'id', text: 'text', image: 'image', modality: 'modality', excludeIds: 'exclude_ids' },
      qrels: { queryId: 'query-id', corpusId: 'corpus-id', score: 'score' },
      splits: ['test'],
    });
    expect(inspection.mapping.corpus.meta).toEqual(['organ', 'imaging_modality', 'modality_source', 'plane']);
    pq = await readParquetShard(source, inspection.mapping, { inspection });
  });

  it('has the JSONL shard’s documents, queries and judgements', () => {
    expect(pq.docs.map((d) => [d.id, d.title, d.text, !!d.image])).toEqual(
      jsonl.docs.map((d) => [d.id, d.title, d.text, !!d.image]),
    );
    expect(pq.queries.map((q) => [q.id, q.text, !!q.image, q.excludeIds])).toEqual(
      jsonl.queries.map((q) => [q.id, q.text, !!q.image, q.excludeIds]),
    );
    expect([...pq.qrels].map(([q, r]) => [q, [...r]])).toEqual([...jsonl.qrels].map(([q, r]) => [q, [...r]]));
    expect(pq.docs[0].meta.organ).toBe(jsonl.docs[0].meta.organ);
    expect(pq.manifest.format).toBe('beir+images');
  });

  it('derives one task per query modality, matching vqa-rad’s tasks query for query', () => {
    const byTask = (s: ParsedShard) => {
      const m = new Map<string, string[]>();
      for (const q of s.queries) m.set(q.task, [...(m.get(q.task) ?? []), q.id]);
      return m;
    };
    const a = byTask(jsonl);
    const b = byTask(pq);
    expect(pq.manifest.tasks.map((t) => [t.id, t.queryModality, t.corpusModality])).toEqual([
      ['test-text', 'text', 'image+text'],
      ['test-image-text', 'image+text', 'image+text'],
      ['test-image', 'image', 'image+text'],
    ]);
    expect(b.get('test-text')).toEqual(a.get('text-to-image'));
    expect(b.get('test-image-text')).toEqual(a.get('image-question-to-passage'));
    expect(b.get('test-image')).toEqual(a.get('image-to-image'));
  });

  it('turns image columns into shard images, a query image shared with its corpus document', () => {
    expect(pq.images.length).toBe(jsonl.images.length);
    const i2i = pq.queries.find((q) => q.id.startsWith('i2i-'))!;
    const doc = pq.docs.find((d) => d.id === i2i.excludeIds![0])!;
    expect(i2i.image).toBe(doc.image);
  });

  it('fails a broken row group with its file and row group', async () => {
    const issues = await issuesOf(fx.brokenRowGroup);
    expect(issues[0]).toMatchObject({
      file: 'corpus/test-00000-of-00002.parquet',
      rowGroup: 1,
      code: 'parquet-corrupt',
    });
  });

  it('fails a missing column with its file', async () => {
    const issues = await issuesOf(fx.missingColumn);
    expect(issues).toEqual([
      expect.objectContaining({ file: 'corpus/test-00001-of-00002.parquet', code: 'missing-column' }),
    ]);
    expect(issues[0].message).toContain('"text"');
  });

  it('fails a qrels row naming an unknown document with its file, row group and row', async () => {
    const issues = await issuesOf(fx.unknownId);
    expect(issues).toEqual([
      {
        file: 'qrels/test-00000-of-00001.parquet',
        rowGroup: 0,
        row: 100,
        code: 'unknown-document',
        message: expect.stringContaining('"synpic-not-there"'),
      },
    ]);
  });
});
