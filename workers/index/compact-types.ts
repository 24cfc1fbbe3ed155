// Shapes of the index worker's compact vector store calls (workers/index/compact.ts).
import type { RowStoreKind } from './chunked-exact';
import type { CompactScan, CompactStats } from './compact-store';
import type { NibbleKernel } from '../kernels/nibble-kernel';
import type { KnnResult } from '../../src/lib/core/retrieval/exact';
import type { PackedStrings } from '../../src/lib/core/retrieval/packed-ids';
import type { Space } from './types';

export type { CompactScan, CompactStats, Space };

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
  /** The same as one packed UTF-8 table (a streamed corpus's; instead of docIds). */
  ids?: PackedStrings;
  /** How candidates are found (compact-store.ts): 'two-pass' (default); 'int8' or 'both' for benchmarks. */
  scan?: CompactScan | 'both';
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
      /** The default scan ('both': a benchmark's store holding both layouts) and its kernel. */
      scan: CompactScan | 'both';
      kernel: NibbleKernel | 'js';
      /** Bytes of the codes (n × dim rounded up to 16 per layout held). */
      codeBytes: number;
      /** Bytes of the wasm memory holding the codes (0 until finished). */
      memoryBytes: number;
      /** float32 row bytes in the worker's memory (0 with OPFS). */
      storeMemoryBytes: number;
      /** Bytes read back from the row store so far (encoding and rescoring). */
      bytesRead: number;
      /** Where the two-pass scan's low plane is: in the codes' memory, or its own row store (OPFS). */
      lowPlane: 'codes' | RowStoreKind | null;
      /** Low-plane bytes read back from its row store by searches. */
      lowBytesRead: number;
    };

/** Top-k from the compact store, with what the search read and its time inside the worker. */
export interface CompactResult {
  result: KnnResult;
  stats: CompactStats;
  ms: number;
}
