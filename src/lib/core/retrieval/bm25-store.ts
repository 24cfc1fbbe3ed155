// The BM25 index as stored in IndexedDB: a structured-clone friendly snapshot (a plain header plus
// ArrayBuffers) and its checked rebuild, which refuses a corrupt, truncated or outdated snapshot
// rather than scoring with it.
import { ANALYZER_IDS, analyzerIdForLanguage, type AnalyzerId } from './analyzers';
import { ANALYZER_VERSION } from './analyzer';
import {
  assemble,
  checkParams,
  comparePacked,
  type Bm25Index,
  type Bm25Params,
  type PackedStrings,
} from './bm25-index';

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
  /** (term, document) pairs. */
  postingCount: number;
  /** Bytes of the encoded postings (buffer 6). */
  postingBytes: number;
  sumDocLength: number;
  /** Analyzer of each document-language group (buffer 8 holds each document's group). */
  analyzers: AnalyzerId[];
  /** The language tags ('' for none) of each group's documents: the group is stale when one maps elsewhere now. */
  groupLanguages: string[][];
}

/** Thrown by deserializeBm25 when a snapshot is corrupt, truncated or from another format version. */
export class CorruptIndexError extends Error {
  constructor(message: string) {
    super(`BM25 index cache is unusable: ${message}`);
    this.name = 'CorruptIndexError';
  }
}

/**
 * Current serialization format version (2: per-document analyzer groups; 3: compact arrays, sorted
 * packed terms, variable-length postings, group languages).
 */
export const BM25_FORMAT_VERSION = 3;

// ---------------------------------------------------------------------------------------------
// Serialization. Buffer layout (bm25-index.ts describes the arrays):
//   0 doc id UTF-8 byte offsets  Uint32[docCount + 1]     1 doc id UTF-8 bytes
//   2 term UTF-8 byte offsets    Uint32[termCount + 1]    3 term UTF-8 bytes (byte order)
//   4 term document frequencies  Uint32[termCount]
//   5 posting byte offsets       Uint32[termCount + 1]    6 postings Uint8[postingBytes]
//   7 doc lengths Uint32[docCount]                        8 doc analyzer groups Uint8[docCount]
// Derived data (norms, length factors, id order) is recomputed on load.

/** The array's own buffer when the array spans it exactly, else a copy of just its bytes. */
function bufferOf(a: Uint8Array | Uint32Array): ArrayBuffer {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength
    ? (a.buffer as ArrayBuffer)
    : (a.slice().buffer as ArrayBuffer);
}

/**
 * Snapshots an index as a plain meta object plus ArrayBuffers (structured-clone friendly). The
 * buffers are the index's own, not copies (an index of a million documents is hundreds of MB):
 * store or structured-clone them, never transfer or modify them.
 */
