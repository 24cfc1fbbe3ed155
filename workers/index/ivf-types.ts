// Shapes of the remote IVF-int8 search (workers/index/ivf-remote.ts).

/** Where a packed index lives and how to search it. */
export interface IvfRemoteRequest {
  /** Absolute URL of `ivf-<part>.bin`. */
  url: string;
  /** Absolute URL of the set's float16 `<part>.npy` (the rows the index was packed from). */
  vectorsUrl: string;
  k: number;
  /** Lists probed per query (default defaultNprobe(nlist): 1.2 % of the lists, at least 16). */
  nprobe?: number;
  /** Candidates rescored exactly per query (default 4·k). */
  rerank?: number;
  /** 'auto': OPFS, else memory (the result says why). */
  cache?: 'auto' | 'opfs' | 'memory';
  /**
   * Where the probed lists' int8 codes are scored: 'auto' (default) on a hardware WebGPU adapter,
   * else the CPU; 'webgpu' on any adapter, software ones included (tests); 'cpu' never on the GPU.
   * The candidates, so the results, are the same on either.
   */
  scoring?: 'auto' | 'webgpu' | 'cpu';
}

/** Where a query's int8 scores were computed, and why not on the GPU when they were not. */
export interface IvfScoring {
  device: 'webgpu' | 'cpu';
  reason?: string;
  /** WebGPU scored, but the cut was too close to call: the CPU scored again. */
  recomputed?: boolean;
}

/** What one query cost. */
export interface IvfQueryStats {
  /** Response body bytes received for this query (HTTP headers not counted). */
  bytes: number;
  /** Range requests sent for this query. */
  requests: number;
  /** The index header was read from the network by this query. */
  headerFetched: boolean;
  /** The host could not be reached: the cached header was used. */
  offline: boolean;
  listsFetched: number;
  listsCached: number;
  /** Probed lists that hold no rows (nothing to read). */
  listsEmpty: number;
  rowsFetched: number;
  rowsCached: number;
  /** Where the int8 codes were scored. */
  scoring?: IvfScoring;
  /** Wall time in the worker. */
  ms: number;
}

export interface IvfRemoteResult {
  /** Per query: the best k row numbers of the .npy (row r is the sidecar's doc_ids[r]), best first. */
  rows: number[][];
  /** Their exact cosine scores (from the float16 rows). */
  scores: number[][];
  perQuery: IvfQueryStats[];
  cache: 'opfs' | 'memory';
  /** Why not OPFS, when 'auto' fell back to memory. */
  cacheReason?: string;
  n: number;
  dim: number;
  nlist: number;
  nprobe: number;
  rerank: number;
}
