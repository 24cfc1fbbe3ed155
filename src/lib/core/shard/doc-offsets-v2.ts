// corpus.offsets.bin, version 2 (issue 19): laid out so that a shard on a static host is opened by
// reading a few kilobytes of it, not the whole file. A document's line is found by its corpus row
// (the row of the .npy and of the packed index: one fixed-size entry), and a document id by a small
// top level read on open plus one block of the sorted ids, each by one HTTP Range request.
//
// Layout (little-endian; n documents, in corpus order "row"; B ids per block, m blocks):
//   0  "LOUPEDOC"  8 bytes
//   8  u32 version (2)
//  12  u32 n
//  16  f64 byte size of corpus.jsonl (a changed corpus is refused by its size)
//  24  u32 FNV-1a of corpus.jsonl's bytes (its identity)
//  28  u32 format: 0 "BEIR + images", 1 BEIR, 2 R2MED (how a line is validated)
//  32  u32 FNV-1a of every id in corpus order, each followed by "\n" (UTF-8): a sidecar whose rows
//          are the corpus order says so by this checksum instead of listing a million ids
//  36  u32 remoteHeadFnv of queries.jsonl and qrels/test.tsv when pack-shard found, with the
//          importer's own readers, every document they name in the corpus and no other problem;
//      40  u32 1 when it did (0: the app looks each id up when it opens the shard)
//  44  u32 B
//  48  u32 m
//  52  u32 bytes of the top level
//  56  f64 offset of the row table
//  64  f64 offset of the first block
//  72  top level: f64 start[m + 1] of each block (the last: the file's end), u32 ends[m] of each
//      block's first id in the first-id text (UTF-16 code units), the first ids concatenated (UTF-8)
//      row table: per row, f64 start of its line, u32 its byte length (without \r\n or \n), u32 its
//      1-based line number (16 bytes)
//      blocks: u32 count, u32 ends[count] (UTF-16 code units in the block's id text), u32
//      rows[count], the block's ids concatenated (UTF-8); ids sorted by JavaScript string order
import type { ShardFormat } from '../types';
import { buildDocDirectory } from './doc-directory';

export const DOC_OFFSETS_V2 = 2;
export const V2_HEADER = 72;
export const ROW_ENTRY_BYTES = 16;
/** Ids per block: a lookup reads one block (about 5 KB for ten-character ids). */
export const DEFAULT_BLOCK_IDS = 256;
const MAGIC = 'LOUPEDOC';
const FORMATS: ShardFormat[] = ['beir+images', 'beir', 'r2med'];

