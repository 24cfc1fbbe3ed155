// Per-query search times of an HNSW run (issue 37 item 2: query p50/p99 in the approximation table).
// The run's own search is one batch, which says nothing of one query's latency; so after it, up to
// LATENCY_SAMPLE of its queries (evenly spaced) are searched again one at a time at the run's ef, and
// the index worker's own time for each (no messaging) is kept, summarised with the run.
import { queryLatency, type QueryLatency } from '../core/eval/approximation';
import { searchIndex } from '../clients/index-client';

/** Queries timed one at a time per HNSW run. */
export const LATENCY_SAMPLE = 100;

/** p50/p99/mean of single-query HNSW searches at `ef` over a sample of the `queries` (n × dim rows). */
export async function hnswLatency(
  queries: Float32Array,
  dim: number,
  k: number,
  ef: number,
  signal?: AbortSignal,
): Promise<QueryLatency | null> {
  const n = Math.floor(queries.length / dim);
  const m = Math.min(n, LATENCY_SAMPLE);
  const ms: number[] = [];
  for (let j = 0; j < m; j++) {
    const i = Math.floor((j * n) / m);
    const r = await searchIndex(queries.slice(i * dim, (i + 1) * dim), k, ef, { signal });
    ms.push(r.ms);
  }
  return queryLatency(ms);
}
