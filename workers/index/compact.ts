// The index worker's compact vector store (workers/compact-store.ts): int8 codes in memory, float32
// rows in OPFS, exact rescoring of the top R; kept apart from the HNSW index and the chunked corpus.
import * as Comlink from 'comlink';
import { CompactStore } from '../compact-store';
import { indexTieBreak, normalizeRows, trecTieBreak } from '../../src/lib/core/retrieval/exact';
import { throttle } from '../../src/lib/core/throttle';
import type { Progress } from '../../src/lib/core/types';
import { asMatrix } from './session';
import type { CompactInfo, CompactOptions, CompactResult, CompactScan, Space } from './compact-types';

/** What the store read back, for tests (read in the worker, as the encoder's counters are). */
const counters = { searches: 0, queries: 0, rowsRead: 0, reads: 0, store: '' };
(self as unknown as { loupeCompactCounters: typeof counters }).loupeCompactCounters = counters;

let open: { s: CompactStore; space: Space; key?: string; reason?: string; docIds?: string[] } | null = null;

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
  };
}

/** Starts an empty compact store (closing any previous one); rows then arrive with compactAdd. */
export async function compactOpen(opts: CompactOptions): Promise<CompactInfo> {
  closeStore();
  const tieBreak = opts.docIds ? trecTieBreak(opts.docIds) : indexTieBreak;
  const { store, reason } = await CompactStore.open(opts.dim, {
    store: opts.store,
    tieBreak,
    scan: opts.scan,
  });
  open = { s: store, space: opts.space, key: opts.key, reason, docIds: opts.docIds };
  return compactInfo();
}

/** Appends rows (n × dim, transferred; normalised here for cosine); returns the row count. */
export function compactAdd(vectors: Float32Array): number {
  if (!open) throw new Error('no compact store: call compactOpen() first');
  const m = asMatrix(vectors, open.s.dim, 'vectors');
  if (open.docIds && open.s.n + m.n > open.docIds.length)
    throw new RangeError(`${open.s.n + m.n} rows for ${open.docIds.length} document ids`);
  if (open.space === 'cosine') normalizeRows(m);
  try {
    return open.s.add(m.data);
  } catch (e) {
    // Nothing half-written: a store that could not take its rows is closed and its file removed.
    closeStore();
    throw e;
  }
}

/** Encodes the rows into int8 codes (reading them back from OPFS), with 'index' progress. */
export function compactFinish(onProgress?: (p: Progress) => void): CompactInfo {
  if (!open) throw new Error('no compact store: call compactOpen() first');
  if (open.docIds && open.s.n !== open.docIds.length)
    throw new RangeError(`${open.s.n} rows for ${open.docIds.length} document ids`);
  const report = throttle(onProgress);
  open.s.finish((done, total) => report({ kind: 'index', done, total }));
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
