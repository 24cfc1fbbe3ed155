// The streamed Parquet import (issue 18) against the whole read, in Node on the vqa-rad MIEB fixture
// (images, three query modalities, two corpus files of five row groups): the first pass keeps no
// documents and gives the whole read's hash, tasks, queries and judgements; the second pass hands on
// the whole read's documents in order; with the shard worker's Blob stash the image bytes are the
// whole read's; broken files fail with the same issues; a corpus or a qrels file changed between the
// passes fails naming it.
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import { inspectParquet, readParquetShard } from '../../src/lib/core/media/parquet/read-parquet';
import { readParquetStreamed } from '../../src/lib/core/media/parquet/stream-parquet';
import { ShardValidationError, type ShardIssue } from '../../src/lib/core/shard/source';
import { blobImageStash } from '../../src/lib/platform/storage/blob-image-stash';
import type { Doc, Progress } from '../../src/lib/core/types';
import { makeMieb, writeParquet, type Column, type MiebFixture } from '../fixtures/parquet/make-mieb';

const CORPUS_COLUMNS: Column[] = [
  { name: 'id', kind: 'string' },
  { name: 'modality', kind: 'string' },
  { name: 'title', kind: 'string' },
  { name: 'text', kind: 'string' },
  { name: 'image', kind: 'image' },
  { name: 'organ', kind: 'string' },
  { name: 'imaging_modality', kind: 'string' },
  { name: 'modality_source', kind: 'string' },
  { name: 'plane', kind: 'string' },
];

const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

let out: string;
let fx: MiebFixture;

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'loupe-mieb-stream-'));
  fx = makeMieb(out);
});
afterAll(() => rmSync(out, { recursive: true, force: true }));

async function streamed(dir: string, progress?: Progress[]) {
  const source = new FsSource(dir);
  const inspection = await inspectParquet(source);
  const firstPass: Doc[] = [];
  const r = await readParquetStreamed(source, inspection.mapping, {
    inspection,
    onDoc: (d) => void firstPass.push(d),
    onProgress: progress && ((p) => void progress.push(p)),
  });
  return { ...r, firstPass };
}

async function issuesOf(read: () => Promise<unknown>): Promise<ShardIssue[]> {
  try {
    await read();
  } catch (e) {
    if (e instanceof ShardValidationError) return e.issues;
    throw e;
  }
  throw new Error('expected the read to fail');
}

