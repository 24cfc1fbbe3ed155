// The index worker's compact vector store (workers/index/compact-store.ts): int8 codes in memory, float32
// rows in OPFS, exact rescoring of the top R; kept apart from the HNSW index and the chunked corpus.
import * as Comlink from 'comlink';
import { CompactStore } from './compact-store';
import { indexTieBreak, normalizeRows } from '../../src/lib/core/retrieval/exact';
import {
  packStrings,
  packedAt,
  packedCount,
  packedTieBreak,
  type PackedStrings,
} from '../../src/lib/core/retrieval/packed-ids';
import { throttle } from '../../src/lib/core/throttle';
import type { Progress } from '../../src/lib/core/types';
import { asMatrix } from './session';
import type { CompactInfo, CompactOptions, CompactResult, CompactScan, Space } from './compact-types';

/** What the store read back, for tests (read in the worker, as the encoder's counters are). */
const counters = { searches: 0, queries: 0, rowsRead: 0, reads: 0, store: '' };
(self as unknown as { loupeCompactCounters: typeof counters }).loupeCompactCounters = counters;

let open: {
  s: CompactStore;
  space: Space;
  key?: string;
  reason?: string;
  /** Document ids, packed (a million strings were 30–70 MiB of this worker's heap). */
  ids?: PackedStrings;
  /** Rows written by position (compactAdd's `at`): which, and how many. */
  seen?: { rows: Uint8Array; count: number };
} | null = null;

function closeStore(): void {
  open?.s.free();
  open = null;
}

/** What the compact store holds. */
export function compactInfo(): CompactInfo {
  if (!open) return { open: false };
  const { s } = open;
  return {
    open: true,
    key: open.key,
    n: s.n,
    dim: s.dim,
    space: open.space,
    ready: s.ready,
    store: s.storeKind,
    storeReason: open.reason,
    scan: s.layouts,
    kernel: s.kernel(),
    codeBytes: s.codeBytes(),
    memoryBytes: s.memoryBytes(),
    storeMemoryBytes: s.storeMemoryBytes(),
    bytesRead: s.bytesRead,
    lowPlane: s.lowPlane,
    lowBytesRead: s.lowBytesRead,
  };
}

/** Starts an empty compact store (closing any previous one); rows then arrive with compactAdd. */
export async function compactOpen(opts: CompactOptions): Promise<CompactInfo> {
  closeStore();
  const ids = opts.ids ?? (opts.docIds ? packStrings(opts.docIds) : undefined);
  const tieBreak = ids ? packedTieBreak(ids) : indexTieBreak;
  const { store, reason } = await CompactStore.open(opts.dim, {
    store: opts.store,
    tieBreak,
    scan: opts.scan,
  });
  open = { s: store, space: opts.space, key: opts.key, reason, ids };
  return compactInfo();
}

/**
 * Appends rows (n × dim, transferred; normalised here for cosine); returns the row count. With `at`
 * (a streamed corpus), row i is document at[i]'s: every document once, in any order (compactFinish
 * checks that none is left out).
 */
export function compactAdd(vectors: Float32Array, at?: Uint32Array): number {
  if (!open) throw new Error('no compact store: call compactOpen() first');
  const m = asMatrix(vectors, open.s.dim, 'vectors');
  if (at) return addAt(m, at);
  if (open.ids && open.s.n + m.n > packedCount(open.ids))
    throw new RangeError(`${open.s.n + m.n} rows for ${packedCount(open.ids)} document ids`);
  if (open.space === 'cosine') normalizeRows(m);
  try {
    return open.s.add(m.data);
  } catch (e) {
    // Nothing half-written: a store that could not take its rows is closed and its file removed.
    closeStore();
    throw e;
  }
}

/**
 * compactAdd's rows by position (a streamed corpus), whose buffers then go back to the sender
 * (transferred) for its next piece: without them each piece was garbage here once written, and a
 * streamed 1M corpus left about 190 MB of them for the GC to find (BENCHMARKS.md, the scale ladder).
 */
export function compactAddAt(vectors: Float32Array, at: Uint32Array) {
  const count = compactAdd(vectors, at);
  return Comlink.transfer({ count, vectors, at }, [vectors.buffer, at.buffer] as ArrayBuffer[]);
}

/** compactAdd's rows by position: written in runs of consecutive documents; any error closes the store. */
function addAt(m: ReturnType<typeof asMatrix>, at: Uint32Array): number {
  const o = open!;
  const dim = o.s.dim;
  try {
    if (!o.ids) throw new Error('rows by position need the store to be opened with its document ids');
    const ids = o.ids;
    const n = packedCount(ids);
    if (at.length !== m.n) throw new RangeError(`${at.length} row positions for ${m.n} rows`);
    const seen = (o.seen ??= { rows: new Uint8Array(n), count: 0 });
    for (const r of at) {
      if (r >= n) throw new RangeError(`row ${r} is past the store's ${n} documents`);
      if (seen.rows[r]) throw new RangeError(`row ${r} (document ${packedAt(ids, r)}) arrived twice`);
      seen.rows[r] = 1;
    }
    if (o.space === 'cosine') normalizeRows(m);
    for (let i = 0; i < m.n;) {
      let j = i + 1;
      while (j < m.n && at[j] === at[j - 1] + 1) j++;
      o.s.add(m.data.subarray(i * dim, j * dim), at[i]);
      i = j;
    }
    seen.count += m.n;
    return seen.count;
  } catch (e) {
    // Nothing half-written: a store that could not take its rows is closed and its file removed.
    closeStore();
    throw e;
  }
}

/** Encodes the rows into int8 codes (reading them back from OPFS), with 'index' progress. */
export function compactFinish(onProgress?: (p: Progress) => void): CompactInfo {
  if (!open) throw new Error('no compact store: call compactOpen() first');
  if (open.ids && open.s.n !== packedCount(open.ids))
    throw new RangeError(`${open.s.n} rows for ${packedCount(open.ids)} document ids`);
  if (open.seen && open.seen.count !== open.s.n) {
    const first = open.seen.rows.indexOf(0);
    throw new RangeError(
      `${open.seen.count} of ${open.s.n} rows arrived: document ${packedAt(open.ids!, first)} (row ${first}) and others have none`,
    );
  }
  const report = throttle(onProgress);
  try {
    open.s.finish((done, total) => report({ kind: 'index', done, total }));
  } catch (e) {
    // Nothing half-written: a store whose codes could not be written is closed and its files removed.
    closeStore();
    throw e;
  }
  report.flush();
  return compactInfo();
}

/** Top-k per query row: int8 scan of every code, exact rescoring of the best `rerank` from the row store. */
export function compactSearch(
  queries: Float32Array,
  k: number,
  opts: { exclude?: number[][]; rerank?: number; scan?: CompactScan } = {},
): CompactResult {
  if (!open) throw new Error('no compact store: call compactOpen() first');
  const q = asMatrix(open.space === 'cosine' ? queries.slice() : queries, open.s.dim, 'queries');
  if (open.space === 'cosine') normalizeRows(q);
  const t0 = performance.now();
  const { result, stats } = open.s.search(q, k, opts);
  counters.searches++;
  counters.queries += q.n;
  counters.rowsRead += stats.rowsRead;
  counters.reads += stats.reads;
  counters.store = stats.store;
  const r: CompactResult = { result, stats, ms: performance.now() - t0 };
  return Comlink.transfer(r, [result.indices.buffer, result.scores.buffer]);
}

/** Frees the compact store (codes, OPFS file). */
export function compactClose(): void {
  closeStore();
}
