// The streamed read of a shard (issue 18): with onDoc the reader keeps no document, hands each one
// over in file order, and gives the same hash, queries, qrels and warnings as the whole read; the
// second pass (streamCorpus) hands over the same documents again and refuses a corpus that changed
// in between; a bad line still names its file and line, and no document after it is handed over.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError } from '../../src/lib/core/shard/source';
import { DocCheckRefs, streamCorpus, withReadRates } from '../../src/lib/core/shard/stream-corpus';
import type { Doc, Progress } from '../../src/lib/core/types';
import { DATA_DIR } from '../paths';

const jsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('streamed shard read', () => {
  // One shard of each format: BEIR + images with images, R2MED's layout, BEIR + images text-only.
  for (const name of ['vqa-rad', 'r2med-demo', 'medquad']) {
    it(`${name}: the same shard as the whole read, documents handed over in order, twice`, async () => {
      const whole = await readShard(new FsSource(join(DATA_DIR, name)));
      const handed: Doc[] = [];
      const streamed = await readShard(new FsSource(join(DATA_DIR, name)), {
        onDoc: (d) => void handed.push(d),
      });
      expect(streamed.docs).toEqual([]);
      expect(handed).toEqual(whole.docs);
      expect(streamed.hash).toBe(whole.hash);
      expect(streamed.queries).toEqual(whole.queries);
      expect(streamed.qrels).toEqual(whole.qrels);
      expect(streamed.images).toEqual(whole.images);
      expect(streamed.warnings).toEqual(whole.warnings);
      expect(streamed.streamed).toMatchObject({ docCount: whole.docs.length });

      const again: Doc[] = [];
      await streamCorpus(
        new FsSource(join(DATA_DIR, name)),
        { format: streamed.manifest.format, ...streamed.streamed! },
        async (d) => void again.push(d),
      );
      expect(again).toEqual(whole.docs);
    });
  }

  const shard = (corpus: string) =>
    new MemorySource(
      {
        'corpus.jsonl': corpus,
        'queries.jsonl': jsonl([{ _id: 'q1', text: 'what' }]),
        'qrels/test.tsv': 'query-id\tcorpus-id\tscore\nq1\td1\t1\n',
      },
      { chunkSize: 7 },
    );
  const good = jsonl([
    { _id: 'd1', title: 'One', text: 'first' },
    { _id: 'd2', title: '', text: 'second' },
    { _id: 'd3', title: 'Three', text: '' },
  ]);

  it('a corpus changed between the two passes is refused, naming the file', async () => {
    const source = shard(good);
    const first = await readShard(source, { onDoc: () => undefined });
    expect(first.manifest.format).toBe('beir');
    const corpus = { format: first.manifest.format, ...first.streamed! };
    source.files.set('corpus.jsonl', new TextEncoder().encode(good.replace('second', 'SECOND')));
    const err = await streamCorpus(source, corpus, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShardValidationError);
    expect((err as ShardValidationError).issues).toEqual([
      expect.objectContaining({ file: 'corpus.jsonl', code: 'changed-during-import' }),
    ]);
    // Unchanged, it passes.
    source.files.set('corpus.jsonl', new TextEncoder().encode(good));
    await expect(streamCorpus(source, corpus, () => undefined)).resolves.toBeUndefined();
  });

  it('a bad line names its file and line, and nothing after it is handed over', async () => {
    const bad = good.replace('{"_id":"d2"', '{"_id":"d2",');
    const handed: string[] = [];
    const err = await readShard(shard(bad), { onDoc: (d) => void handed.push(d.id) }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ShardValidationError);
    expect((err as ShardValidationError).issues[0]).toMatchObject({ file: 'corpus.jsonl', line: 2 });
    expect(handed).toEqual(['d1']);
  });

  it('keeps of each document only what the embedding checks need', () => {
    const refs = new DocCheckRefs();
    refs.add({ id: 'a', title: ' ', text: 'x', meta: {} });
    refs.add({ id: 'b', title: '', text: ' ', meta: {}, image: 'i.png' });
    refs.add({ id: 'c', title: 'T', text: '', meta: { k: 'v' }, image: 'j.png' });
    expect(refs.list()).toEqual([
      { id: 'a', text: 't' },
      { id: 'b', text: '', image: 'i.png' },
      { id: 'c', text: 't', image: 'j.png' },
    ]);
  });

  it('read progress gets the lines per second and the time left of its file', () => {
    const seen: Progress[] = [];
    const report = withReadRates((p) => seen.push(p))!;
    const t0 = Date.now();
    const realNow = Date.now;
    try {
      Date.now = () => t0;
      report({ kind: 'read', file: 'corpus.jsonl', bytes: 0, totalBytes: 1000 });
      Date.now = () => t0 + 2000;
      report({ kind: 'parse', file: 'corpus.jsonl', lines: 300 });
      report({ kind: 'read', file: 'corpus.jsonl', bytes: 250, totalBytes: 1000 });
    } finally {
      Date.now = realNow;
    }
    // 300 lines in 2 s; 250 bytes in 2 s leaves 750 bytes: 6 s.
    expect(seen.at(-1)).toEqual({
      kind: 'read',
      file: 'corpus.jsonl',
      bytes: 250,
      totalBytes: 1000,
      docsPerSec: 150,
      etaSeconds: 6,
    });
  });

  it('parse progress that counts bytes gets them too: the line the page shows has a time left', () => {
    const seen: Progress[] = [];
    const report = withReadRates((p) => seen.push(p))!;
    const t0 = Date.now();
    const realNow = Date.now;
    try {
      Date.now = () => t0;
      report({ kind: 'parse', file: 'corpus.jsonl', lines: 0, bytes: 0, totalBytes: 1000 });
      Date.now = () => t0 + 2000;
      report({ kind: 'parse', file: 'corpus.jsonl', lines: 300, bytes: 250, totalBytes: 1000 });
      // Without bytes (a reader that does not count them) a parse tick passes as it is.
      report({ kind: 'parse', file: 'queries.jsonl', lines: 7 });
    } finally {
      Date.now = realNow;
    }
    expect(seen[1]).toEqual({
      kind: 'parse',
      file: 'corpus.jsonl',
      lines: 300,
      bytes: 250,
      totalBytes: 1000,
      docsPerSec: 150,
      etaSeconds: 6,
    });
    expect(seen[2]).toEqual({ kind: 'parse', file: 'queries.jsonl', lines: 7 });
  });
});
