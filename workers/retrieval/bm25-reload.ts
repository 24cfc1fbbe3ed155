// The retrieval worker's BM25 index released while a large dense run needs the memory, and read back
// from the IndexedDB cache (platform/storage/bm25-cache.ts) by the next BM25 call: what a reload reports to
// the page, and counters that tests read through the worker's global (loupeBm25Counters).
import { freeBuffers } from '../../src/lib/platform/storage/free-buffers';

/** A reload of the released index, as said in the details of the BM25 run that needed it. */
export interface Bm25Reload {
  ms: number;
  /** The cache no longer held it (deleted meanwhile): it was built again from the stored documents. */
  rebuilt: boolean;
  docs: number;
}

/**
 * Frees the ArrayBuffers under `index`'s typed arrays now, rather than when this idle worker's next
 * major GC finds them (platform/storage/free-buffers.ts). Only for an index nothing else uses any more.
 */
export function freeIndexBuffers(index: object): number {
  const buffers = new Set<ArrayBufferLike>();
  const visit = (v: unknown) => {
    if (ArrayBuffer.isView(v)) buffers.add(v.buffer);
    else if (v && typeof v === 'object' && !Array.isArray(v)) Object.values(v).forEach(visit);
  };
  Object.values(index).forEach(visit);
  return freeBuffers(buffers);
}

/** Releases and reloads since the worker started, and the index bytes freed at once (freeBuffers). */
export const reloadCounters = { releases: 0, reloads: 0, freedBytes: 0 };
(self as unknown as { loupeBm25Counters: typeof reloadCounters }).loupeBm25Counters = reloadCounters;
