// Documents read by HTTP Range from a static host (issue 19 item 2), in real Chromium: medquad's
// corpus with the corpus.offsets.bin pack-shard writes, served under a sub-path by a static server
// that honours Range and logs the body bytes of every response. Ten documents read by id transfer
// parts of the offsets file by Range (never all of it) and then only their lines (two neighbouring
// lines in one request); a version 1 offsets file is still read; a bad line is refused with its file
// and line named; a host without Range and a corpus changed after packing say so.
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
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { writeDocOffsets } from '../../scripts/lib/pack-offsets';
import { encodeDocOffsets } from '../../src/lib/core/shard/doc-offsets';
import { fnv1aBytes } from '../../src/lib/core/shard/doc-offsets-v2';
import type { RangeDocsHarness } from '../browser/range-docs-harness';
import { harnessCaller, launch, pageErrors, type Session } from './browser';
import { serveRanges, type RangeServer } from './range-server';

const HARNESS = `${inject('baseUrl')}/tests/browser/range-docs-harness.html`;
const PREFIX = '/course/loupe/';
const call = harnessCaller<RangeDocsHarness>('rangeDocsHarness');

/** Each line of a JSONL file as split here: its byte start and end and its record. */
function linesOf(file: string) {
  const buf = readFileSync(file);
  const out: { start: number; end: number; record: Record<string, unknown> }[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    out.push({ start, end, record: JSON.parse(buf.subarray(start, end).toString('utf8')) });
    start = end + 1;
  }
  return out;
}

