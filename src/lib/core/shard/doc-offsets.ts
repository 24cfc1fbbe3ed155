// corpus.offsets.bin: where each document's line lies in corpus.jsonl, written by pack-shard beside the
// corpus and named in shard.json (`"doc_offsets"`), so that a shard on a static host can show a
// document by reading its line with one HTTP Range request instead of importing the corpus first.
//
// Layout (little-endian; n documents, in corpus order "row"):
//   0  "LOUPEDOC"  8 bytes
//   8  u32 version (1)
//  12  u32 n
//  16  f64 byte size of corpus.jsonl (a changed corpus is refused by its size)
//  24  u32 FNV-1a of corpus.jsonl's bytes (its identity)
//  28  u32 bytes of the id text (UTF-8)
//  32  u32 format: 0 "BEIR + images", 1 BEIR, 2 R2MED (how a line is validated)
//  36  u32 0
//  40  ends     u32[n]  sorted-id directory (core/shard/doc-directory.ts): end of each sorted id, in
//                       UTF-16 code units of the id text
//      rows     u32[n]  corpus row of each sorted id
//      lines    u32[n]  1-based line number of each row
//      lengths  u32[n]  bytes of each row's line (without its \r\n or \n)
//      starts   f64[n]  byte offset of each row's line
//      id text  every sorted id, concatenated, UTF-8
import type { ShardFormat } from '../types';
import { buildDocDirectory, type DocDirectory } from './doc-directory';

/** The file's usual name, and the shard.json key that names it. */
export const DOC_OFFSETS_FILE = 'corpus.offsets.bin';
export const DOC_OFFSETS_KEY = 'doc_offsets';

const MAGIC = 'LOUPEDOC';
const VERSION = 1;
const HEADER = 40;
const FORMATS: ShardFormat[] = ['beir+images', 'beir', 'r2med'];

export interface DocOffsets {
  /** Sorted id directory: findDocRow(dir, id) gives a document's row. */
  dir: DocDirectory;
  /** Per row: its line's first byte, byte length and line number. */
  starts: Float64Array;
  lengths: Uint32Array;
  lines: Uint32Array;
  corpusBytes: number;
  corpusFnv: number;
  format: ShardFormat;
}

/** Builds the file from each row's id, line start, length and number (rows in corpus order). */
export function encodeDocOffsets(x: {
  ids: readonly string[];
  starts: ArrayLike<number>;
  lengths: ArrayLike<number>;
  lines: ArrayLike<number>;
  corpusBytes: number;
  corpusFnv: number;
  format: ShardFormat;
}): Uint8Array {
  const n = x.ids.length;
  const dir = buildDocDirectory(x.ids);
  const idBytes = new TextEncoder().encode(dir.ids);
  const out = new Uint8Array(HEADER + 24 * n + idBytes.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < MAGIC.length; i++) out[i] = MAGIC.charCodeAt(i);
  view.setUint32(8, VERSION, true);
  view.setUint32(12, n, true);
  view.setFloat64(16, x.corpusBytes, true);
  view.setUint32(24, x.corpusFnv >>> 0, true);
  view.setUint32(28, idBytes.length, true);
  view.setUint32(32, FORMATS.indexOf(x.format), true);
  let at = HEADER;
  const u32 = (get: (i: number) => number) => {
    for (let i = 0; i < n; i++, at += 4) view.setUint32(at, get(i), true);
  };
  u32((i) => dir.ends[i]);
  u32((i) => dir.rows[i]);
  u32((i) => x.lines[i]);
  u32((i) => x.lengths[i]);
  for (let i = 0; i < n; i++, at += 8) view.setFloat64(at, x.starts[i], true);
  out.set(idBytes, at);
  return out;
}

/** Reads the file (`name` is used in messages); throws an Error saying what is wrong. */
export function decodeDocOffsets(bytes: Uint8Array, name: string): DocOffsets {
  const bad = (what: string): never => {
    throw new Error(`${name}: ${what}; write it again with npm run pack-shard`);
  };
  if (bytes.length < HEADER) bad(`${bytes.length} bytes, shorter than its ${HEADER}-byte header`);
  const magic = String.fromCharCode(...bytes.subarray(0, 8));
  if (magic !== MAGIC) bad(`not a document offsets file (it starts with ${JSON.stringify(magic)})`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== VERSION) bad(`version ${version}, this Loupe reads version ${VERSION}`);
  const n = view.getUint32(12, true);
  const corpusBytes = view.getFloat64(16, true);
  const corpusFnv = view.getUint32(24, true);
  const idLength = view.getUint32(28, true);
  const format = FORMATS[view.getUint32(32, true)];
  if (!format) bad(`unknown format code ${view.getUint32(32, true)}`);
  const want = HEADER + 24 * n + idLength;
  if (bytes.length !== want)
    bad(`${bytes.length} bytes, its header says ${want} (${n} documents): it is truncated or damaged`);
  if (!(Number.isSafeInteger(corpusBytes) && corpusBytes >= 0))
    bad(`corpus size ${corpusBytes} is not valid`);
  // A copy, so that the typed arrays are aligned whatever the buffer the bytes came in (and a Node
  // Buffer's slice is a view of its pool, not a copy).
  const body = new Uint8Array(bytes.subarray(HEADER, HEADER + 24 * n)).buffer;
  const ends = new Uint32Array(body, 0, n);
  const rows = new Uint32Array(body, 4 * n, n);
  const lines = new Uint32Array(body, 8 * n, n);
  const lengths = new Uint32Array(body, 12 * n, n);
  const starts = new Float64Array(body, 16 * n, n);
  const ids = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(HEADER + 24 * n));
  const seen = new Uint8Array(n);
  let prevEnd = 0;
  for (let i = 0; i < n; i++) {
    if (ends[i] < prevEnd) bad(`the id directory is not in order at entry ${i}`);
    prevEnd = ends[i];
    const r = rows[i];
    if (r >= n || seen[r]) bad(`the id directory names row ${r} twice or out of range`);
    seen[r] = 1;
    if (starts[i] + lengths[i] > corpusBytes || starts[i] < 0)
      bad(`row ${i}'s line ends past the corpus's ${corpusBytes} bytes`);
  }
  if (n > 0 && ends[n - 1] !== ids.length) bad(`the id text does not match the directory`);
  return { dir: { ids, ends, rows }, starts, lengths, lines, corpusBytes, corpusFnv, format };
}