/** FNV-1a, 32 bit, continued from `h`. */
export function fnv1aBytes(bytes: Uint8Array, h = 0x811c9dc5): number {
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

/** The files a shard opened remote-first reads and checks on open (remote-shard.ts). */
export const REMOTE_HEAD = { queries: 'queries.jsonl', qrels: 'qrels/test.tsv' } as const;

/** The checksum header offset 36 holds: FNV-1a of queries.jsonl's bytes, then qrels/test.tsv's. */
export function remoteHeadFnv(queries: Uint8Array, qrels: Uint8Array): number {
  return fnv1aBytes(qrels, fnv1aBytes(queries));
}

/** The checksum of ids in order (each followed by "\n", UTF-8) that header offset 32 holds. */
export function idsFnv(ids: Iterable<string>): number {
  const enc = new TextEncoder();
  let h = 0x811c9dc5;
  for (const id of ids) h = fnv1aBytes(enc.encode(`${id}\n`), h);
  return h >>> 0;
}

/** What the first bytes of a version 2 file say, and its top level. */
export interface DocOffsetsHead {
  n: number;
  corpusBytes: number;
  corpusFnv: number;
  format: ShardFormat;
  idsFnv: number;
  /** remoteHeadFnv of the queries and qrels whose documents pack-shard found in the corpus, else null. */
  qrelsFnv: number | null;
  blockIds: number;
  /** Byte offset of the row table. */
  rowsAt: number;
  /** Per block: its first byte (and, last, the end of the file). */
  blockStarts: Float64Array;
  /** Each block's first id. */
  firstIds: string[];
  /** Header plus top level: the bytes to read before anything else. */
  headBytes: number;
}

/** Builds a version 2 file from each row's id, line start, length and number (rows in corpus order). */
export function encodeDocOffsetsV2(x: {
  ids: readonly string[];
  starts: ArrayLike<number>;
  lengths: ArrayLike<number>;
  lines: ArrayLike<number>;
  corpusBytes: number;
  corpusFnv: number;
  format: ShardFormat;
  /** remoteHeadFnv of queries and qrels files that name only documents of `ids` (checked). */
  qrelsFnv?: number;
  blockIds?: number;
}): Uint8Array {
  const n = x.ids.length;
  const B = x.blockIds ?? DEFAULT_BLOCK_IDS;
  const dir = buildDocDirectory(x.ids);
  const enc = new TextEncoder();
  const m = Math.ceil(n / B);
  const idAt = (i: number) => dir.ids.slice(i === 0 ? 0 : dir.ends[i - 1], dir.ends[i]);
  const blocks: Uint8Array[] = [];
  const firsts: string[] = [];
  for (let b = 0; b < m; b++) {
    const from = b * B;
    const to = Math.min(n, from + B);
    const ids = Array.from({ length: to - from }, (_, k) => idAt(from + k));
    firsts.push(ids[0]);
    const text = enc.encode(ids.join(''));
    const out = new Uint8Array(4 + 8 * ids.length + text.length);
    const v = new DataView(out.buffer);
    v.setUint32(0, ids.length, true);
    let end = 0;
    ids.forEach((id, k) => {
      end += id.length;
      v.setUint32(4 + 4 * k, end, true);
      v.setUint32(4 + 4 * ids.length + 4 * k, dir.rows[from + k], true);
    });
    out.set(text, 4 + 8 * ids.length);
    blocks.push(out);
  }
  const firstText = enc.encode(firsts.join(''));
  const topBytes = 8 * (m + 1) + 4 * m + firstText.length;
  const rowsAt = V2_HEADER + topBytes;
  const blocksAt = rowsAt + ROW_ENTRY_BYTES * n;
  const total = blocksAt + blocks.reduce((a, b) => a + b.length, 0);
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  for (let i = 0; i < MAGIC.length; i++) out[i] = MAGIC.charCodeAt(i);
  v.setUint32(8, DOC_OFFSETS_V2, true);
  v.setUint32(12, n, true);
  v.setFloat64(16, x.corpusBytes, true);
  v.setUint32(24, x.corpusFnv >>> 0, true);
  v.setUint32(28, FORMATS.indexOf(x.format), true);
  v.setUint32(32, idsFnv(x.ids), true);
  v.setUint32(36, (x.qrelsFnv ?? 0) >>> 0, true);
  v.setUint32(40, x.qrelsFnv === undefined ? 0 : 1, true);
  v.setUint32(44, B, true);
  v.setUint32(48, m, true);
  v.setUint32(52, topBytes, true);
  v.setFloat64(56, rowsAt, true);
  v.setFloat64(64, blocksAt, true);
  let at = V2_HEADER;
  let start = blocksAt;
  for (let b = 0; b <= m; b++, at += 8) {
    v.setFloat64(at, start, true);
    start += blocks[b]?.length ?? 0;
  }
  let end = 0;
  for (let b = 0; b < m; b++, at += 4) {
    end += firsts[b].length;
    v.setUint32(at, end, true);
  }
  out.set(firstText, at);
  at = rowsAt;
  for (let r = 0; r < n; r++, at += ROW_ENTRY_BYTES) {
    v.setFloat64(at, x.starts[r], true);
    v.setUint32(at + 8, x.lengths[r], true);
    v.setUint32(at + 12, x.lines[r], true);
  }
  at = blocksAt;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

/** The version a document offsets file's first 12 bytes name (throws when they are not one). */
export function docOffsetsVersion(first: Uint8Array, name: string): number {
  const magic = String.fromCharCode(...first.subarray(0, 8));
  if (first.length < 12 || magic !== MAGIC)
    throw new Error(
      `${name}: not a document offsets file (it starts with ${JSON.stringify(magic)}); write it again with npm run pack-shard -- --offsets`,
    );
  return new DataView(first.buffer, first.byteOffset, 12).getUint32(8, true);
}

/**
 * Reads a version 2 header; `bytes` holds at least its first V2_HEADER bytes, and the top level
 * when `need` (the returned headBytes) fits in them: else `top` is null and the caller reads
 * `headBytes` bytes and calls again. `fileBytes`: the file's size, when known (checked).
 */
export function decodeDocOffsetsHead(
  bytes: Uint8Array,
  name: string,
  fileBytes?: number,
): { head: DocOffsetsHead; complete: true } | { headBytes: number; complete: false } {
  const bad = (what: string): never => {
    throw new Error(`${name}: ${what}; write it again with npm run pack-shard -- --offsets`);
  };
  if (bytes.length < V2_HEADER) bad(`${bytes.length} bytes, shorter than its ${V2_HEADER}-byte header`);
  const version = docOffsetsVersion(bytes, name);
  if (version !== DOC_OFFSETS_V2) bad(`version ${version}, not ${DOC_OFFSETS_V2}`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = v.getUint32(12, true);
  const corpusBytes = v.getFloat64(16, true);
  const format = FORMATS[v.getUint32(28, true)];
  if (!format) bad(`unknown format code ${v.getUint32(28, true)}`);
  const B = v.getUint32(44, true);
  const m = v.getUint32(48, true);
  const topBytes = v.getUint32(52, true);
  const rowsAt = v.getFloat64(56, true);
  const blocksAt = v.getFloat64(64, true);
  if (!(Number.isSafeInteger(corpusBytes) && corpusBytes >= 0))
    bad(`corpus size ${corpusBytes} is not valid`);
  if (B === 0 ? n !== 0 : m !== Math.ceil(n / B)) bad(`${m} blocks of ${B} ids cannot hold ${n} documents`);
  const headBytes = V2_HEADER + topBytes;
  if (rowsAt !== headBytes || blocksAt !== rowsAt + ROW_ENTRY_BYTES * n || topBytes < 12 * m + 8)
    bad('its sections do not follow each other as the header says: it is damaged');
  if (bytes.length < headBytes) return { headBytes, complete: false };
  const top = new Uint8Array(bytes.subarray(V2_HEADER, headBytes)).buffer;
  const blockStarts = new Float64Array(top, 0, m + 1);
  const ends = new Uint32Array(top, 8 * (m + 1), m);
  const text = new TextDecoder().decode(new Uint8Array(top, 12 * m + 8));
  if (blockStarts[0] !== blocksAt) bad('its first block is not where the header says');
  for (let b = 0; b < m; b++)
    if (!(blockStarts[b + 1] > blockStarts[b])) bad(`block ${b} has no bytes or is out of order`);
  if (fileBytes !== undefined && blockStarts[m] !== fileBytes)
    bad(`${fileBytes} bytes, its header says ${blockStarts[m]}: it is truncated or damaged`);
  const firstIds: string[] = [];
  let prev = 0;
  for (let b = 0; b < m; b++) {
    if (ends[b] < prev || ends[b] > text.length) bad('its top level is damaged');
    firstIds.push(text.slice(prev, ends[b]));
    if (b > 0 && !(firstIds[b - 1] < firstIds[b])) bad(`its top level is not in order at block ${b}`);
    prev = ends[b];
  }
  return {
    complete: true,
    head: {
      n,
      corpusBytes,
      corpusFnv: v.getUint32(24, true),
      format,
      idsFnv: v.getUint32(32, true),
      qrelsFnv: v.getUint32(40, true) === 1 ? v.getUint32(36, true) : null,
      blockIds: B,
      rowsAt,
      blockStarts,
      firstIds,
      headBytes,
    },
  };
}

/** The block that would hold `id` (-1: it sorts before every id, so none does). */
export function blockOf(head: DocOffsetsHead, id: string): number {
  let lo = 0;
  let hi = head.firstIds.length;
  // The last block whose first id is ≤ id.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (head.firstIds[mid] <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** One block's sorted ids and their rows. */
export interface IdBlock {
  ids: string[];
  rows: Uint32Array;
}

/** Decodes block `b` (its bytes exactly); throws naming the file and the block when damaged. */
export function decodeIdBlock(bytes: Uint8Array, head: DocOffsetsHead, b: number, name: string): IdBlock {
  const bad = (what: string): never => {
    throw new Error(`${name}: block ${b} ${what}; write it again with npm run pack-shard -- --offsets`);
  };
  if (bytes.length < 4) bad('is truncated');
  const copy = new Uint8Array(bytes).buffer;
  const count = new DataView(copy).getUint32(0, true);
  const want = b === head.firstIds.length - 1 ? head.n - b * head.blockIds : head.blockIds;
  if (count !== want || bytes.length < 4 + 8 * count) bad(`holds ${count} ids, the header says ${want}`);
  const ends = new Uint32Array(copy, 4, count);
  const rows = new Uint32Array(copy, 4 + 4 * count, count);
  const text = new TextDecoder().decode(new Uint8Array(copy, 4 + 8 * count));
  const ids: string[] = [];
  let prev = 0;
  for (let k = 0; k < count; k++) {
    if (ends[k] < prev || ends[k] > text.length || rows[k] >= head.n) bad('is damaged');
    ids.push(text.slice(prev, ends[k]));
    prev = ends[k];
  }
  if (ids[0] !== head.firstIds[b]) bad('does not start with the id the top level names');
  return { ids, rows };
}

/** The row of `id` in its block, or -1. */
export function rowInBlock(block: IdBlock, id: string): number {
  let lo = 0;
  let hi = block.ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (block.ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return block.ids[lo] === id ? block.rows[lo] : -1;
}

/** A row's line: its first byte, byte length and line number (from its 16-byte entry). */
export interface RowEntry {
  start: number;
  length: number;
  line: number;
}

/** Decodes the entry at `bytes[at…]` and checks it against the corpus's size. */
export function decodeRowEntry(
  bytes: Uint8Array,
  at: number,
  head: DocOffsetsHead,
  row: number,
  name: string,
): RowEntry {
  const v = new DataView(bytes.buffer, bytes.byteOffset + at, ROW_ENTRY_BYTES);
  const start = v.getFloat64(0, true);
  const length = v.getUint32(8, true);
  const line = v.getUint32(12, true);
  if (!(start >= 0 && start + length <= head.corpusBytes) || line < 1)
    throw new Error(
      `${name}: row ${row}'s line ends past the corpus's ${head.corpusBytes} bytes; write it again with npm run pack-shard -- --offsets`,
    );
  return { start, length, line };
}
