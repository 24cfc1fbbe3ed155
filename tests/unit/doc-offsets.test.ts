import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDocOffsets } from '../../scripts/lib/pack-offsets';
import { decodeDocOffsets, DOC_OFFSETS_FILE } from '../../src/lib/core/shard/doc-offsets';
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

function checkEveryLine(dir: string, idKey = '_id') {
  const corpus = readFileSync(join(dir, 'corpus.jsonl'));
  const offsets = decodeDocOffsets(readFileSync(join(dir, DOC_OFFSETS_FILE)), DOC_OFFSETS_FILE);
  const ref = referenceLines(corpus, idKey);
  expect(offsets.dir.rows.length).toBe(ref.length);
  expect(offsets.corpusBytes).toBe(corpus.length);
  ref.forEach((r, row) => {
    expect(findDocRow(offsets.dir, r.id)).toBe(row);
    const start = offsets.starts[row];
    const got = corpus.subarray(start, start + offsets.lengths[row]);
    expect(Buffer.compare(got, r.bytes), `${r.id}'s range`).toBe(0);
    expect(offsets.lines[row]).toBe(r.line);
  });
  return offsets;
}

describe('corpus.offsets.bin', () => {
  it("gives every id of a packed shard exactly its line's bytes, and is named in shard.json", async () => {
    const dir = tempDir();
    copyFileSync('../shared/data/medquad/corpus.jsonl', join(dir, 'corpus.jsonl'));
    copyFileSync('../shared/data/medquad/shard.json', join(dir, 'shard.json'));
    const r = await writeDocOffsets(dir, dir);
    expect(r.docs).toBe(3000);
    const offsets = checkEveryLine(dir);
    expect(offsets.format).toBe('beir+images');
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).doc_offsets).toBe(DOC_OFFSETS_FILE);
    expect(findDocRow(offsets.dir, 'no-such-document')).toBe(-1);
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
    expect(checkEveryLine(dir).format).toBe('beir');
  });

  it('is refused when truncated or not an offsets file, naming the file', async () => {
    const dir = tempDir();
    copyFileSync('../shared/data/medquad/corpus.jsonl', join(dir, 'corpus.jsonl'));
    await writeDocOffsets(dir, dir);
    const bytes = readFileSync(join(dir, DOC_OFFSETS_FILE));
    expect(() => decodeDocOffsets(bytes.subarray(0, bytes.length - 1), 'x/corpus.offsets.bin')).toThrow(
      /x\/corpus\.offsets\.bin: .*truncated/,
    );
    const other = Buffer.from(bytes);
    other.write('NOTLOUPE', 0);
    expect(() => decodeDocOffsets(other, 'corpus.offsets.bin')).toThrow(/not a document offsets file/);
  });
});
