// Recall@k of HNSW against exact search on the open index, at one or several efSearch values.
import { normalizeRows, recallAtK, type Matrix } from '../../src/lib/core/retrieval/exact';
import { exact } from './exact';
import { hnswSearch } from './search';
import { asMatrix, requireOpen } from './session';
import type { ExactBackend, RecallPoint, RecallReport } from './types';

/** RECALL_SAMPLE: corpus rows used as queries by recallAgainstExact when none are given. */
export const RECALL_SAMPLE = 200;

/**
 * Recall@k of HNSW against exact search, at the open index's efSearch or at each of `efSearch`.
 * Without `queries`, RECALL_SAMPLE corpus rows are the queries, each excluded from its own results
 * (so a vector finding itself does not count).
 */
export async function recallAgainstExact(
  k: number,
  opts: { queries?: Float32Array; efSearch?: number[]; backend?: 'auto' | ExactBackend } = {},
): Promise<RecallReport> {
  const o = requireOpen();
  let q: Matrix;
  let exclude: number[][] | undefined;
  if (opts.queries) {
    q = asMatrix(o.space === 'cosine' ? opts.queries.slice() : opts.queries, o.vectors.dim, 'queries');
    if (o.space === 'cosine') normalizeRows(q);
  } else {
    const { n, dim } = o.vectors;
    const m = Math.min(RECALL_SAMPLE, n);
    const rows = Array.from({ length: m }, (_, i) => Math.floor((i * n) / m));
    q = { data: new Float32Array(m * dim), n: m, dim };
    rows.forEach((r, i) => q.data.set(o.vectors.data.subarray(r * dim, r * dim + dim), i * dim));
    exclude = rows.map((r) => [r]);
  }
  const truth = await exact(o, q, k, exclude, opts.backend ?? 'auto');
  const points: RecallPoint[] = [];
  for (const ef of opts.efSearch ?? [o.efSearch]) {
    const t0 = performance.now();
    const approx = hnswSearch(o, q, k, ef, { exclude, rescore: false });
    const ms = performance.now() - t0;
    points.push({ efSearch: ef, recall: recallAtK(approx, truth.result, k), ms, qps: (q.n * 1000) / ms });
  }
  return { k, queries: q.n, exactBackend: truth.backend, exactMs: truth.ms, points };
}