describe('streamed Parquet import', () => {
  it('keeps no documents, and has the whole read’s hash, tasks, queries, judgements and documents', async () => {
    const source = new FsSource(fx.valid);
    const inspection = await inspectParquet(source);
    const whole = await readParquetShard(source, inspection.mapping, { inspection });
    const progress: Progress[] = [];
    const s = await streamed(fx.valid, progress);
    expect(s.parsed.docs).toEqual([]);
    expect(s.parsed.streamed?.docCount).toBe(fx.counts.corpus);
    expect(s.parsed.hash).toBe(whole.hash);
    expect(s.parsed.manifest).toEqual(whole.manifest);
    // The corpus modalities come from the relevant documents' parts, kept only for non-text documents.
    expect(new Set(s.parsed.manifest.tasks.map((t) => t.corpusModality))).toEqual(new Set(['image+text']));
    expect(s.parsed.queries).toEqual(whole.queries);
    expect(s.parsed.qrels).toEqual(whole.qrels);
    expect(s.parsed.warnings).toEqual(whole.warnings);
    expect([...s.parsed.images.keys()]).toEqual([...whole.images.keys()]);
    expect(s.firstPass).toEqual(whole.docs);

    const second: Doc[] = [];
    await s.streamCorpus((d) => void second.push(d));
    expect(second).toEqual(whole.docs);
    expect(second).toHaveLength(fx.counts.corpus);

    // The corpus is said as its Parquet files (bytes of the row groups read, of the file's), not
    // as the virtual corpus.jsonl.
    const reads = progress.filter((p) => p.kind === 'read');
    expect(reads.some((p) => p.file === 'corpus.jsonl')).toBe(false);
    // The first tick (forced) names the first file, nothing read yet; the last (forced) the last file, all read.
    expect(reads[0]).toMatchObject({ file: 'corpus/test-00000-of-00002.parquet', bytes: 0 });
    const last = reads.filter((p) => p.file.startsWith('corpus/')).at(-1)!;
    if (last.kind !== 'read') throw new Error('not a read tick');
    expect(last.file).toBe('corpus/test-00001-of-00002.parquet');
    expect(last.totalBytes).toBeGreaterThan(10_000);
    expect(last.bytes).toBe(last.totalBytes);
    const rows = progress.filter((p) => p.kind === 'parse' && p.file.startsWith('corpus/'));
    // Its rows, with the same bytes as the read ticks (the line's count and time left).
    expect(rows.at(-1)).toEqual({
      kind: 'parse',
      file: 'corpus/test-00001-of-00002.parquet',
      lines: fx.counts.corpus - 192,
      bytes: last.totalBytes,
      totalBytes: last.totalBytes,
    });
  });

  it('with the shard worker’s Blob stash, hands on the same image bytes as the whole read', async () => {
    const stash = blobImageStash();
    const bytes = Uint8Array.from([0xff, 0xd8, 0xff, 1, 2, 3]);
    stash.put('a.jpg', bytes);
    bytes[3] = 9; // the caller reuses its buffer: the stash kept a copy
    expect([...((await stash.take('a.jpg')) ?? [])]).toEqual([0xff, 0xd8, 0xff, 1, 2, 3]);
    expect(await stash.take('a.jpg')).toBeNull();

    const source = new FsSource(fx.valid);
    const inspection = await inspectParquet(source);
    const wholeImages = new Map<string, string>();
    await readParquetShard(source, inspection.mapping, {
      inspection,
      onImage: (path, b) => void wholeImages.set(path, sha1(b)),
    });
    const images = new Map<string, string>();
    await readParquetStreamed(source, inspection.mapping, {
      inspection,
      imageStash: blobImageStash(),
      onDoc: () => undefined,
      onImage: (path, b) => void images.set(path, sha1(b)),
    });
    expect(images.size).toBe(fx.counts.corpus);
    expect(images).toEqual(wholeImages);
  });

  it('fails broken files with the whole read’s issues', async () => {
    for (const dir of [fx.brokenRowGroup, fx.missingColumn, fx.unknownId]) {
      const source = new FsSource(dir);
      const inspection = await inspectParquet(source);
      const whole = await issuesOf(() => readParquetShard(source, inspection.mapping, { inspection }));
      expect(whole.length).toBeGreaterThan(0);
      expect(await issuesOf(() => streamed(dir))).toEqual(whole);
    }
  });

  it('fails the second pass when a corpus or qrels file changed after the first, naming it', async () => {
    // The corpus: one document's text edited in the second file (same rows, same schema).
    const corpusDir = join(out, 'changed-corpus', 'vqa-rad-mieb');
    cpSync(fx.valid, corpusDir, { recursive: true });
    const s1 = await streamed(corpusDir);
    const path = join(corpusDir, 'corpus/test-00001-of-00002.parquet');
    const bytes = readFileSync(path);
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
      utf8: false,
      compressors,
    });
    rows[5] = { ...rows[5], text: `${rows[5].text as string} (edited)` };
    writeParquet(path, CORPUS_COLUMNS, rows, 64);
    const corpusIssues = await issuesOf(() => s1.streamCorpus(() => undefined));
    expect(corpusIssues).toEqual([
      {
        file: 'corpus/',
        code: 'changed-during-import',
        message: expect.stringMatching(/^the corpus \(2 Parquet files\) changed while it was being imported/),
      },
    ]);

    // The qrels: the unknown-id variant's file differs in one row.
    const qrelsDir = join(out, 'changed-qrels', 'vqa-rad-mieb');
    cpSync(fx.valid, qrelsDir, { recursive: true });
    const s2 = await streamed(qrelsDir);
    copyFileSync(
      join(fx.unknownId, 'qrels/test-00000-of-00001.parquet'),
      join(qrelsDir, 'qrels/test-00000-of-00001.parquet'),
    );
    const qrelsIssues = await issuesOf(() => s2.streamCorpus(() => undefined));
    expect(qrelsIssues).toEqual([
      {
        file: 'vqa-rad-mieb',
        code: 'changed-during-import',
        message: expect.stringMatching(/^the queries or qrels of vqa-rad-mieb changed/),
      },
    ]);
  });
});
