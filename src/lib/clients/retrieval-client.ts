import type { Bm25Params } from '../core/retrieval/bm25';
import * as Comlink from 'comlink';
import type {
  DenseQueries,
  QueryFusion,
  RankedList,
  RetrievalWorkerApi,
} from '../../../workers/retrieval.worker';
import { timeStage } from '../platform/page/query-timing';
import { latencyOfLists, type QueryLatency } from '../core/eval/approximation';
import { WorkerClient, proxyProgress, type JobOptions } from './worker-client';

const client = new WorkerClient<RetrievalWorkerApi>(
  () => new Worker(new URL('../../../workers/retrieval.worker.ts', import.meta.url), { type: 'module' }),
);

/** Loads a cached shard's BM25 index in the retrieval worker (building and caching it if needed). */
export function prepareBm25(hash: string, params: Bm25Params, opts: JobOptions = {}) {
  return client.run((r) => r.prepare(hash, params, proxyProgress(opts.onProgress)), opts.signal);
}

/** Ranks every query of a task; cancel terminates the worker (the next call re-prepares). */
export function runBm25Task(taskId: string, depth: number, opts: JobOptions = {}) {
  return client.run((r) => r.runTask(taskId, depth, proxyProgress(opts.onProgress)), opts.signal);
}

/** Ad-hoc BM25 search; `language` is the query's language (its stop words are dropped for other-language documents). */
export function searchBm25Adhoc(text: string, k: number, language?: string) {
  return client.run((r) => r.search(text, k, language));
}

/** Per-term explanation of a document's score; without `language` a shard query with this text lends its own. */
export function explainBm25Doc(text: string, docId: string, language?: string) {
  return client.run((r) => r.explain(text, docId, language));
}

/**
 * Drops the BM25 index from the worker's memory while a large dense run needs it (the next BM25 call
 * reads it back from the cache); nothing when the worker has not started. Whether one was released.
 */
export async function releaseBm25(): Promise<boolean> {
  if (!client.generation) return false;
  return client.run((r) => r.release());
}

/**
 * Before a dense run over a corpus for the compact store: stops the retrieval worker when no call is
 * in flight, so that its BM25 index and the heap V8 keeps after it (about 100 MiB at 1M documents;
 * releaseBm25 frees only the index's buffers) are given back before the query model loads; the next
 * BM25 call prepares again, reading the index from the cache. With a call in flight, the index is
 * released instead (freed when that call ends). What was done (null: no worker).
 */
export async function freeBm25(): Promise<'stopped' | 'released' | null> {
  if (!client.generation) return null;
  if (!client.busy) {
    client.terminate();
    return 'stopped';
  }
  return (await releaseBm25()) ? 'released' : null;
}

/** The line for a BM25 run's details when its index was read back (or built again) first, else null. */
export async function bm25ReloadNote(): Promise<string | null> {
  const r = await client.run((w) => w.takeReload());
  if (!r) return null;
  const s = (r.ms / 1000).toFixed(1);
  return r.rebuilt
    ? `BM25 index: released during a dense run and no longer in the browser's cache, so it was built again (${s} s).`
    : `BM25 index: released during a dense run to keep the tab's memory down, read back from the browser's cache (${s} s, ${r.docs.toLocaleString('en-US')} documents).`;
}

/** The line said when BM25 is prepared again after freeBm25 stopped its worker for a dense run. */
export function bm25StoppedNote(r: { cached: boolean; ms: number; indexedDocs: number }): string {
  const s = (r.ms / 1000).toFixed(1);
  return r.cached
    ? `BM25 index: its worker was stopped during a dense run to give the tab's memory back; read back from the browser's cache (${s} s, ${r.indexedDocs.toLocaleString('en-US')} documents).`
    : `BM25 index: its worker was stopped during a dense run and the index was no longer in the browser's cache, so it was built again (${s} s).`;
}

/** Drops the worker (and its in-memory index), e.g. after the shard is deleted. */
export function resetRetrieval() {
  client.terminate();
}

/**
 * Makes `key`'s document matrix (several rows per document with `rowDoc`: chunks, scored by the best) the worker's dense index. The matrix is transferred (the caller
 * must not use `vectors` afterwards) unless the worker already holds that key.
 */
export async function setDenseDocs(
  key: string,
  vectors: Float32Array,
  dim: number,
  docIds: string[],
  missing: string[],
  rowDoc?: Uint32Array,
) {
  if (await client.run((r) => r.hasDense(key))) return;
  await client.run((r) =>
    r.setDense(key, Comlink.transfer(vectors, [vectors.buffer]), dim, docIds, missing, rowDoc),
  );
}

/** Whether the worker holds `key`'s document matrix (set by an earlier setDenseDocs). */
export function hasDenseDocs(key: string): Promise<boolean> {
  return client.run((r) => r.hasDense(key));
}

/** Dense run over the document matrix set by setDenseDocs. */
export function runDense(q: DenseQueries, fusion: QueryFusion, depth: number, opts: JobOptions = {}) {
  return client.run((r) => r.denseRun(q, fusion, depth, proxyProgress(opts.onProgress)), opts.signal);
}

/** Ranks embedded queries (runDense here, the compact store, or a packed index on the shard's host). */
export type DenseRanker = (
  q: DenseQueries,
  fusion: QueryFusion,
  depth: number,
  job: JobOptions,
) => Promise<RankedList[]>;

/**
 * One ranked-list set per fusion strategy run, with its per-query search times summarised when the
 * ranker timed each query (RankedList.ms).
 */
export type RankedRuns = { fusion?: QueryFusion; lists: RankedList[]; latency?: QueryLatency }[];

/**
 * Ranks embedded queries with `ranker` (this worker's document matrix by default), once per fusion
 * strategy: score and/or feature fusion for queries with a text and an image, else one run
 * (`adhoc`: one query typed in the Search view, its stages timed).
 */
export async function rankFusions(
  q: DenseQueries,
  settings: { fusion: 'both' | 'score' | 'feature'; textWeight: number; depth: number },
  job: JobOptions,
  adhoc = false,
  ranker: DenseRanker = runDense,
): Promise<RankedRuns> {
  const twoParts = q.ids.some((_, i) => q.hasText[i] && q.hasImage[i]);
  const fusions: (QueryFusion | undefined)[] = !twoParts
    ? [undefined]
    : settings.fusion === 'both'
      ? [{ mode: 'score', textWeight: settings.textWeight }, { mode: 'feature' }]
      : settings.fusion === 'score'
        ? [{ mode: 'score', textWeight: settings.textWeight }]
        : [{ mode: 'feature' }];
  const runs: RankedRuns = [];
  for (const [i, fusion] of fusions.entries()) {
    const rank = () => ranker(q, fusion ?? { mode: 'feature' }, settings.depth, job);
    // An ad-hoc query's first ranking is its search; the second fusion's is part of fusing.
    const lists = await (adhoc ? timeStage(i === 0 ? 'search' : 'fuse', rank) : rank());
    const latency = latencyOfLists(lists);
    runs.push({ fusion, lists, ...(latency ? { latency } : {}) });
  }
  return runs;
}
