// The retrieval worker's BM25 index released while a large dense run needs the memory, and read back
// from the IndexedDB cache (platform/bm25-cache.ts) by the next BM25 call: what a reload reports to
// the page, and counters that tests read through the worker's global (loupeBm25Counters).

/** A reload of the released index, as said in the details of the BM25 run that needed it. */
export interface Bm25Reload {
  ms: number;
  /** The cache no longer held it (deleted meanwhile): it was built again from the stored documents. */
  rebuilt: boolean;
  docs: number;
}

/** Releases and reloads since the worker started. */
export const reloadCounters = { releases: 0, reloads: 0 };
(self as unknown as { loupeBm25Counters: typeof reloadCounters }).loupeBm25Counters = reloadCounters;
