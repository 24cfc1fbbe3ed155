// What a dense run through a packed IVF-int8 index on the shard's host cost (bytes per query, lists
// probed), summarised for the run's configuration and worded for the Search line and the Benchmark's
// run details. Pure.
import { median } from '../eval/stats';
import { queryLatency, type QueryLatency } from '../eval/approximation';

/** One query's cost, as workers/index/ivf-remote.ts counts it (the fields used here). */
export interface IvfQueryCost {
  /** Response body bytes received for the query. */
  bytes: number;
  requests: number;
  listsFetched: number;
  listsCached: number;
  listsEmpty: number;
  rowsFetched: number;
  rowsCached: number;
  /** The query's time in the worker, ms (reads included). */
  ms?: number;
  /** Where the int8 codes were scored (absent: the CPU). */
  scoring?: { device: 'webgpu' | 'cpu'; reason?: string };
}

/** A run's (or one Search query's) use of the packed index. */
export interface IvfRunInfo {
  kind: 'ivf-int8';
  /** Rows in the index, lists, and lists probed per query. */
  n: number;
  nlist: number;
  nprobe: number;
  /** Candidates per query rescored exactly from their float16 rows. */
  rerank: number;
  queries: number;
  /** Bytes received (response bodies) over all queries, the median per query and the largest. */
  totalBytes: number;
  medianBytes: number;
  maxBytes: number;
  requests: number;
  /** Lists probed over all queries, and how many of them were read from the network. */
  listsProbed: number;
  listsFetched: number;
  rowsFetched: number;
  /** Queries whose int8 codes were scored on WebGPU (the rest on the CPU), and why not, when not. */
  webgpuQueries: number;
  cpuReason?: string;
  /** Per-query times in the worker (network reads included), when every query has one. */
  latency?: QueryLatency;
  /** Where fetched lists are kept: the browser's OPFS, or memory only (with why). */
  cache: 'opfs' | 'memory';
  cacheReason?: string;
}

/** Sums the per-query costs of one run. */
export function ivfRunInfo(
  perQuery: readonly IvfQueryCost[],
  index: {
    n: number;
    nlist: number;
    nprobe: number;
    rerank: number;
    cache: 'opfs' | 'memory';
    cacheReason?: string;
  },
): IvfRunInfo {
  const bytes = perQuery.map((q) => q.bytes);
  const cpuReason = perQuery.find((q) => q.scoring?.device !== 'webgpu' && q.scoring?.reason)?.scoring
    ?.reason;
  const sum = (f: (q: IvfQueryCost) => number) => perQuery.reduce((a, q) => a + f(q), 0);
  const latency = perQuery.every((q) => typeof q.ms === 'number')
    ? queryLatency(perQuery.map((q) => q.ms!))
    : null;
  return {
    kind: 'ivf-int8',
    n: index.n,
    nlist: index.nlist,
    nprobe: index.nprobe,
    rerank: index.rerank,
    queries: perQuery.length,
    totalBytes: sum((q) => q.bytes),
    medianBytes: bytes.length ? median(bytes) : 0,
    maxBytes: bytes.length ? Math.max(...bytes) : 0,
    requests: sum((q) => q.requests),
    listsProbed: sum((q) => q.listsFetched + q.listsCached + q.listsEmpty),
    listsFetched: sum((q) => q.listsFetched),
    rowsFetched: sum((q) => q.rowsFetched),
    webgpuQueries: perQuery.filter((q) => q.scoring?.device === 'webgpu').length,
    ...(cpuReason ? { cpuReason } : {}),
    ...(latency ? { latency } : {}),
    cache: index.cache,
    ...(index.cacheReason ? { cacheReason: index.cacheReason } : {}),
  };
}

/** Binary units: "512 B", "12.3 KiB", "1.25 MiB". */
export function ivfBytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 2 ** 20).toFixed(2)} MiB`;
}

/** The Search line of one query: "IVF: 0.31 MiB fetched, 12 of 16 lists from the network". */
export function describeIvfQuery(i: IvfRunInfo): string {
  const cached = i.listsProbed - i.listsFetched;
  return (
    `IVF: ${ivfBytes(i.totalBytes)} fetched, ${i.listsFetched} of ${i.listsProbed} lists from the network` +
    (cached ? ` (${cached} cached)` : '') +
    `, ${i.rowsFetched} rows fetched for rescoring`
  );
}

/** The Benchmark's lines for a run: what was searched, and what it cost per query. */
export function describeIvfRun(i: IvfRunInfo): string[] {
  return [
    `Packed IVF index: ${i.n.toLocaleString('en')} vectors in ${i.nlist} lists, nprobe ${i.nprobe}; ` +
      `int8 codes + exact rescoring of the top ${i.rerank} (float16 rows).`,
    i.webgpuQueries === i.queries && i.queries
      ? 'int8 scores on WebGPU (the WGSL kernel).'
      : `int8 scores on the CPU${i.webgpuQueries ? ` for ${i.queries - i.webgpuQueries} of ${i.queries} queries` : ''}` +
        (i.cpuReason ? ` (${i.cpuReason}).` : '.'),
    `Transferred: ${ivfBytes(i.totalBytes)} for ${i.queries} quer${i.queries === 1 ? 'y' : 'ies'} ` +
      `(median ${ivfBytes(i.medianBytes)}, largest ${ivfBytes(i.maxBytes)} per query; ${i.requests} Range requests).`,
    `Lists probed: ${i.listsProbed} (${i.listsFetched} from the network, ${i.listsProbed - i.listsFetched} from the ` +
      (i.cache === 'opfs'
        ? 'browser cache (OPFS)'
        : `memory cache${i.cacheReason ? `: ${i.cacheReason}` : ''}`) +
      ').',
  ];
}
