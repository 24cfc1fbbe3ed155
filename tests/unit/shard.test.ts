import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FsSource } from '../../scripts/lib/fs-source';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../src/lib/core/shard/source';
import { FileHasher, HASH_BLOCK_BYTES, combineFileHashes, hashSource } from '../../src/lib/core/shard/hash';
import {
  invalidUtf8Offset,
  readLines,
  type Line,
  type LineReaderOptions,
} from '../../src/lib/core/shard/lines';
import { MemorySource, type MemorySourceOptions } from '../../src/lib/core/shard/memory-source';
import { readShard, type ReadShardOptions } from '../../src/lib/core/shard/read-shard';
import type { ParsedShard, Progress } from '../../src/lib/core/types';
import { DATA_DIR } from '../paths';

// ---- fixtures -------------------------------------------------------------------------------------

type Files = Record<string, string | Uint8Array>;

const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0xff, 0xd9]);
const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52,
]);
const WEBP = new TextEncoder().encode('RIFF\x10\x00\x00\x00WEBPVP8 ');

const jsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

const MANIFEST = {
  name: 'tiny',
  version: '1.0.0',
  format: 'beir+images',
  license: 'CC0-1.0',
  relevance: { '2': 'very', '1': 'somewhat' },
  tasks: [
    { id: 't2t', query_modality: 'text', corpus_modality: 'text', description: 'text to text' },
    { id: 'i2i', query_modality: 'image', corpus_modality: 'image' },
  ],
  counts: {
    corpus: 3,
    queries: 2,
    qrels: 3,
    images: 2,
    tasks: { t2t: { queries: 1, qrels: 2 }, i2i: { queries: 1, qrels: 1 } },
  },
};

/** A valid three-document "BEIR + images" shard; defect tests append or swap single lines. */
function tiny(): Files {
  return {
    'shard.json': JSON.stringify(MANIFEST, null, 2) + '\n',
    'corpus.jsonl': jsonl([
      { _id: 'd1', title: 'Alpha', text: 'alpha <b>&</b>', field: 'GARD', tags: ['x', 'y'], n: 3 },
      { _id: 'd2', title: '', text: '', image: 'images/a.jpg', organ: 'chest' },
      { _id: 'd3', title: 'Gamma', text: 'gamma é 中 😀', image: 'images/b.png' },
    ]),
    'queries.jsonl': jsonl([
      { _id: 'q1', text: 'alpha?', task: 't2t', qtype: 'info' },
      { _id: 'q2', text: '', image: 'images/a.jpg', task: 'i2i', exclude_ids: ['d2'] },
    ]),
    'qrels/test.tsv': 'query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td3\t1\n',
    'images/a.jpg': JPEG,
    'images/b.png': PNG,
    'NOTICE.md': '# NOTICE: tiny\n',
  };
}

function withFiles(files: Files, changes: Files): Files {
  return { ...files, ...changes };
}

function append(files: Files, path: string, text: string): Files {
  return { ...files, [path]: (files[path] as string) + text };
}

async function issuesOf(
  files: Files,
  opts: ReadShardOptions = {},
  source: MemorySourceOptions = {},
): Promise<ShardIssue[]> {
  try {
    await readShard(new MemorySource(files, source), opts);
  } catch (e) {
    if (e instanceof ShardValidationError) return e.issues;
    throw e;
  }
  throw new Error('expected the shard to be rejected');
}

const where = (i: ShardIssue) => ({ file: i.file, line: i.line, code: i.code });

/** Asserts that reading fails with exactly these issues (file, line, code), in order. */
async function expectIssues(
  files: Files,
  expected: { file: string; line?: number; code: string }[],
  opts?: ReadShardOptions,
) {
  const issues = await issuesOf(files, opts);
  expect(issues.map(where)).toEqual(expected);
  return issues;
}

function qrelsRows(shard: ParsedShard): number {
  let n = 0;
  for (const row of shard.qrels.values()) n += row.size;
  return n;
}

// ---- the real shards ------------------------------------------------------------------------------

