// Shapes of the remote IVF-int8 search (workers/index/ivf-remote.ts).

/** Where a packed index lives and how to search it. */
export interface IvfRemoteRequest {
  /** Absolute URL of `ivf-<part>.bin`. */
  url: string;
  /** Absolute URL of the set's float16 `<part>.npy` (the rows the index was packed from). */
  vectorsUrl: string;
  k: number;
  /** Lists probed per query (default IVF_DEFAULTS.nprobe). */
  nprobe?: number;
  /** Candidates rescored exactly per query (default 4·k). */
  rerank?: number;
  /** 'auto': OPFS, else memory (the result says why). */
  cache?: 'auto' | 'opfs' | 'memory';
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
