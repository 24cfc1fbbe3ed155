import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDocOffsets } from '../../scripts/lib/pack-offsets';
import { decodeDocOffsets, DOC_OFFSETS_FILE, encodeDocOffsets } from '../../src/lib/core/shard/doc-offsets';
import {
  ROW_ENTRY_BYTES,
  blockOf,
  decodeDocOffsetsHead,
  decodeIdBlock,
  decodeRowEntry,
  docOffsetsVersion,
  encodeDocOffsetsV2,
  fnv1aBytes,
  idsFnv,
  remoteHeadFnv,
  rowInBlock,
} from '../../src/lib/core/shard/doc-offsets-v2';
import { corpusOrderMismatch, parsePrecomputedSidecar } from '../../src/lib/core/shard/precomputed';
import { findDocRow } from '../../src/lib/core/shard/doc-directory';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'loupe-offsets-'));
  dirs.push(d);
  return d;
}

/**
 * The lines of a JSONL file found by splitting its bytes on \n here (not by the app's line reader):
 * each document line's bytes (without \r, and without a BOM on line 1), number and id.
 */
function referenceLines(buf: Buffer, idKey = '_id') {
  const out: { bytes: Buffer; line: number; id: string }[] = [];
  let start = 0;
  let line = 1;
  while (start <= buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    let s = start;
    let e = end;
    if (line === 1 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) s += 3;
    if (e > s && buf[e - 1] === 0x0d) e--;
    const bytes = buf.subarray(s, e);
    if (bytes.toString('utf8').trim() !== '')
      out.push({ bytes, line, id: (JSON.parse(bytes.toString('utf8')) as Record<string, string>)[idKey] });
    start = end + 1;
    line++;
  }
  return out;
}

/** A version 2 file read here whole: its header and top level, a row's entry, an id's row. */
function readV2(bytes: Uint8Array) {
  const got = decodeDocOffsetsHead(bytes, DOC_OFFSETS_FILE, bytes.length);
  if (!got.complete) throw new Error('the whole file holds less than its header says');
  const head = got.head;
  return {
    head,
    entry: (row: number) => decodeRowEntry(bytes, head.rowsAt + ROW_ENTRY_BYTES * row, head, row, 'x'),
    rowOf: (id: string) => {
      const b = blockOf(head, id);
      if (b < 0) return -1;
      const block = decodeIdBlock(bytes.subarray(head.blockStarts[b], head.blockStarts[b + 1]), head, b, 'x');
      return rowInBlock(block, id);
    },
  };
}

function checkEveryLine(dir: string, idKey = '_id') {
  const corpus = readFileSync(join(dir, 'corpus.jsonl'));
  const offsets = readV2(readFileSync(join(dir, DOC_OFFSETS_FILE)));
  const ref = referenceLines(corpus, idKey);
  expect(offsets.head.n).toBe(ref.length);
  expect(offsets.head.corpusBytes).toBe(corpus.length);
  ref.forEach((r, row) => {
    expect(offsets.rowOf(r.id)).toBe(row);
    const e = offsets.entry(row);
    const got = corpus.subarray(e.start, e.start + e.length);
    expect(Buffer.compare(got, r.bytes), `${r.id}'s range`).toBe(0);
    expect(e.line).toBe(r.line);
  });
  return offsets;
}

describe('FNV-1a, 32 bit', () => {
  it('gives the published test vectors', () => {
    // From the FNV reference (isthe.com/chongo/tech/comp/fnv): "", "a", "foobar".
    const enc = new TextEncoder();
    expect(fnv1aBytes(enc.encode(''))).toBe(0x811c9dc5);
    expect(fnv1aBytes(enc.encode('a'))).toBe(0xe40c292c);
    expect(fnv1aBytes(enc.encode('foobar'))).toBe(0xbf9cf968);
    // Continued over two pieces, it is the hash of both together.
    expect(fnv1aBytes(enc.encode('bar'), fnv1aBytes(enc.encode('foo')))).toBe(0xbf9cf968);
  });
});