describe('real shards', () => {
  // Its speed is measured by the benches (BENCHMARKS.md), never asserted here: a slow machine is not a bug.
  it('medquad: 3000 docs, 1000 queries, 1000 qrels', async () => {
    const shard = await readShard(new FsSource(join(DATA_DIR, 'medquad')));
    expect(shard.manifest.format).toBe('beir+images');
    expect(shard.manifest.name).toBe('medquad');
    expect(shard.manifest.tasks.map((t) => t.id)).toEqual(['qa-answer-retrieval']);
    expect(shard.docs).toHaveLength(3000);
    expect(shard.queries).toHaveLength(1000);
    expect(shard.qrels.size).toBe(1000);
    expect(qrelsRows(shard)).toBe(1000);
    expect(shard.images).toEqual([]);
    expect(shard.warnings).toEqual([]);
    expect(shard.notice).toMatch(/^# NOTICE: medquad/);
    expect(shard.queries[0]).toEqual({
      id: 'mq-q0001',
      text: 'What are the treatments for Ledderhose disease ?',
      task: 'qa-answer-retrieval',
      meta: { field: 'GARD', qtype: 'treatment' },
    });
    expect(shard.docs[0].meta.url).toMatch(/^https?:/);
    expect(shard.hash).toMatch(/^[0-9a-f]{64}$/);
    const files = ['shard.json', 'corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv', 'NOTICE.md'];
    expect(shard.hash).toBe(await hashSource(new FsSource(join(DATA_DIR, 'medquad')), files));
  });

  it('vqa-rad: 315 docs, 575 queries, 6434 qrels, 3 tasks, 315 images each handed over once', async () => {
    const seen = new Map<string, number>();
    const shard = await readShard(new FsSource(join(DATA_DIR, 'vqa-rad')), {
      onImage: (path, bytes) => {
        expect(bytes[0]).toBe(0xff);
        seen.set(path, (seen.get(path) ?? 0) + 1);
      },
    });
    expect(shard.docs).toHaveLength(315);
    expect(shard.queries).toHaveLength(575);
    expect(qrelsRows(shard)).toBe(6434);
    expect(shard.manifest.tasks).toEqual([
      expect.objectContaining({ id: 'text-to-image', queryModality: 'text', corpusModality: 'image' }),
      expect.objectContaining({
        id: 'image-question-to-passage',
        queryModality: 'image+text',
        corpusModality: 'text',
      }),
      expect.objectContaining({ id: 'image-to-image', queryModality: 'image', corpusModality: 'image' }),
    ]);
    const perTask = (id: string) => shard.queries.filter((q) => q.task === id).length;
    expect([
      perTask('text-to-image'),
      perTask('image-question-to-passage'),
      perTask('image-to-image'),
    ]).toEqual([64, 451, 60]);
    expect(shard.images).toHaveLength(315);
    expect(seen.size).toBe(315);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(shard.docs.filter((d) => d.text === '')).toHaveLength(1);
    const i2i = shard.queries.find((q) => q.task === 'image-to-image')!;
    expect(i2i.excludeIds).toHaveLength(1);
    expect(i2i.text).toBe('');
    expect(shard.warnings).toEqual([]);
  });

  it('r2med-demo: loads with a warning about judged documents missing from the corpus', async () => {
    const shard = await readShard(new FsSource(join(DATA_DIR, 'r2med-demo')));
    expect(shard.manifest.format).toBe('r2med');
    expect(shard.docs).toHaveLength(2);
    const w = shard.warnings.find((x) => x.code === 'qrels-unknown-document')!;
    expect(w).toMatchObject({ file: 'qrels.jsonl', count: 2 });
    expect(w.examples).toContain('insects_attracted_to_light/Phototaxis_3.txt');
    expect(w.message).toMatch(/kept.*trec_eval/);
    // Kept in qrels so that metrics match trec_eval on the upstream file.
    expect(qrelsRows(shard)).toBe(2);
    // Query "1" has no qrels row: dropped, as BEIR does, and said so.
    expect(shard.queries.map((q) => q.id)).toEqual(['0']);
    expect(shard.warnings.find((x) => x.code === 'queries-without-qrels')).toMatchObject({
      count: 1,
      examples: ['1'],
    });
    expect(shard.queries[0].meta.doc_id).toHaveLength(5);
    expect(shard.notice).toMatch(/R2MED/);
  });
});

// ---- a valid in-memory shard ----------------------------------------------------------------------

describe('BEIR + images in memory', () => {
  it('reads the tiny shard completely', async () => {
    const images: string[] = [];
    const src = new MemorySource(tiny());
    const shard = await readShard(src, { onImage: (p) => void images.push(p) });
    expect(shard.warnings).toEqual([]);
    expect(shard.manifest).toEqual({
      name: 'tiny',
      format: 'beir+images',
      version: '1.0.0',
      license: 'CC0-1.0',
      relevance: { '2': 'very', '1': 'somewhat' },
      tasks: [
        { id: 't2t', queryModality: 'text', corpusModality: 'text', description: 'text to text' },
        { id: 'i2i', queryModality: 'image', corpusModality: 'image' },
      ],
    });
    expect(shard.docs[0]).toEqual({
      id: 'd1',
      title: 'Alpha',
      text: 'alpha <b>&</b>',
      meta: { field: 'GARD', tags: ['x', 'y'] },
    });
    expect(shard.docs[1]).toEqual({
      id: 'd2',
      title: '',
      text: '',
      image: 'images/a.jpg',
      meta: { organ: 'chest' },
    });
    expect(shard.docs[2].text).toBe('gamma é 中 😀');
    expect(shard.queries[1]).toEqual({
      id: 'q2',
      text: '',
      image: 'images/a.jpg',
      task: 'i2i',
      excludeIds: ['d2'],
      meta: {},
    });
    expect(shard.qrels.get('q1')).toEqual(
      new Map([
        ['d1', 2],
        ['d3', 0],
      ]),
    );
    expect(shard.images).toEqual(['images/a.jpg', 'images/b.png']);
    // images/a.jpg is referenced twice but read and handed over once.
    expect(images).toEqual(['images/a.jpg', 'images/b.png']);
    expect(src.opens.get('images/a.jpg')).toBe(1);
    expect(shard.notice).toBe('# NOTICE: tiny\n');
    const total = [...src.files.values()].reduce((a, b) => a + b.length, 0);
    expect(shard.bytes).toBe(total);
  });

  it('accepts WebP images and a shard without NOTICE.md', async () => {
    const files = withFiles(tiny(), { 'images/b.png': WEBP });
    delete files['NOTICE.md'];
    const shard = await readShard(new MemorySource(files));
    expect(shard.notice).toBeUndefined();
    expect(shard.images).toHaveLength(2);
  });

  it('detects the format by probing when the source cannot list (URL source)', async () => {
    const src = new MemorySource(tiny(), { listable: false });
    const shard = await readShard(src);
    expect(shard.docs).toHaveLength(3);
    expect(src.opens.get('corpus.jsonl')).toBe(1);
  });

  it('reports progress (read with sizes, parse with lines) and throttles it', async () => {
    const events: Progress[] = [];
    await readShard(new MemorySource(tiny(), { chunkSize: 1 }), { onProgress: (p) => events.push(p) });
    const reads = events.filter((e) => e.kind === 'read' && e.file === 'corpus.jsonl');
    const size = new TextEncoder().encode(tiny()['corpus.jsonl'] as string).length;
    expect(reads[0]).toEqual({ kind: 'read', file: 'corpus.jsonl', bytes: 0, totalBytes: size });
    expect(reads.at(-1)).toEqual({ kind: 'read', file: 'corpus.jsonl', bytes: size, totalBytes: size });
    // The lines counted go with the file's bytes read and its size (the line's count and time left).
    const qrels = new TextEncoder().encode(tiny()['qrels/test.tsv'] as string).length;
    expect(events).toContainEqual({
      kind: 'parse',
      file: 'qrels/test.tsv',
      lines: 4,
      bytes: qrels,
      totalBytes: qrels,
    });
    // One-byte chunks would give hundreds of events without throttling.
    expect(events.length).toBeLessThan(30);
  });

  it('counts a file that arrives in one piece line by line (a zip entry), not at 0 until its end', async () => {
    const files = tiny();
    const docs = Array.from({ length: 3000 }, (_, i) => ({ _id: `d${i + 1}`, title: '', text: `doc ${i}` }));
    files['corpus.jsonl'] = jsonl(docs);
    files['qrels/test.tsv'] = 'query-id\tcorpus-id\tscore\nq1\td1\t1\n';
    files['queries.jsonl'] = jsonl([{ _id: 'q1', text: 'alpha?', task: 't2t' }]);
    const events: Progress[] = [];
    // Every throttle check sees a second passed: each tick the reader offers is sent.
    let t = 0;
    const now = vi.spyOn(Date, 'now').mockImplementation(() => (t += 1000));
    try {
      await readShard(new MemorySource(files, { chunkSize: 1 << 30 }), {
        onProgress: (p) => events.push(p),
      }).catch(() => undefined);
    } finally {
      now.mockRestore();
    }
    const lines = events.flatMap((e) => (e.kind === 'parse' && e.file === 'corpus.jsonl' ? [e.lines] : []));
    expect(lines).toContain(1024);
    expect(lines).toContain(2048);
    expect(lines.at(-1)).toBe(3000);
  });

  it('cancels with an AbortError', async () => {
    let chunks = 0;
    const err = await readShard(new MemorySource(tiny(), { chunkSize: 1 }), {
      isCancelled: () => ++chunks > 50,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('AbortError');
  });

  it('warns (does not fail) when shard.json counts disagree', async () => {
    const manifest = {
      ...MANIFEST,
      counts: { ...MANIFEST.counts, corpus: 4, tasks: { t2t: { queries: 2 } } },
    };
    const shard = await readShard(
      new MemorySource(withFiles(tiny(), { 'shard.json': JSON.stringify(manifest) })),
    );
    expect(shard.warnings.map((w) => [w.code, w.file])).toEqual([
      ['count-mismatch', 'shard.json'],
      ['count-mismatch', 'shard.json'],
    ]);
    expect(shard.warnings[0].message).toMatch(/counts\.corpus is 4.*3 documents/);
  });
});

// ---- one defect at a time -------------------------------------------------------------------------

describe('defects: exact file, line and code', () => {
  it('malformed JSON', async () => {
    const [i] = await expectIssues(append(tiny(), 'corpus.jsonl', '{"_id": "d4", "title": "x"\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'malformed-json' },
    ]);
    // The parser's place is a character of the line, never "line 1 column 27" (issue 36 item 10).
    expect(i.message).toBe(
      "malformed JSON: Expected ',' or '}' after property value in JSON at character 27 of the line",
    );
  });

  it('a line that is not an object', async () => {
    await expectIssues(append(tiny(), 'queries.jsonl', '["q3", "text"]\n'), [
      { file: 'queries.jsonl', line: 3, code: 'not-object' },
    ]);
    await expectIssues(append(tiny(), 'corpus.jsonl', 'null\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'not-object' },
    ]);
  });

  it('missing required fields', async () => {
    const [a] = await expectIssues(append(tiny(), 'corpus.jsonl', '{"_id": "d4", "text": "x"}\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'missing-field' },
    ]);
    expect(a.message).toContain('"title"');
    await expectIssues(append(tiny(), 'queries.jsonl', '{"_id": "q3", "text": "x"}\n'), [
      { file: 'queries.jsonl', line: 3, code: 'missing-field' },
    ]);
    await expectIssues(append(tiny(), 'corpus.jsonl', '{"title": "", "text": "x"}\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'missing-field' },
    ]);
  });

  it('wrongly typed fields', async () => {
    await expectIssues(append(tiny(), 'corpus.jsonl', '{"_id": "d4", "title": 5, "text": "x"}\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'wrong-type' },
    ]);
    await expectIssues(append(tiny(), 'corpus.jsonl', '{"_id": 4, "title": "", "text": "x"}\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'wrong-type' },
    ]);
    await expectIssues(
      append(tiny(), 'queries.jsonl', '{"_id": "q3", "text": "x", "task": "t2t", "exclude_ids": "d1"}\n'),
      // q3 is otherwise fine, so it also lacks a relevant document.
      [
        { file: 'queries.jsonl', line: 3, code: 'wrong-type' },
        { file: 'queries.jsonl', line: 3, code: 'no-relevant' },
      ],
    );
  });

  it('invalid ids', async () => {
    for (const id of ['d 4', '-d4', '', 'd4/x', 'é']) {
      await expectIssues(
        append(tiny(), 'corpus.jsonl', JSON.stringify({ _id: id, title: '', text: 'x' }) + '\n'),
        [{ file: 'corpus.jsonl', line: 4, code: 'invalid-id' }],
      );
    }
  });

  it('duplicate ids', async () => {
    const [i] = await expectIssues(
      append(tiny(), 'corpus.jsonl', '{"_id": "d1", "title": "", "text": "again"}\n'),
      [{ file: 'corpus.jsonl', line: 4, code: 'duplicate-id' }],
    );
    expect(i.message).toContain('first on line 1');
    await expectIssues(append(tiny(), 'queries.jsonl', '{"_id": "q1", "text": "again", "task": "t2t"}\n'), [
      { file: 'queries.jsonl', line: 3, code: 'duplicate-id' },
    ]);
  });

  it('unknown task', async () => {
    const files = append(
      append(tiny(), 'queries.jsonl', '{"_id": "q3", "text": "x", "task": "nope"}\n'),
      'qrels/test.tsv',
      'q3\td1\t1\n',
    );
    const [i] = await expectIssues(files, [{ file: 'queries.jsonl', line: 3, code: 'unknown-task' }]);
    expect(i.message).toContain('t2t, i2i');
  });

  it('wrong qrels header', async () => {
    const bad = (tiny()['qrels/test.tsv'] as string).replace('query-id', 'query_id');
    await expectIssues(withFiles(tiny(), { 'qrels/test.tsv': bad }), [
      { file: 'qrels/test.tsv', line: 1, code: 'bad-header' },
    ]);
    // Header missing altogether: reported once; the first row still counts (no "no relevant document" cascade).
    const headless = 'q1\td1\t2\nq2\td3\t1\n';
    await expectIssues(withFiles(tiny(), { 'qrels/test.tsv': headless }), [
      { file: 'qrels/test.tsv', line: 1, code: 'bad-header' },
    ]);
  });

  it('wrong column count', async () => {
    await expectIssues(append(tiny(), 'qrels/test.tsv', 'q1\td2\n'), [
      { file: 'qrels/test.tsv', line: 5, code: 'column-count' },
    ]);
    await expectIssues(append(tiny(), 'qrels/test.tsv', 'q1\td2\t1\t0\n'), [
      { file: 'qrels/test.tsv', line: 5, code: 'column-count' },
    ]);
  });

  it('non-integer or negative scores', async () => {
    for (const s of ['1.5', '-1', 'x', '', '1e3']) {
      await expectIssues(append(tiny(), 'qrels/test.tsv', `q1\td2\t${s}\n`), [
        { file: 'qrels/test.tsv', line: 5, code: 'bad-score' },
      ]);
    }
  });

  it('duplicate qrels pair', async () => {
    const [i] = await expectIssues(append(tiny(), 'qrels/test.tsv', 'q1\td1\t1\n'), [
      { file: 'qrels/test.tsv', line: 5, code: 'duplicate-qrel' },
    ]);
    expect(i.message).toContain('first on line 2');
  });

  it('qrels naming an unknown query or document', async () => {
    await expectIssues(append(tiny(), 'qrels/test.tsv', 'q9\td1\t1\n'), [
      { file: 'qrels/test.tsv', line: 5, code: 'unknown-query' },
    ]);
    await expectIssues(append(tiny(), 'qrels/test.tsv', 'q1\td9\t1\n'), [
      { file: 'qrels/test.tsv', line: 5, code: 'unknown-document' },
    ]);
  });

  it('a query without a relevant document', async () => {
    // q3 judged only with score 0; q4 not judged at all.
    let files = append(
      tiny(),
      'queries.jsonl',
      '{"_id": "q3", "text": "x", "task": "t2t"}\n{"_id": "q4", "text": "y", "task": "t2t"}\n',
    );
    files = append(files, 'qrels/test.tsv', 'q3\td1\t0\n');
    await expectIssues(files, [
      { file: 'queries.jsonl', line: 3, code: 'no-relevant' },
      { file: 'queries.jsonl', line: 4, code: 'no-relevant' },
    ]);
  });

  it('exclude_ids naming unknown documents', async () => {
    let files = append(
      tiny(),
      'queries.jsonl',
      '{"_id": "q3", "text": "x", "task": "t2t", "exclude_ids": ["d1", "d9"]}\n',
    );
    files = append(files, 'qrels/test.tsv', 'q3\td2\t1\n');
    const [i] = await expectIssues(files, [{ file: 'queries.jsonl', line: 3, code: 'unknown-exclude-id' }]);
    expect(i.message).toContain('"d9"');
  });

  it('a document with neither text nor image; a query with neither', async () => {
    await expectIssues(
      append(tiny(), 'corpus.jsonl', '{"_id": "d4", "title": "Only a title", "text": " "}\n'),
      [{ file: 'corpus.jsonl', line: 4, code: 'empty-doc' }],
    );
    const files = append(
      append(tiny(), 'queries.jsonl', '{"_id": "q3", "text": "", "task": "t2t"}\n'),
      'qrels/test.tsv',
      'q3\td1\t1\n',
    );
    await expectIssues(files, [{ file: 'queries.jsonl', line: 3, code: 'empty-query' }]);
  });

  it('bad paths', async () => {
    for (const p of [
      '/images/a.jpg',
      'images/../a.jpg',
      '../a.jpg',
      'images\\a.jpg',
      'C:/a.jpg',
      'images//a.jpg',
      'https://x.org/a.jpg',
    ]) {
      const line = JSON.stringify({ _id: 'd4', title: '', text: 'x', image: p });
      await expectIssues(append(tiny(), 'corpus.jsonl', line + '\n'), [
        { file: 'corpus.jsonl', line: 4, code: 'bad-path' },
      ]);
    }
  });

  it('missing image, or a file that is not an image', async () => {
    const line = JSON.stringify({ _id: 'd4', title: '', text: 'x', image: 'images/zzz.jpg' });
    await expectIssues(append(tiny(), 'corpus.jsonl', line + '\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'missing-image' },
    ]);
    // Same through a source that cannot list (open() returns null).
    const issues = await issuesOf(append(tiny(), 'corpus.jsonl', line + '\n'), {}, { listable: false });
    expect(issues.map(where)).toEqual([{ file: 'corpus.jsonl', line: 4, code: 'missing-image' }]);
    const calls: string[] = [];
    const [i] = await expectIssues(
      withFiles(tiny(), { 'images/a.jpg': '<html>not found</html>' }),
      [{ file: 'images/a.jpg', line: undefined, code: 'not-an-image' }],
      {
        onImage: (p) => void calls.push(p),
      },
    );
    expect(i.message).toContain('corpus.jsonl:2');
    expect(i.message).toContain('3c 68 74 6d');
    // Nothing is handed over once the shard is known to be bad.
    expect(calls).toEqual([]);
  });

  it('non-UTF-8 bytes, with the byte offset', async () => {
    const before = tiny()['corpus.jsonl'] as string;
    const enc = new TextEncoder();
    const prefix = enc.encode(before + '{"_id": "d4", "title": "", "text": "caf');
    const bytes = new Uint8Array([...prefix, 0xe9, ...enc.encode('"}\n')]);
    const [i] = await expectIssues(withFiles(tiny(), { 'corpus.jsonl': bytes }), [
      { file: 'corpus.jsonl', line: 4, code: 'invalid-utf8' },
    ]);
    // Both offsets count from 1: the bad byte follows the prefix's bytes.
    expect(i.message).toContain(
      `byte ${prefix.length + 1} of the file (byte 40 of the line; bytes counted from 1)`,
    );
  });

  it('empty corpus, no queries', async () => {
    const noDocs = await issuesOf(withFiles(tiny(), { 'corpus.jsonl': '' }));
    expect(noDocs.map(where)).toContainEqual({ file: 'corpus.jsonl', line: undefined, code: 'empty-corpus' });
    expect(noDocs[0].code).toBe('empty-corpus');
    // Its judgements name no document: the corpus is the problem, not the qrels file.
    expect(noDocs.map((i) => i.code)).not.toContain('empty-qrels');
    await expectIssues(
      withFiles(tiny(), { 'queries.jsonl': '', 'qrels/test.tsv': 'query-id\tcorpus-id\tscore\n' }),
      [{ file: 'queries.jsonl', line: undefined, code: 'no-queries' }],
    );
  });

  it('shard.json: malformed, missing tasks, bad modality', async () => {
    await expectIssues(withFiles(tiny(), { 'shard.json': '{\n  "name": "x",\n  "tasks": [}\n' }), [
      { file: 'shard.json', line: 3, code: 'malformed-json' },
    ]);
    await expectIssues(withFiles(tiny(), { 'shard.json': '{\n  "name": "x",\n  "tasks": [\n' }), [
      { file: 'shard.json', line: 3, code: 'malformed-json' },
    ]);
    await expectIssues(withFiles(tiny(), { 'shard.json': JSON.stringify({ name: 'x' }) }), [
      { file: 'shard.json', line: undefined, code: 'missing-tasks' },
    ]);
    await expectIssues(
      withFiles(tiny(), { 'shard.json': JSON.stringify({ name: 'x', tasks: [] }, null, 2) }),
      [{ file: 'shard.json', line: 3, code: 'missing-tasks' }],
    );
    const bad = structuredClone(MANIFEST);
    (bad.tasks[1] as Record<string, string>).query_modality = 'video';
    const text = JSON.stringify(bad, null, 2);
    const line = text.split('\n').findIndex((l) => l.includes('"video"')) + 1;
    const [i] = await expectIssues(withFiles(tiny(), { 'shard.json': text }), [
      { file: 'shard.json', line, code: 'bad-modality' },
    ]);
    expect(i.message).toContain('tasks[1].query_modality');
    // A declared document language must look like a language tag.
    const lang = JSON.stringify({ ...MANIFEST, language: 'German!' }, null, 2);
    const [li] = await expectIssues(withFiles(tiny(), { 'shard.json': lang }), [
      {
        file: 'shard.json',
        line: lang.split('\n').findIndex((l) => l.includes('"language"')) + 1,
        code: 'bad-language',
      },
    ]);
    expect(li.message).toContain('"German!"');
    await expectIssues(withFiles(tiny(), { 'shard.json': JSON.stringify({ ...MANIFEST, language: 7 }) }), [
      { file: 'shard.json', line: 1, code: 'wrong-type' },
    ]);
    const de = await readShard(
      new MemorySource(
        withFiles(tiny(), { 'shard.json': JSON.stringify({ ...MANIFEST, language: 'de-AT' }) }),
      ),
    );
    expect(de.manifest.language).toBe('de-AT');
    expect((await readShard(new MemorySource(tiny()))).manifest.language).toBeUndefined();
    // "embeddings" names the precomputed sets' index, and nothing else.
    const emb = JSON.stringify({ ...MANIFEST, embeddings: 'embeddings/index.json' });
    expect(
      (await readShard(new MemorySource(withFiles(tiny(), { 'shard.json': emb })))).manifest.embeddings,
    ).toBe('embeddings/index.json');
    const [ei] = await expectIssues(
      withFiles(tiny(), { 'shard.json': JSON.stringify({ ...MANIFEST, embeddings: 'vectors.npy' }) }),
      [{ file: 'shard.json', line: 1, code: 'wrong-value' }],
    );
    expect(ei.message).toContain('"vectors.npy"');
    await expectIssues(withFiles(tiny(), { 'shard.json': '[1]' }), [
      { file: 'shard.json', line: undefined, code: 'not-object' },
    ]);
  });

  it('shard.json: images_pack names zip files inside the shard', async () => {
    const manifestOf = async (pack: unknown) =>
      (
        await readShard(
          new MemorySource(
            withFiles(tiny(), { 'shard.json': JSON.stringify({ ...MANIFEST, images_pack: pack }) }),
          ),
        )
      ).manifest.imagesPack;
    expect(await manifestOf('images.zip')).toEqual(['images.zip']);
    expect(await manifestOf(['images-1.zip', 'packs/images-2.zip'])).toEqual([
      'images-1.zip',
      'packs/images-2.zip',
    ]);
    expect((await readShard(new MemorySource(tiny()))).manifest.imagesPack).toBeUndefined();
    for (const [pack, code, quoted] of [
      [7, 'wrong-type', '7'],
      [[], 'wrong-type', ''],
      ['images.tar', 'wrong-value', '"images.tar"'],
      [['ok.zip', '../other/images.zip'], 'wrong-value', '"../other/images.zip"'],
      ['/images.zip', 'wrong-value', '"/images.zip"'],
    ] as const) {
      const text = JSON.stringify({ ...MANIFEST, images_pack: pack }, null, 2);
      const [i] = await expectIssues(withFiles(tiny(), { 'shard.json': text }), [
        {
          file: 'shard.json',
          line: text.split('\n').findIndex((l) => l.includes('"images_pack"')) + 1,
          code,
        },
      ]);
      expect(i.message).toContain('"images_pack"');
      if (quoted) expect(i.message).toContain(quoted);
    }
  });

  it('a source that reads image packs is asked to, once, before the images; others read the files', async () => {
    const files = withFiles(tiny(), {
      'shard.json': JSON.stringify({ ...MANIFEST, images_pack: 'images.zip' }),
    });
    // A remote source (like a URL) with usePacks: asked for the declared packs, then for the images.
    const asked: string[] = [];
    const remote = new MemorySource(files, { listable: false });
    const open = remote.open.bind(remote);
    const withPacks: ShardSource = {
      label: remote.label,
      remote: true,
      list: () => remote.list(),
      size: (p) => remote.size(p),
      open: (p) => {
        asked.push(p);
        return open(p);
      },
      usePacks: async (names) => void asked.push(`usePacks:${names.join(',')}`),
    };
    const shard = await readShard(withPacks);
    expect(shard.images).toEqual(['images/a.jpg', 'images/b.png']);
    const at = asked.indexOf('usePacks:images.zip');
    expect(at).toBeGreaterThan(asked.indexOf('corpus.jsonl'));
    expect(asked.filter((p) => p.startsWith('usePacks:'))).toHaveLength(1);
    expect(asked.indexOf('images/a.jpg')).toBeGreaterThan(at);
    // A pack that cannot be read fails the read, with the source's issue.
    const failing: ShardSource = {
      ...withPacks,
      usePacks: async () => {
        throw new ShardValidationError([
          { file: 'images.zip', code: 'missing-image-pack', message: 'images.zip is missing' },
        ]);
      },
    };
    const err = await readShard(failing).catch((e) => e);
    expect(err).toBeInstanceOf(ShardValidationError);
    expect((err as ShardValidationError).issues[0]).toMatchObject({
      file: 'images.zip',
      code: 'missing-image-pack',
    });
    // A folder (listable, no usePacks) reads the loose files, whatever shard.json says.
    const folder = new MemorySource(files);
    expect((await readShard(folder)).images).toEqual(['images/a.jpg', 'images/b.png']);
    expect(folder.opens.get('images/a.jpg')).toBe(1);
  });

  it('a line over the limit', async () => {
    const big = JSON.stringify({ _id: 'd4', title: '', text: 'x'.repeat(5000) });
    const [i] = await expectIssues(
      append(tiny(), 'corpus.jsonl', big + '\n'),
      [{ file: 'corpus.jsonl', line: 4, code: 'line-too-large' }],
      {
        maxLineBytes: 4096,
      },
    );
    expect(i.message).toContain('4096');
  });

  it('BOM, CRLF and blank lines are issues in the strict format', async () => {
    await expectIssues(withFiles(tiny(), { 'corpus.jsonl': '\ufeff' + (tiny()['corpus.jsonl'] as string) }), [
      { file: 'corpus.jsonl', line: 1, code: 'bom' },
    ]);
    // Reported once per file, at the first line; the rest still parses.
    await expectIssues(
      withFiles(tiny(), { 'qrels/test.tsv': (tiny()['qrels/test.tsv'] as string).replace(/\n/g, '\r\n') }),
      [{ file: 'qrels/test.tsv', line: 1, code: 'crlf' }],
    );
    await expectIssues(
      withFiles(tiny(), { 'queries.jsonl': (tiny()['queries.jsonl'] as string).replace('\n', '\n\n') }),
      [{ file: 'queries.jsonl', line: 2, code: 'blank-line' }],
    );
  });

  it('missing files and unknown layouts', async () => {
    const files = tiny();
    delete files['qrels/test.tsv'];
    await expectIssues(files, [{ file: 'qrels/test.tsv', line: undefined, code: 'missing-file' }]);
    await expectIssues({ 'README.md': 'hello' }, [
      { file: 'shard.json', line: undefined, code: 'unknown-format' },
    ]);
  });

  it('collects several issues, capped at maxIssues', async () => {
    const bad = Array.from({ length: 20 }, (_, k) => `{"_id": "x${k}"\n`).join('');
    const all = await issuesOf(append(tiny(), 'corpus.jsonl', bad));
    expect(all).toHaveLength(20);
    expect(all.map((i) => i.line)).toEqual(Array.from({ length: 20 }, (_, k) => 4 + k));
    const capped = await issuesOf(append(tiny(), 'corpus.jsonl', bad), { maxIssues: 3 });
    expect(capped.map((i) => i.line)).toEqual([4, 5, 6]);
  });
});

// ---- streaming ------------------------------------------------------------------------------------

async function collectLines(
  bytes: Uint8Array,
  chunkSize: number,
  opts: Partial<LineReaderOptions> = {},
): Promise<Line[]> {
  const src = new MemorySource({ f: bytes }, { chunkSize });
  const out: Line[] = [];
  for await (const l of readLines((await src.open('f'))!, { file: 'f', ...opts })) out.push(l);
  return out;
}

describe('streaming', () => {
  it('splits lines identically for every chunk size, multi-byte UTF-8 across chunk boundaries', async () => {
    const text = 'é中😀\n{"a": "ü"}\nlast line without newline 😀';
    const bytes = new TextEncoder().encode(text);
    const expected = await collectLines(bytes, 1 << 16);
    expect(expected.map((l) => l.text)).toEqual(['é中😀', '{"a": "ü"}', 'last line without newline 😀']);
    expect(expected.map((l) => [l.line, l.offset])).toEqual([
      [1, 0],
      [2, 10],
      [3, 22],
    ]);
    for (const size of [1, 2, 3, 5, 7]) expect(await collectLines(bytes, size)).toEqual(expected);
  });

  it('lenient mode strips BOM and \\r, skips blank lines, keeps physical line numbers', async () => {
    const warnings: string[] = [];
    const bytes = new TextEncoder().encode('\ufeffa\r\n\r\n\nb\r\n');
    const lines = await collectLines(bytes, 1, {
      strict: false,
      onWarning: (w) => void warnings.push(w.code!),
    });
    expect(lines.map((l) => [l.text, l.line])).toEqual([
      ['a', 1],
      ['b', 4],
    ]);
    expect(warnings).toEqual(['bom', 'crlf', 'blank-line']);
  });

  it('locates invalid UTF-8 (overlong, surrogate, out of range, truncated)', () => {
    const at = (...b: number[]) => invalidUtf8Offset(new Uint8Array(b));
    expect(at(0x61, 0xc3, 0xa9, 0xe4, 0xb8, 0xad, 0xf0, 0x9f, 0x98, 0x80)).toBe(10);
    expect(at(0x61, 0xc0, 0x80)).toBe(1);
    expect(at(0xed, 0xa0, 0x80)).toBe(0);
    expect(at(0xf4, 0x90, 0x80, 0x80)).toBe(0);
    expect(at(0x61, 0xe4, 0xb8)).toBe(1);
    expect(at(0x80)).toBe(0);
  });

  it('whole shard is the same with 1-byte, odd and large chunks', async () => {
    const ref = await readShard(new MemorySource(tiny()));
    for (const chunkSize of [1, 3, 17]) {
      const shard = await readShard(new MemorySource(tiny(), { chunkSize }));
      expect(shard).toEqual(ref);
    }
  });

  it('parses a 50 MB single-line document when the limits are raised (the defaults refuse it)', async () => {
    const text = 'lorem ipsum é '.repeat(3_600_000); // ~50 MB of UTF-8
    const files = append(tiny(), 'corpus.jsonl', JSON.stringify({ _id: 'big', title: '', text }) + '\n');
    const refused = await readShard(new MemorySource(files, { chunkSize: 1 << 16 })).catch((e) => e);
    expect(refused.issues.map((i: ShardIssue) => i.code)).toEqual(['line-too-large']);
    const shard = await readShard(new MemorySource(files, { chunkSize: 1 << 16 }), {
      limits: { maxLineBytes: 64 << 20, maxFieldChars: 64 << 20 },
    });
    expect(shard.docs[3].text.length).toBe(text.length);
    expect(shard.bytes).toBeGreaterThan(50_000_000);
  });

  it('fails fast on a line over the limit without reading the rest', async () => {
    let served = 0;
    const endless: ShardSource = {
      label: 'endless',
      list: async () => ['shard.json', 'corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv'],
      size: async () => undefined,
      open: async (path) => {
        if (path === 'shard.json') return new MemorySource({ s: JSON.stringify(MANIFEST) }).open('s');
        return (async function* () {
          const chunk = new Uint8Array(1 << 20).fill(0x61);
          for (;;) {
            served++;
            yield chunk;
          }
        })();
      },
    };
    const err = await readShard(endless, { maxLineBytes: 4 << 20 }).catch((e) => e);
    expect(err).toBeInstanceOf(ShardValidationError);
    expect(err.issues.map(where)).toEqual([{ file: 'corpus.jsonl', line: 1, code: 'line-too-large' }]);
    expect(served).toBe(5);
  });
});

// ---- hashing --------------------------------------------------------------------------------------

describe('content hash', () => {
  const big = new Uint8Array(3 * HASH_BLOCK_BYTES + 12345).map((_, i) => (i * 7919) & 0xff);

  it('does not depend on how the source chunks its reads', async () => {
    const ref = await hashSource(new MemorySource({ a: big, 'b/c': 'small' }));
    for (const chunkSize of [
      1000,
      HASH_BLOCK_BYTES - 1,
      HASH_BLOCK_BYTES,
      HASH_BLOCK_BYTES + 1,
      5 * HASH_BLOCK_BYTES,
    ]) {
      expect(await hashSource(new MemorySource({ a: big, 'b/c': 'small' }, { chunkSize }))).toBe(ref);
    }
    const shardRef = (await readShard(new MemorySource(tiny()))).hash;
    expect((await readShard(new MemorySource(tiny(), { chunkSize: 1 }))).hash).toBe(shardRef);
    expect(await hashSource(new MemorySource(tiny()))).toBe(shardRef);
  });

  it('changes when one byte, or a path, changes', async () => {
    const ref = await hashSource(new MemorySource({ a: big }));
    const flipped = big.slice();
    flipped[2 * HASH_BLOCK_BYTES + 5] ^= 1;
    expect(await hashSource(new MemorySource({ a: flipped }))).not.toBe(ref);
    expect(await hashSource(new MemorySource({ b: big }))).not.toBe(ref);
    const files = tiny();
    const shardRef = (await readShard(new MemorySource(files))).hash;
    const edited = withFiles(files, {
      'qrels/test.tsv': (files['qrels/test.tsv'] as string).replace('q1\td1\t2', 'q1\td1\t1'),
    });
    expect((await readShard(new MemorySource(edited))).hash).not.toBe(shardRef);
  });

  it('file digests are order-independent when combined', async () => {
    const h = async (s: string) => {
      const f = new FileHasher();
      f.update(new TextEncoder().encode(s));
      return f.digest();
    };
    const [x, y] = [await h('x'), await h('y')];
    expect(
      await combineFileHashes([
        ['x', x],
        ['y', y],
      ]),
    ).toBe(
      await combineFileHashes([
        ['y', y],
        ['x', x],
      ]),
    );
    expect(
      await combineFileHashes([
        ['x', x],
        ['y', y],
      ]),
    ).not.toBe(
      await combineFileHashes([
        ['x', y],
        ['y', x],
      ]),
    );
  });
});

// ---- upstream formats -----------------------------------------------------------------------------

describe('plain BEIR and R2MED', () => {
  function beir(): Files {
    return {
      'corpus.jsonl': jsonl([
        {
          _id: '1',
          title: 'One',
          text: 'first',
          metadata: { url: 'u1', year: 2020, authors: ['a', 'b'], nested: { x: 1 } },
        },
        { _id: '2', text: 'second' },
        { _id: '3', title: 'Three', text: 'third' },
      ]),
      'queries.jsonl': jsonl([
        { _id: 'a', text: 'first?', metadata: { kind: 'k' } },
        { _id: 'b', text: 'second?' },
        { _id: 'c', text: 'unjudged' },
      ]),
      'qrels/train.tsv': 'query-id\tcorpus-id\tscore\na\t1\t1\n',
      'qrels/dev.tsv': 'query-id\tcorpus-id\tscore\na\t1\t1\nb\t2\t2\nb\t404\t1\n',
    };
  }

  it('loads a plain BEIR folder: dev before train, metadata flattened, unjudged queries dropped', async () => {
    const shard = await readShard(new MemorySource(beir(), { label: 'tiny-beir' }));
    expect(shard.manifest).toMatchObject({
      name: 'tiny-beir',
      format: 'beir',
      tasks: [{ id: 'dev', queryModality: 'text', corpusModality: 'text' }],
    });
    expect(shard.docs[0]).toEqual({
      id: '1',
      title: 'One',
      text: 'first',
      meta: { url: 'u1', year: '2020', authors: ['a', 'b'] },
    });
    expect(shard.docs[1].title).toBe('');
    expect(shard.queries.map((q) => [q.id, q.task])).toEqual([
      ['a', 'dev'],
      ['b', 'dev'],
    ]);
    expect(shard.queries[0].meta).toEqual({ kind: 'k' });
    expect(shard.warnings.map((w) => w.code)).toEqual(['qrels-unknown-document', 'queries-without-qrels']);
    expect(shard.qrels.get('b')).toEqual(
      new Map([
        ['2', 2],
        ['404', 1],
      ]),
    );
  });

  it('prefers qrels/test.tsv and is lenient about BOM, CRLF, blank lines and the header', async () => {
    const files = withFiles(beir(), {
      'qrels/test.tsv': '\ufeffqid\tdocid\trel\r\nc\t3\t1\r\n\r\n',
      'corpus.jsonl': (beir()['corpus.jsonl'] as string) + '\n',
    });
    const shard = await readShard(new MemorySource(files, { listable: false, chunkSize: 2 }));
    expect(shard.manifest.tasks[0].id).toBe('test');
    expect(shard.queries.map((q) => q.id)).toEqual(['c']);
    expect(shard.warnings.map((w) => w.code)).toEqual([
      'blank-line',
      'bom',
      'crlf',
      'bad-header',
      'blank-line',
      'queries-without-qrels',
    ]);
  });

  it('still rejects real defects in plain BEIR', async () => {
    await expectIssues(
      withFiles(beir(), { 'qrels/dev.tsv': 'query-id\tcorpus-id\tscore\nzz\t1\t1\na\t1\t1.5\nb\t2\t1\n' }),
      [
        { file: 'qrels/dev.tsv', line: 2, code: 'unknown-query' },
        { file: 'qrels/dev.tsv', line: 3, code: 'bad-score' },
      ],
    );
    await expectIssues(append(beir(), 'corpus.jsonl', '{"_id": "1", "text": "dup"}\n'), [
      { file: 'corpus.jsonl', line: 4, code: 'duplicate-id' },
    ]);
  });

  it('loads an R2MED folder, ignoring hyde/', async () => {
    const files: Files = {
      'corpus.jsonl': jsonl([
        { id: 'topic/a.txt', text: 'A' },
        { id: 'topic/b.txt', text: 'B' },
      ]),
      'query.jsonl': jsonl([
        {
          id: '0',
          text: 'q?',
          doc_id: ['topic/a.txt', 'gone.txt'],
          answer: 'ans',
          body_system: 'Cardiovascular',
        },
      ]),
      'qrels.jsonl': jsonl([
        { q_id: '0', p_id: 'topic/a.txt', score: 1 },
        { q_id: '0', p_id: 'gone.txt', score: 1 },
      ]),
      'hyde/qwen-7b/query_with_hydoc.jsonl': 'not even json',
    };
    const src = new MemorySource(files, { listable: false });
    const shard = await readShard(src);
    expect(shard.manifest.format).toBe('r2med');
    expect(shard.queries[0]).toEqual({
      id: '0',
      text: 'q?',
      task: 'test',
      meta: { doc_id: ['topic/a.txt', 'gone.txt'], answer: 'ans', body_system: 'Cardiovascular' },
    });
    expect(shard.qrels.get('0')).toEqual(
      new Map([
        ['topic/a.txt', 1],
        ['gone.txt', 1],
      ]),
    );
    expect(shard.warnings).toEqual([
      expect.objectContaining({ code: 'qrels-unknown-document', count: 1, examples: ['gone.txt'] }),
    ]);
    expect(src.opens.has('hyde/qwen-7b/query_with_hydoc.jsonl')).toBe(false);
    const badScore =
      '{"q_id": "0", "p_id": "topic/a.txt", "score": 1}\n{"q_id": "0", "p_id": "topic/b.txt", "score": 0.5}\n';
    await expectIssues(withFiles(files, { 'qrels.jsonl': badScore }), [
      { file: 'qrels.jsonl', line: 2, code: 'bad-score' },
    ]);
  });
});

describe('multi-image items (images: [...])', () => {
  const withItem = (row: unknown, file = 'corpus.jsonl') => append(tiny(), file, JSON.stringify(row) + '\n');
  /** A query q3 (judged, so that only its images can be wrong). */
  const withQuery = (files: Files, row: object) =>
    append(
      append(files, 'queries.jsonl', JSON.stringify({ _id: 'q3', task: 'i2i', ...row }) + '\n'),
      'qrels/test.tsv',
      'q3\td3\t1\n',
    );
  const read = async (files: Files) => readShard(new MemorySource(files, { label: 'tiny' }));

  it('reads an ordered list with captions and roles; the first image is also `image`', async () => {
    const files = withItem({
      _id: 'd4',
      title: 'Case 4',
      text: 'two views',
      images: [{ path: 'images/b.png', role: 'frontal', caption: 'PA' }, 'images/a.jpg'],
    });
    const shard = await read(withQuery(files, { text: '', images: ['images/a.jpg', 'images/b.png'] }));
    const d4 = shard.docs.find((d) => d.id === 'd4')!;
    expect(d4.image).toBe('images/b.png');
    expect(d4.images).toEqual([
      { path: 'images/b.png', role: 'frontal', caption: 'PA' },
      { path: 'images/a.jpg' },
    ]);
    expect(d4.meta).toEqual({});
    const q3 = shard.queries.find((q) => q.id === 'q3')!;
    expect(q3.images!.map((i) => i.path)).toEqual(['images/a.jpg', 'images/b.png']);
    expect(shard.images.sort()).toEqual(['images/a.jpg', 'images/b.png']);
  });

  it('names the file, the line and the index of a missing or broken image in a list', async () => {
    const [missing] = await issuesOf(
      withItem({
        _id: 'd4',
        title: '',
        text: 'x',
        images: [{ path: 'images/a.jpg' }, { path: 'images/zzz.jpg' }],
      }),
    );
    expect(missing).toMatchObject({
      file: 'corpus.jsonl',
      line: 4,
      code: 'missing-image',
      message: 'images[1] "images/zzz.jpg" is not in the shard',
    });
    const [broken] = await issuesOf(
      withFiles(withItem({ _id: 'd4', title: '', text: 'x', images: ['images/a.jpg', 'images/c.jpg'] }), {
        'images/c.jpg': 'not an image',
      }),
    );
    expect(broken.code).toBe('not-an-image');
    expect(broken.message).toContain('(referenced on corpus.jsonl:4 as images[1])');
    const [q] = await issuesOf(withQuery(tiny(), { text: 'x', images: ['images/nope.png'] }));
    expect(q).toMatchObject({
      file: 'queries.jsonl',
      line: 3,
      code: 'missing-image',
      message: 'images[0] "images/nope.png" is not in the shard',
    });
  });

  it('rejects malformed lists, each with its reason', async () => {
    const cases: [unknown, string, string][] = [
      [
        { images: [] },
        'wrong-type',
        'field "images" must be a non-empty list of {"path", "caption", "role"}, found an empty list',
      ],
      [{ images: 'images/a.jpg' }, 'wrong-type', 'field "images" must be a non-empty list'],
      [{ images: [{ caption: 'x' }] }, 'wrong-type', 'images[0].path must be a string path'],
      [{ images: [{ path: 'images/a.jpg', role: 3 }] }, 'wrong-type', 'images[0].role must be a string'],
      [{ images: ['images/a.jpg', 'images/a.jpg'] }, 'duplicate-image', 'images[1] repeats "images/a.jpg"'],
      [{ images: ['../a.jpg'] }, 'bad-path', 'images[0] path "../a.jpg"'],
      [
        { image: 'images/a.jpg', images: ['images/b.png'] },
        'image-and-images',
        'give either "image" (one image) or "images" (a list), not both',
      ],
    ];
    for (const [extra, code, message] of cases) {
      const issues = await issuesOf(withItem({ _id: 'd4', title: '', text: 'x', ...(extra as object) }));
      expect(issues.map(where), JSON.stringify(extra)).toEqual([{ file: 'corpus.jsonl', line: 4, code }]);
      expect(issues[0].message).toContain(message);
    }
  });
});