describe('documents read by HTTP Range from a static host under a sub-path', () => {
  let dir: string;
  let server: RangeServer;
  let session: Session;
  let page: Page;

  /** A copy of medquad under dir/name, its corpus changed by `edit`, with its offsets written. */
  async function shard(name: string, edit?: (lines: string[]) => void): Promise<string> {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    copyFileSync('../shared/data/medquad/shard.json', join(d, 'shard.json'));
    const lines = readFileSync('../shared/data/medquad/corpus.jsonl', 'utf8').split('\n');
    edit?.(lines);
    writeFileSync(join(d, 'corpus.jsonl'), lines.join('\n'));
    await writeDocOffsets(d, d);
    return d;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-range-docs-'));
    await shard('medquad');
    // The same corpus with a version 1 offsets file (every id and line place, read whole).
    const v1 = await shard('medquad-v1');
    const ref = linesOf(join(v1, 'corpus.jsonl'));
    const corpusBytes = readFileSync(join(v1, 'corpus.jsonl'));
    writeFileSync(
      join(v1, 'corpus.offsets.bin'),
      encodeDocOffsets({
        ids: ref.map((l) => l.record._id as string),
        starts: ref.map((l) => l.start),
        lengths: ref.map((l) => l.end - l.start),
        lines: ref.map((_, i) => i + 1),
        corpusBytes: corpusBytes.length,
        corpusFnv: fnv1aBytes(corpusBytes),
        format: 'beir+images',
      }),
    );
    // Line 7's text is a number: the importer refuses it, and so must the reader.
    await shard('bad', (lines) => {
      const o = JSON.parse(lines[6]);
      lines[6] = JSON.stringify({ ...o, text: 5 });
    });
    server = await serveRanges(dir, PREFIX);
    session = await launch();
    page = session.page;
    await page.goto(HARNESS);
    await page.waitForFunction(() => typeof window.rangeDocsHarness === 'object');
  }, 120_000);

  afterAll(async () => {
    await session?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reads ten documents by id: the offsets file once, then only their lines', async () => {
    const lines = linesOf(join(dir, 'medquad/corpus.jsonl'));
    // Rows 300 and 301 are neighbours: one request for both.
    const rows = [0, 5, 300, 301, 750, 1000, 1500, 2000, 2500, lines.length - 1];
    const ids = rows.map((r) => lines[r].record._id as string);
    const from = server.log.length;
    const out = await call(page, 'read', `${server.url}medquad`, [...ids, 'no-such-document']);
    if (!out.ok) throw new Error(out.error);
    // The documents, as their lines hold them (title, text, and other fields as metadata).
    expect(out.docs.map((d) => d.id).sort()).toEqual([...ids].sort());
    for (const d of out.docs) {
      const rec = lines.find((l) => l.record._id === d.id)!.record;
      expect(d.text).toBe(rec.text);
      expect(d.title).toBe(rec.title);
    }
    const gets = server.log.slice(from).filter((e) => e.method === 'GET');
    const offsetsPath = `${PREFIX}medquad/corpus.offsets.bin`;
    const offsetsSize = readFileSync(join(dir, 'medquad/corpus.offsets.bin')).length;
    // The offsets file is read by Range too (version 2): its first 16 KiB (header, top level), then
    // the id blocks and row entries wanted; never whole.
    expect(gets[0]).toMatchObject({ path: offsetsPath, status: 206, range: 'bytes=0-16383' });
    const offsetReads = gets.filter((e) => e.path === offsetsPath);
    expect(offsetReads.every((e) => e.status === 206 && !!e.range)).toBe(true);
    expect(offsetReads.reduce((s, e) => s + e.bytes, 0)).toBeLessThan(offsetsSize);
    const ranges = gets.filter((e) => e.path !== offsetsPath);
    expect(ranges.every((e) => e.status === 206 && e.path === `${PREFIX}medquad/corpus.jsonl`)).toBe(true);
    // Exactly the lines asked for (300 and 301 together, with the newline between them).
    const spans = rows
      .filter((r) => r !== 301)
      .map((r) => `bytes=${lines[r].start}-${(r === 300 ? lines[301] : lines[r]).end - 1}`);
    expect(ranges.map((e) => e.range).sort()).toEqual(spans.sort());
    const lineBytes = rows.reduce((s, r) => s + lines[r].end - lines[r].start, 0) + 1;
    expect(ranges.reduce((s, e) => s + e.bytes, 0)).toBe(lineBytes);
    expect(out.requests).toBe(gets.length);
    expect(out.bytesRead).toBe(gets.reduce((s, e) => s + e.bytes, 0));
    // Later reads of a document read lately fetch nothing (the reader keeps it); another document:
    // its line, and its block unless that block was read before.
    const again = server.log.length;
    const second = await call(page, 'read', `${server.url}medquad`, [ids[1]]);
    expect(second.ok).toBe(true);
    expect(server.log.slice(again)).toHaveLength(0);
    const third = await call(page, 'read', `${server.url}medquad`, [lines[6].record._id as string]);
    expect(third.ok && third.docs.map((d) => d.id)).toEqual([lines[6].record._id]);
    const more = server.log.slice(again).filter((e) => e.method === 'GET' && e.path.endsWith('corpus.jsonl'));
    expect(more).toHaveLength(1);
    expect(more[0]).toMatchObject({ status: 206, bytes: lines[6].end - lines[6].start });
    // (The harness page has no favicon: the dev server's 404 for it is not the reader's.)
    expect(pageErrors(page).filter((e) => !e.includes('favicon.ico'))).toEqual([]);
  });

  it('still reads a version 1 offsets file (fetched whole once)', async () => {
    const lines = linesOf(join(dir, 'medquad-v1/corpus.jsonl'));
    const ids = [lines[2].record._id as string, lines[900].record._id as string];
    const from = server.log.length;
    const out = await call(page, 'read', `${server.url}medquad-v1`, ids);
    if (!out.ok) throw new Error(out.error);
    expect(out.docs.map((d) => d.id).sort()).toEqual([...ids].sort());
    const offsets = server.log
      .slice(from)
      .filter((e) => e.method === 'GET' && e.path.endsWith('corpus.offsets.bin'))
      .map((e) => e.status);
    expect(offsets).toEqual([206, 200]);
  });

  it('refuses a bad line with the file and line named, as the importer does', async () => {
    const lines = linesOf(join(dir, 'medquad/corpus.jsonl'));
    const out = await call(page, 'read', `${server.url}bad`, [
      lines[6].record._id as string,
      lines[8].record._id as string,
    ]);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.error).toMatch(/^corpus\.jsonl:7: field "text" must be a string/);
  });

  it('says so when the host ignores Range, and when the corpus changed after packing', async () => {
    const plain = await serveRanges(dir, PREFIX, { ranges: false });
    try {
      const out = await call(page, 'read', `${plain.url}medquad`, ['no-such-document', 'x']);
      // No id asked for exists: only the offsets file was read.
      expect(out.ok).toBe(true);
      const id = linesOf(join(dir, 'medquad/corpus.jsonl'))[3].record._id as string;
      const whole = await call(page, 'read', `${plain.url}medquad`, [id]);
      expect(whole.ok).toBe(false);
      if (!whole.ok) expect(whole.error).toMatch(/answered a Range request with the whole file/);
    } finally {
      await plain.close();
    }
    const first = linesOf(join(dir, 'bad/corpus.jsonl'))[0].record._id as string;
    appendFileSync(join(dir, 'bad/corpus.jsonl'), '\n{"_id":"added","title":"","text":"later"}');
    const changed = await call(page, 'read', `${server.url}bad`, [first]);
    expect(changed.ok).toBe(false);
    if (!changed.ok) expect(changed.error).toMatch(/changed after it was packed/);
  });
});
