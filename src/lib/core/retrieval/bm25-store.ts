// The BM25 index as stored in IndexedDB: a structured-clone friendly snapshot (a plain header plus
// ArrayBuffers) and its checked rebuild, which refuses a corrupt, truncated or outdated snapshot
// rather than scoring with it.
import { ANALYZER_IDS, type AnalyzerId } from './analyzers';
import { ANALYZER_VERSION } from './analyzer';
import { assemble, checkParams, type Bm25Index, type Bm25Params } from './bm25';

/** A structured-clone friendly snapshot of an index (plain object + ArrayBuffers) for IndexedDB. */
export interface SerializedBm25 {
  meta: Bm25Meta;
  buffers: ArrayBuffer[];
}

/** Header of a serialized index. */
export interface Bm25Meta {
  format: 'loupe-bm25';
  version: number;
  analyzerVersion: number;
  params: Bm25Params;
  docCount: number;
  indexedDocCount: number;
  termCount: number;
  postingCount: number;
  sumDocLength: number;
  /** Bytes per stored term frequency: 2 (Uint16) or 4 (Uint32). */
  tfBytes: 2 | 4;
  /** Analyzer of each document-language group (buffer 8 holds each document's group). */
  analyzers: AnalyzerId[];
}

/** Thrown by deserializeBm25 when a snapshot is corrupt, truncated or from another format version. */
export class CorruptIndexError extends Error {
  constructor(message: string) {
    super(`BM25 index cache is unusable: ${message}`);
    this.name = 'CorruptIndexError';
  }
}

/** Current serialization format version (2: per-document analyzer groups). */
export const BM25_FORMAT_VERSION = 2;

// ---------------------------------------------------------------------------------------------
// Serialization. Buffer layout (all copies, so transferring them never detaches the index):
//   0 doc id UTF-8 byte offsets  Uint32[docCount + 1]     1 doc id UTF-8 bytes
//   2 term UTF-8 byte offsets    Uint32[termCount + 1]    3 term UTF-8 bytes
//   4 posting offsets            Uint32[termCount + 1]    5 posting docs Uint32[postingCount]
//   6 posting tfs Uint16|Uint32[postingCount]             7 doc lengths  Uint32[docCount]
//   8 doc analyzer groups Uint8[docCount] (positions in meta.analyzers)
// Derived data (norms, length factors, id ranks, lookup maps) is recomputed on load.

function encodeStrings(strings: Iterable<string>, count: number): [ArrayBuffer, ArrayBuffer] {
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  const offsets = new Uint32Array(count + 1);
  let i = 0;
  let bytes = 0;
  for (const s of strings) {
    const b = enc.encode(s);
    parts.push(b);
    bytes += b.length;
    offsets[++i] = bytes;
  }
  const blob = new Uint8Array(bytes);
  let at = 0;
  for (const b of parts) (blob.set(b, at), (at += b.length));
  return [offsets.buffer, blob.buffer];
}

function copyBuffer(a: Uint8Array | Uint16Array | Uint32Array): ArrayBuffer {
  return a.slice().buffer as ArrayBuffer;
}

/** Snapshots an index as a plain meta object plus ArrayBuffers (structured-clone friendly). */
export function serializeBm25(index: Bm25Index): SerializedBm25 {
  const termCount = index.terms.size;
  const postingCount = index.postingDocs.length;
  // Term ids are assigned in Map insertion order, so iterating the map lists terms by id.
  const [docOff, docBytes] = encodeStrings(index.docIds, index.docCount);
  const [termOff, termBytes] = encodeStrings(index.terms.keys(), termCount);
  const meta: Bm25Meta = {
    format: 'loupe-bm25',
    version: BM25_FORMAT_VERSION,
    analyzerVersion: ANALYZER_VERSION,
    params: { ...index.params },
    docCount: index.docCount,
    indexedDocCount: index.indexedDocCount,
    termCount,
    postingCount,
    sumDocLength: index.sumDocLength,
    tfBytes: index.postingTfs.BYTES_PER_ELEMENT as 2 | 4,
    analyzers: [...index.analyzers],
  };
  return {
    meta,
    buffers: [
      docOff,
      docBytes,
      termOff,
      termBytes,
      copyBuffer(index.postingOffsets),
      copyBuffer(index.postingDocs),
      copyBuffer(index.postingTfs),
      copyBuffer(index.docLengths),
      copyBuffer(index.docAnalyzer),
    ],
  };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function decodeStrings(offBuf: ArrayBuffer, blobBuf: ArrayBuffer, count: number, what: string): string[] {
  if (offBuf.byteLength !== 4 * (count + 1))
    throw new CorruptIndexError(`${what} offsets have the wrong size`);
  const off = new Uint32Array(offBuf);
  const blob = new Uint8Array(blobBuf);
  if (off[0] !== 0 || off[count] !== blob.length)
    throw new CorruptIndexError(`${what} offsets do not span the bytes`);
  const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const out: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    if (off[i + 1] < off[i]) throw new CorruptIndexError(`${what} offsets are not ascending`);
    try {
      out[i] = dec.decode(blob.subarray(off[i], off[i + 1]));
    } catch {
      throw new CorruptIndexError(`${what} ${i} is not valid UTF-8`);
    }
  }
  return out;
}