describe('corpus.offsets.bin (version 2: read by Range)', () => {
  it("gives every id of a packed shard exactly its line's bytes, and is named in shard.json", async () => {
    const dir = tempDir();
    copyFileSync('../shared/data/medquad/corpus.jsonl', join(dir, 'corpus.jsonl'));
    copyFileSync('../shared/data/medquad/shard.json', join(dir, 'shard.json'));
    const r = await writeDocOffsets(dir, dir);
    expect(r.docs).toBe(3000);
    const offsets = checkEveryLine(dir);
    expect(offsets.head.format).toBe('beir+images');
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).doc_offsets).toBe(DOC_OFFSETS_FILE);
    expect(offsets.rowOf('no-such-document')).toBe(-1);
    expect(offsets.rowOf('')).toBe(-1);
    expect(offsets.rowOf('\uffff')).toBe(-1);
    // What opening reads: the header and top level, a small part of the file.
    expect(offsets.head.headBytes).toBeLessThan(r.bytes / 50);
    // The checksum of the ids in corpus order (each followed by a newline), as split here.
    const ids = referenceLines(readFileSync(join(dir, 'corpus.jsonl'))).map((l) => l.id);
    expect(offsets.head.idsFnv).toBe(fnv1aBytes(Buffer.from(ids.map((id) => `${id}\n`).join(''))));
  });

  it('handles a BOM, \\r\\n endings, blank lines and non-ASCII ids and text (a lenient BEIR corpus)', async () => {
    const dir = tempDir();
    const docs = [
      { _id: 'é-1', title: 'Ünïcode', text: 'naïve café 中文 😀' },
      { _id: '10', title: '', text: 'ten' },
      { _id: '9', title: '', text: 'nine\nwith an escaped newline' },
      { _id: '中', title: 't', text: 'x'.repeat(5000) },
    ];
    const lines = docs.map((d) => JSON.stringify(d));
    const text = '\ufeff' + lines[0] + '\r\n\r\n' + lines[1] + '\r\n' + lines[2] + '\n\n\n' + lines[3];
    writeFileSync(join(dir, 'corpus.jsonl'), text);
    writeFileSync(join(dir, 'queries.jsonl'), '');
    expect((await writeDocOffsets(dir, dir)).docs).toBe(4);
    expect(checkEveryLine(dir).head.format).toBe('beir');
  });

  it('finds ids across many small blocks (every id, and ids between and around them)', () => {
    const ids = Array.from({ length: 50 }, (_, i) => `d${(i * 7919) % 1000}`);
    const bytes = encodeDocOffsetsV2({
      ids,
      starts: ids.map((_, i) => i * 10),
      lengths: ids.map(() => 9),
      lines: ids.map((_, i) => i + 1),
      corpusBytes: 500,
      corpusFnv: 1,
      format: 'beir',
      blockIds: 3,
    });
    const o = readV2(bytes);
    expect(o.head.firstIds).toHaveLength(17);
    ids.forEach((id, row) => expect(o.rowOf(id)).toBe(row));
    for (const miss of ['a', 'd', 'd00', 'd9999', 'e', `${ids[0]}x`]) expect(o.rowOf(miss)).toBe(-1);
    expect(o.entry(49)).toEqual({ start: 490, length: 9, line: 50 });
  });

  it('records the queries and qrels checksum only when every document they name is in the corpus', async () => {
    const dir = tempDir();
    for (const f of ['corpus.jsonl', 'shard.json', 'queries.jsonl'])
      copyFileSync(`../shared/data/medquad/${f}`, join(dir, f));
    mkdirSync(join(dir, 'qrels'));
    copyFileSync('../shared/data/medquad/qrels/test.tsv', join(dir, 'qrels/test.tsv'));
    await writeDocOffsets(dir, dir);
    const want = remoteHeadFnv(
      readFileSync(join(dir, 'queries.jsonl')),
      readFileSync(join(dir, 'qrels/test.tsv')),
    );
    expect(readV2(readFileSync(join(dir, DOC_OFFSETS_FILE))).head.qrelsFnv).toBe(want);
    // A judgement of a document the corpus lacks: nothing recorded (the app looks ids up).
    appendFileSync(
      join(dir, 'qrels/test.tsv'),
      `${readFileSync(join(dir, 'qrels/test.tsv'), 'utf8').split('\n')[1].split('\t')[0]}\tno-such-doc\t1\n`,
    );
    await writeDocOffsets(dir, dir);
    expect(readV2(readFileSync(join(dir, DOC_OFFSETS_FILE))).head.qrelsFnv).toBeNull();
  });

  it('writes corpus_order in a sidecar whose doc_ids are the corpus order, and only there', async () => {
    const dir = tempDir();
    const docs = ['b', 'a', 'c'].map((id) => ({ _id: id, title: '', text: `text ${id}` }));
    writeFileSync(join(dir, 'corpus.jsonl'), docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
    const set = 'm/fp32/';
    mkdirSync(join(dir, 'embeddings', set), { recursive: true });
    writeFileSync(
      join(dir, 'embeddings/index.json'),
      JSON.stringify({ format: 'loupe-embeddings/1', sets: [{ model_id: 'm', dtype: 'fp32', path: set }] }),
    );
    const sidecar = (ids: string[]) => ({
      format: 'loupe-embeddings/1',
      model_id: 'm',
      hub_id: 'm',
      revision: 'main',
      dtype: 'fp32',
      pooling: 'mean',
      normalize: true,
      query_prefix: '',
      doc_prefix: '',
      dim: 2,
      part: 'text',
      vectors: 'text.npy',
      missing: [],
      doc_ids: ids,
    });
    const file = join(dir, 'embeddings', set, 'sidecar-text.json');
    writeFileSync(file, JSON.stringify(sidecar(['a', 'b', 'c'])));
    await writeDocOffsets(dir, dir);
    // Another order: left as it is.
    expect(JSON.parse(readFileSync(file, 'utf8')).doc_ids).toEqual(['a', 'b', 'c']);
    // The corpus order: its count and the ids' checksum instead.
    writeFileSync(file, JSON.stringify(sidecar(['b', 'a', 'c'])));
    await writeDocOffsets(dir, dir);
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(written.doc_ids).toBeUndefined();
    expect(written.corpus_order).toEqual({
      docs: 3,
      ids_fnv1a: fnv1aBytes(Buffer.from('b\na\nc\n')).toString(16).padStart(8, '0'),
    });
    const parsed = parsePrecomputedSidecar(written, 'sidecar-text.json');
    expect(corpusOrderMismatch(parsed, { docs: 3, idsFnv: idsFnv(['b', 'a', 'c']) })).toBe('');
    expect(corpusOrderMismatch(parsed, { docs: 3, idsFnv: idsFnv(['a', 'b', 'c']) })).toMatch(
      /not the corpus’s ids in corpus order/,
    );
    expect(corpusOrderMismatch(parsed, { docs: 4, idsFnv: idsFnv(['b', 'a', 'c']) })).toMatch(
      /3 documents, the corpus has 4/,
    );
    expect(() => parsePrecomputedSidecar({ ...written, corpus_order: { docs: 3 } }, 's.json')).toThrow(
      /s\.json.*'corpus_order' must be/,
    );
  });

  it('is refused when truncated or not an offsets file, naming the file and what to run', async () => {
    const dir = tempDir();
    copyFileSync('../shared/data/medquad/corpus.jsonl', join(dir, 'corpus.jsonl'));
    await writeDocOffsets(dir, dir);
    const bytes = readFileSync(join(dir, DOC_OFFSETS_FILE));
    expect(() => decodeDocOffsetsHead(bytes, 'x/corpus.offsets.bin', bytes.length - 1)).toThrow(
      /x\/corpus\.offsets\.bin: .*truncated.*npm run pack-shard -- --offsets/,
    );
    const other = Buffer.from(bytes);
    other.write('NOTLOUPE', 0);
    expect(() => decodeDocOffsetsHead(other, 'corpus.offsets.bin')).toThrow(/not a document offsets file/);
    // A block that is not the one the top level names.
    const o = readV2(bytes);
    expect(() =>
      decodeIdBlock(bytes.subarray(o.head.blockStarts[1], o.head.blockStarts[2]), o.head, 0, 'f.bin'),
    ).toThrow(/f\.bin: block 0 /);
  });
});

describe('corpus.offsets.bin version 1 (still read, whole)', () => {
  it('is decoded as before, and refused when truncated', () => {
    const ids = ['b', 'a', 'c'];
    const bytes = encodeDocOffsets({
      ids,
      starts: [0, 10, 20],
      lengths: [9, 9, 9],
      lines: [1, 2, 3],
      corpusBytes: 30,
      corpusFnv: 5,
      format: 'beir+images',
    });
    expect(docOffsetsVersion(bytes, 'x')).toBe(1);
    const o = decodeDocOffsets(bytes, 'corpus.offsets.bin');
    expect(ids.map((id) => findDocRow(o.dir, id))).toEqual([0, 1, 2]);
    expect([...o.starts]).toEqual([0, 10, 20]);
    expect(() => decodeDocOffsets(bytes.subarray(0, bytes.length - 1), 'x/corpus.offsets.bin')).toThrow(
      /x\/corpus\.offsets\.bin: .*truncated/,
    );
  });
});
