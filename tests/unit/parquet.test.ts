// Parquet (MIEB layout) import in Node: the vqa-rad fixture written by tests/fixtures/parquet/make-mieb.ts
// reads to the same documents, queries and judgements as the JSONL shard; layouts and mappings are
// detected from paths and schemas; broken files fail with file, row group and row.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import { classifyParquetPath, parseModality } from '../../src/lib/core/parquet/mapping';
import { inspectParquet, readParquetShard } from '../../src/lib/core/parquet/read-parquet';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError, type ShardIssue } from '../../src/lib/core/source';
import type { ParsedShard } from '../../src/lib/core/types';
import { makeMieb, type MiebFixture } from '../fixtures/parquet/make-mieb';
import { DATA_DIR } from '../paths';

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