/**
 * Rebuilds an index from serializeBm25's output. Throws CorruptIndexError when the format or
 * analyzer version differs, or sizes, offsets, postings or length totals are inconsistent.
 */
export function deserializeBm25(data: SerializedBm25): Bm25Index {
  const meta = data?.meta as Partial<Bm25Meta> | undefined;
  const buffers = data?.buffers;
  if (!meta || typeof meta !== 'object' || meta.format !== 'loupe-bm25')
    throw new CorruptIndexError('not a BM25 index');
  if (meta.version !== BM25_FORMAT_VERSION)
    throw new CorruptIndexError(`format version ${meta.version} is not ${BM25_FORMAT_VERSION}`);
  if (meta.analyzerVersion !== ANALYZER_VERSION)
    throw new CorruptIndexError(
      `built by analyzer version ${meta.analyzerVersion}, current is ${ANALYZER_VERSION}`,
    );
  let params: Bm25Params;
  try {
    params = checkParams(meta.params);
  } catch (e) {
    throw new CorruptIndexError(`bad params (${(e as Error).message})`);
  }
  const { docCount, indexedDocCount, termCount, postingCount, sumDocLength, tfBytes } = meta;
  if (
    ![docCount, indexedDocCount, termCount, postingCount, sumDocLength].every(isCount) ||
    (tfBytes !== 2 && tfBytes !== 4)
  )
    throw new CorruptIndexError('bad counts in header');
  const D = docCount!;
  const T = termCount!;
  const P = postingCount!;
  const analyzers = meta.analyzers;
  if (
    !Array.isArray(analyzers) ||
    analyzers.length === 0 ||
    analyzers.length > 255 ||
    !analyzers.every((a) => ANALYZER_IDS.includes(a)) ||
    new Set(analyzers).size !== analyzers.length
  )
    throw new CorruptIndexError('bad analyzer list in header');
  if (!Array.isArray(buffers) || buffers.length !== 9) throw new CorruptIndexError('expected 9 buffers');
  for (const b of buffers)
    if (Object.prototype.toString.call(b) !== '[object ArrayBuffer]')
      throw new CorruptIndexError('a buffer is not an ArrayBuffer');
  const sizes = [
    [4, 4 * (T + 1), 'posting offsets'],
    [5, 4 * P, 'posting docs'],
    [6, tfBytes! * P, 'posting tfs'],
    [7, 4 * D, 'doc lengths'],
    [8, D, 'doc analyzer groups'],
  ] as const;
  for (const [i, size, what] of sizes)
    if (buffers[i].byteLength !== size)
      throw new CorruptIndexError(`${what} are ${buffers[i].byteLength} bytes, expected ${size}`);

  const docIds = decodeStrings(buffers[0], buffers[1], D, 'doc id');
  const termList = decodeStrings(buffers[2], buffers[3], T, 'term');
  const terms = new Map<string, number>();
  termList.forEach((t, i) => terms.set(t, i));
  if (terms.size !== T || terms.has('')) throw new CorruptIndexError('duplicate or empty terms');

  // Copies, so the index never aliases (or is detached with) the caller's buffers.
  const postingOffsets = new Uint32Array(buffers[4].slice(0));
  const postingDocs = new Uint32Array(buffers[5].slice(0));
  const postingTfs =
    tfBytes === 2 ? new Uint16Array(buffers[6].slice(0)) : new Uint32Array(buffers[6].slice(0));
  const docLengths = new Uint32Array(buffers[7].slice(0));
  const docAnalyzer = new Uint8Array(buffers[8].slice(0));
  for (let d = 0; d < D; d++)
    if (docAnalyzer[d] >= analyzers.length)
      throw new CorruptIndexError(
        `document ${d} names analyzer group ${docAnalyzer[d]} of ${analyzers.length}`,
      );

  if (postingOffsets[0] !== 0 || postingOffsets[T] !== P)
    throw new CorruptIndexError('posting offsets do not span the postings');
  // Every document's term frequencies must add up to its length.
  const tfSum = new Float64Array(D);
  for (let t = 0; t < T; t++) {
    const from = postingOffsets[t];
    const to = postingOffsets[t + 1];
    if (to <= from) throw new CorruptIndexError(`term ${t} has no postings or bad offsets`);
    let prev = -1;
    for (let i = from; i < to; i++) {
      const d = postingDocs[i];
      if (d >= D || d <= prev)
        throw new CorruptIndexError(`term ${t} has out-of-order or out-of-range postings`);
      if (postingTfs[i] === 0) throw new CorruptIndexError(`term ${t} has a zero term frequency`);
      tfSum[d] += postingTfs[i];
      prev = d;
    }
  }
  let sum = 0;
  let indexed = 0;
  for (let d = 0; d < D; d++) {
    if (tfSum[d] !== docLengths[d])
      throw new CorruptIndexError(`document ${d} length disagrees with its postings`);
    sum += docLengths[d];
    if (docLengths[d] > 0) indexed++;
  }
  if (sum !== sumDocLength || indexed !== indexedDocCount)
    throw new CorruptIndexError('length totals disagree with the header');
  try {
    return assemble(
      params,
      docIds,
      terms,
      postingOffsets,
      postingDocs,
      postingTfs,
      docLengths,
      [...analyzers],
      docAnalyzer,
    );
  } catch (e) {
    throw new CorruptIndexError((e as Error).message);
  }
}