export function serializeBm25(index: Bm25Index): SerializedBm25 {
  const meta: Bm25Meta = {
    format: 'loupe-bm25',
    version: BM25_FORMAT_VERSION,
    analyzerVersion: ANALYZER_VERSION,
    params: { ...index.params },
    docCount: index.docCount,
    indexedDocCount: index.indexedDocCount,
    termCount: index.termCount,
    postingCount: index.postingCount,
    postingBytes: index.postings.length,
    sumDocLength: index.sumDocLength,
    analyzers: [...index.analyzers],
    groupLanguages: index.groupLanguages.map((g) => [...g]),
  };
  return {
    meta,
    buffers: [
      bufferOf(index.docIds.offsets),
      bufferOf(index.docIds.bytes),
      bufferOf(index.terms.offsets),
      bufferOf(index.terms.bytes),
      bufferOf(index.termDf),
      bufferOf(index.postingOffsets),
      bufferOf(index.postings),
      bufferOf(index.docLengths),
      bufferOf(index.docAnalyzer),
    ],
  };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Checks a packed string table: offsets span the bytes, every string is valid UTF-8. */
function checkStrings(offBuf: ArrayBuffer, blobBuf: ArrayBuffer, count: number, what: string): PackedStrings {
  if (offBuf.byteLength !== 4 * (count + 1))
    throw new CorruptIndexError(`${what} offsets have the wrong size`);
  const offsets = new Uint32Array(offBuf);
  const bytes = new Uint8Array(blobBuf);
  if (offsets[0] !== 0 || offsets[count] !== bytes.length)
    throw new CorruptIndexError(`${what} offsets do not span the bytes`);
  const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  for (let i = 0; i < count; i++) {
    if (offsets[i + 1] < offsets[i]) throw new CorruptIndexError(`${what} offsets are not ascending`);
    try {
      dec.decode(bytes.subarray(offsets[i], offsets[i + 1]));
    } catch {
      throw new CorruptIndexError(`${what} ${i} is not valid UTF-8`);
    }
  }
  return { bytes, offsets };
}

/** Reads one variable-length integer at p, never past `end`; returns [value, next position] or null. */
function readVarint(bytes: Uint8Array, p: number, end: number): [number, number] | null {
  let v = 0;
  for (let scale = 1; p < end && scale < 2 ** 49; scale *= 128) {
    const b = bytes[p++];
    v += (b & 127) * scale;
    if (b < 128) return [v, p];
  }
  return null;
}

/**
 * Rebuilds an index from serializeBm25's output, taking ownership of its buffers (they are read,
 * not copied). Throws CorruptIndexError when the format or analyzer version differs, a language's
 * analyzer changed, or sizes, offsets, term order, postings or length totals are inconsistent.
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
  const { docCount, indexedDocCount, termCount, postingCount, postingBytes, sumDocLength } = meta;
  if (![docCount, indexedDocCount, termCount, postingCount, postingBytes, sumDocLength].every(isCount))
    throw new CorruptIndexError('bad counts in header');
  const D = docCount!;
  const T = termCount!;
  const analyzers = meta.analyzers;
  if (
    !Array.isArray(analyzers) ||
    analyzers.length === 0 ||
    analyzers.length > 255 ||
    !analyzers.every((a) => ANALYZER_IDS.includes(a)) ||
    new Set(analyzers).size !== analyzers.length
  )
    throw new CorruptIndexError('bad analyzer list in header');
  const groupLanguages = meta.groupLanguages;
  if (
    !Array.isArray(groupLanguages) ||
    groupLanguages.length !== analyzers.length ||
    !groupLanguages.every((g) => Array.isArray(g) && g.every((t) => typeof t === 'string'))
  )
    throw new CorruptIndexError('bad group languages in header');
  // The language → analyzer mapping is code, not data: an index built under another one is stale.
  groupLanguages.forEach((tags, g) => {
    for (const tag of tags)
      if (analyzerIdForLanguage(tag) !== analyzers[g])
        throw new CorruptIndexError(
          `documents in language ${JSON.stringify(tag)} were analysed by ${analyzers[g]}, now ${analyzerIdForLanguage(tag)} analyses them`,
        );
  });
  if (!Array.isArray(buffers) || buffers.length !== 9) throw new CorruptIndexError('expected 9 buffers');
  for (const b of buffers)
    if (Object.prototype.toString.call(b) !== '[object ArrayBuffer]')
      throw new CorruptIndexError('a buffer is not an ArrayBuffer');
  const sizes = [
    [4, 4 * T, 'term document frequencies'],
    [5, 4 * (T + 1), 'posting offsets'],
    [6, postingBytes!, 'postings'],
    [7, 4 * D, 'doc lengths'],
    [8, D, 'doc analyzer groups'],
  ] as const;
  for (const [i, size, what] of sizes)
    if (buffers[i].byteLength !== size)
      throw new CorruptIndexError(`${what} are ${buffers[i].byteLength} bytes, expected ${size}`);

  const docIds = checkStrings(buffers[0], buffers[1], D, 'doc id');
  const terms = checkStrings(buffers[2], buffers[3], T, 'term');
  for (let t = 0; t < T; t++) {
    if (terms.offsets[t + 1] === terms.offsets[t]) throw new CorruptIndexError(`term ${t} is empty`);
    if (t > 0 && comparePacked(terms, t - 1, t) >= 0)
      throw new CorruptIndexError(`term ${t} is out of order or a duplicate`);
  }
  const termDf = new Uint32Array(buffers[4]);
  const postingOffsets = new Uint32Array(buffers[5]);
  const postings = new Uint8Array(buffers[6]);
  const docLengths = new Uint32Array(buffers[7]);
  const docAnalyzer = new Uint8Array(buffers[8]);
  for (let d = 0; d < D; d++)
    if (docAnalyzer[d] >= analyzers.length)
      throw new CorruptIndexError(
        `document ${d} names analyzer group ${docAnalyzer[d]} of ${analyzers.length}`,
      );

  if (postingOffsets[0] !== 0 || postingOffsets[T] !== postingBytes)
    throw new CorruptIndexError('posting offsets do not span the postings');
  // Every posting list must decode to exactly its df ascending in-range documents, and every
  // document's term frequencies must add up to its length.
  const tfSum = new Float64Array(D);
  let pairs = 0;
  for (let t = 0; t < T; t++) {
    let p = postingOffsets[t];
    const end = postingOffsets[t + 1];
    if (end <= p || termDf[t] === 0) throw new CorruptIndexError(`term ${t} has no postings or bad offsets`);
    let d = -1;
    let count = 0;
    while (p < end) {
      const v = readVarint(postings, p, end);
      if (!v || v[0] < 2) throw new CorruptIndexError(`term ${t} has damaged postings`);
      p = v[1];
      const one = v[0] % 2;
      d += (v[0] - one) / 2;
      let tf = 1;
      if (one === 0) {
        const f = readVarint(postings, p, end);
        if (!f || f[0] < 2) throw new CorruptIndexError(`term ${t} has a damaged term frequency`);
        [tf, p] = f;
      }
      if (d >= D) throw new CorruptIndexError(`term ${t} has out-of-range postings`);
      tfSum[d] += tf;
      count++;
    }
    if (count !== termDf[t])
      throw new CorruptIndexError(`term ${t} has ${count} postings, its document frequency is ${termDf[t]}`);
    pairs += count;
  }
  if (pairs !== postingCount) throw new CorruptIndexError('posting count disagrees with the header');
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
    return assemble(params, {
      docIds,
      terms,
      termDf,
      postingOffsets,
      postings,
      docLengths,
      analyzers: [...analyzers],
      groupLanguages: groupLanguages.map((g) => [...g]),
      docAnalyzer,
    });
  } catch (e) {
    throw new CorruptIndexError((e as Error).message);
  }
}
