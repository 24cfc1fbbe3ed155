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

/**
 * Frees the ArrayBuffers under `index`'s typed arrays now, rather than when this idle worker's next
 * major GC finds them (at 1M documents the 160 MB stayed about 8 s after the index was dropped,
 * bench:scale --trace): they are transferred into a message that is never delivered (its port is
 * closed), which detaches them. Only for an index nothing else uses any more.
 */
export function freeBuffers(index: object): number {
  const buffers = new Set<ArrayBuffer>();
  const visit = (v: unknown) => {
    if (ArrayBuffer.isView(v) && v.buffer instanceof ArrayBuffer) buffers.add(v.buffer);
    else if (v && typeof v === 'object' && !Array.isArray(v)) Object.values(v).forEach(visit);
  };
  Object.values(index).forEach(visit);
  const bytes = [...buffers].reduce((s, b) => s + b.byteLength, 0);
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(null, [...buffers]);
  } catch {
    // A buffer that cannot be transferred: left to the GC.
    return 0;
  } finally {
    port1.close();
    port2.close();
  }
  return bytes;
}

/** Releases and reloads since the worker started, and the index bytes freed at once (freeBuffers). */
export const reloadCounters = { releases: 0, reloads: 0, freedBytes: 0 };
(self as unknown as { loupeBm25Counters: typeof reloadCounters }).loupeBm25Counters = reloadCounters;
