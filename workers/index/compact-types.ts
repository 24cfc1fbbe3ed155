// Shapes of the index worker's compact vector store calls (workers/index/compact.ts).
import type { RowStoreKind } from '../chunked-exact';
import type { CompactStats } from '../compact-store';
import type { KnnResult } from '../../src/lib/core/retrieval/exact';
import type { Space } from './types';

export type { CompactStats, Space };

/** Options of a compact store (int8 codes in memory, float32 rows in OPFS). */
export interface CompactOptions {
  dim: number;
  space: Space;
  /** What the rows are (the dense corpus key): lets a later query reuse the open store. */
  key?: string;
  /** Where the float32 rows live: 'auto' (default) takes OPFS when available, else memory. */
  store?: 'auto' | RowStoreKind;
  /** Document ids, for trec_eval's tie order (id descending); default: index order. */
  docIds?: string[];
}

/** What the compact store holds. */
export type CompactInfo =
  | { open: false }
  | {
      open: true;
      key?: string;
      n: number;
      dim: number;
      space: Space;
      /** Codes written (finish() done): searchable. */
      ready: boolean;
      store: RowStoreKind;
      /** Why the rows are not in OPFS, when 'auto' fell back to memory. */
      storeReason?: string;
      kernel: 'wasm-simd' | 'js';
      /** Bytes of the int8 codes (n × dim rounded up to 16). */
      codeBytes: number;
      /** Bytes of the wasm memory holding the codes (0 until finished). */
      memoryBytes: number;
      /** float32 row bytes in the worker's memory (0 with OPFS). */
      storeMemoryBytes: number;
      /** Bytes read back from the row store so far (encoding and rescoring). */
      bytesRead: number;
    };

/** Top-k from the compact store, with what the search read and its time inside the worker. */
export interface CompactResult {
  result: KnnResult;
  stats: CompactStats;
  ms: number;
}
