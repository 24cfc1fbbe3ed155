// Dense runs over large corpora through the index worker's compact vector store (int8 codes as two
// 4-bit planes, the high one in memory and the low one in OPFS beside the float32 rows; a 4-bit
// first pass, int8 scores of its best FIRST_PASS_CANDIDATES, exact rescoring of the best
// COMPACT_RERANK per query; see workers/index/compact-store.ts) instead of the retrieval worker's
// float32 matrix. When: core/retrieval/dense-plan.ts (useCompactStore: from COMPACT_FROM_BYTES of
// float32 rows, about 175,000 documents at 384 dimensions, single-vector queries, exact search; the
// URL's `compact-from=N` moves it). Below it the float32 matrix fits beside everything else in the
// tab's 1 GB and is exact by construction; above it the matrix alone grows past a quarter of the
// budget (1M × 384 is 1.5 GB), while the store holds an eighth of it (192 MB at 1M) and answers in
// one 4-bit scan, 2,000 low-plane reads and R row reads (issue 18 item 4).
//
// The corpus goes there from where it is stored (the shard's precomputed rows, the encoder worker's
// stored batches) a piece at a time (embedCorpusTo), never as one matrix in the page: the encoder
// worker sends each piece (workers/encoder/stream.ts) to this page, which forwards it to the index
// worker and drops it, keeping only the document ids (one packed UTF-8 table) and the missing list.
import type { DenseQueries, QueryFusion } from '../../../workers/retrieval.worker';
import {
  addRowsAtToCompactStore,
  addToCompactStore,
  compactStoreInfo,
  finishCompactStore,
  openCompactStore,
  searchCompactStore,
} from '../clients/index-client';
import type { JobOptions } from '../clients/worker-client';
import {
  embedCorpus,
  type CorpusSink,
  type EmbedCorpusRequest,
  type EmbedCorpusResult,
} from '../clients/encoder-client';
import { releaseBm25 } from '../clients/retrieval-client';
import { FIRST_PASS_CANDIDATES } from '../core/retrieval/nibble-scan';
import type { VectorIndex } from '../core/retrieval/runs';
import {
  copyPacked,
  packStrings,
  packedAt,
  packedCount,
  packedPositions,
  type PackedStrings,
} from '../core/retrieval/packed-ids';

/** Candidates rescored exactly per query (recall@10 vs exact in BENCHMARKS.md, issue 18 item 4). */
export const COMPACT_RERANK = 100;
/** Rows per piece sent to the index worker while filling the store. */
const PIECE = 16_384;

/** The run's index, as stored in its configuration (described by core's describeVectorIndex). */
export type CompactIndex = VectorIndex;

/**
 * The index of a run through the compact store at `depth`: its two-pass scan (FIRST_PASS_CANDIDATES,
 * or R when more) and R = COMPACT_RERANK, or the depth when deeper.
 */
export function compactIndex(depth: number): CompactIndex {
  const rerank = Math.max(COMPACT_RERANK, depth);
  return {
    kind: 'int8-rescore',
    rerank,
    firstPass: { bits: 4, candidates: Math.max(FIRST_PASS_CANDIDATES, rerank) },
  };
}

/** The corpus the store was last filled with by this page: its key, document ids (packed) and missing ones. */
let held: { key: string; ids: PackedStrings; missing: string[] } | null = null;

/** Whether the index worker's compact store holds the corpus `key` (filled by this page). */
export async function hasCompactStore(key: string): Promise<boolean> {
  if (held?.key !== key) return false;
  const info = await compactStoreInfo();
  return info.open && info.ready && info.key === key;
}

/** The ranker over the corpus `key` when the compact store holds it (an ad-hoc query's reuse), else null. */
export async function heldCompactRanker(key: string, job: JobOptions) {
  return held && (await hasCompactStore(key)) ? compactRanker(held.ids, held.missing, job) : null;
}

/**
 * Fills the compact store with `matrix` (n × dim, one row per document of `docIds`: strings, or the
 * packed table of a streamed corpus), in pieces, unless it holds `key` already (the page's `matrix`
 * can be dropped afterwards); returns its ranker.
 */
export async function loadCompactStore(
  key: string,
  matrix: Float32Array,
  dim: number,
  docIds: string[] | PackedStrings,
  missing: string[],
  job: JobOptions,
): Promise<ReturnType<typeof compactRanker>> {
  const ids = Array.isArray(docIds) ? packStrings(docIds) : docIds;
  const rank = compactRanker(ids, missing, job);
  if (!(await beginCompactFill(key, dim, ids, job))) return rank;
  const n = packedCount(ids);
  // A corpus streamed into the store (embedCorpusTo) is held by now: no matrix came to the page.
  if (matrix.length !== n * dim) throw new Error('the compact store lost the streamed corpus');
  for (let s = 0; s < n; s += PIECE) {
    const e = Math.min(n, s + PIECE);
    await addToCompactStore(matrix.slice(s * dim, e * dim), job.signal);
    job.onProgress?.({ kind: 'store', done: e, total: n });
  }
  await endCompactFill(key, ids, missing, job);
  return rank;
}

/**
 * Opens an empty store for the corpus `key` unless it holds it already (then false: nothing to send).
 * The index worker gets its own copy of the packed ids (for trec_eval's tie order and its messages).
 */
export async function beginCompactFill(key: string, dim: number, ids: PackedStrings, job: JobOptions) {
  if (await hasCompactStore(key)) return false;
  held = null;
  await openCompactStore({ dim, space: 'cosine', key, ids: copyPacked(ids) }, job.signal);
  return true;
}

/** Encodes the rows sent since beginCompactFill; the store then holds the corpus `key` for this page. */
export async function endCompactFill(key: string, ids: PackedStrings, missing: string[], job: JobOptions) {
  await finishCompactStore(job);
  held = { key, ids, missing };
}

type Lists = { queryId: string; docIds: string[]; scores: Float64Array; ms?: number }[];

/**
 * Ranks queries with one vector each (their one part) against the compact store: the stand-in for
 * the retrieval worker's exact ranking. Excluded and missing documents are never returned.
 */
export function compactRanker(docIds: PackedStrings, missing: string[], job: JobOptions) {
  // Positions of the few ids that are excluded or missing, found by one scan of the packed bytes when
  // there are any (a Map of every id cost 0.7 s of main thread and its garbage at 1M documents).
  const positions = (ids: Iterable<string>) => packedPositions(docIds, ids);
  const missingAt = positions(missing);
  const missingIdx = missing.flatMap((id) => missingAt.get(id) ?? []);
  return async (q: DenseQueries, _fusion: QueryFusion, depth: number): Promise<Lists> => {
    const { dim } = q;
    const nq = q.ids.length;
    const rows: number[] = [];
    const qm = new Float32Array(nq * dim);
    for (let i = 0; i < nq; i++) {
      const v = q.hasText[i] && q.text ? q.text : q.hasImage[i] && q.image ? q.image : null;
      // A zero query has no cosine with anything: an empty list, as exact search gives.
      if (!v || v.subarray(i * dim, (i + 1) * dim).every((x) => x === 0)) continue;
      qm.set(v.subarray(i * dim, (i + 1) * dim), rows.length * dim);
      rows.push(i);
    }
    const excludedAt = positions(rows.flatMap((i) => q.exclude[i] ?? []));
    const exclude = rows.map((i) => [
      ...(q.exclude[i] ?? []).flatMap((id) => excludedAt.get(id) ?? []),
      ...missingIdx,
    ]);
    const { result, stats } = rows.length
      ? await searchCompactStore(qm.subarray(0, rows.length * dim), depth, {
          exclude,
          rerank: compactIndex(depth).rerank,
          signal: job.signal,
        })
      : { result: null, stats: null };
    const lists: Lists = q.ids.map((id) => ({ queryId: id, docIds: [], scores: new Float64Array(0) }));
    rows.forEach((i, r) => {
      const n = result!.counts[r];
      const ids: string[] = [];
      const scores = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        ids.push(packedAt(docIds, result!.indices[r * result!.k + j]));
        scores[j] = result!.scores[r * result!.k + j];
      }
      // Its own time in the index worker: the two-pass (or int8) scan, the rows read and rescored.
      const ms = stats!.queryMs[r];
      lists[i] = { queryId: q.ids[i], docIds: ids, scores, ...(ms === undefined ? {} : { ms }) };
    });
    return lists;
  };
}

/** A corpus's result, with its ids as the packed table the stream began with when it was streamed. */
export type CorpusResult = EmbedCorpusResult & { ids?: PackedStrings };

/** How many documents a corpus result covers (streamed: `ids`, its docIds being empty). */
export const corpusDocCount = (r: CorpusResult) => (r.ids ? packedCount(r.ids) : r.docIds.length);

/**
 * embedCorpus, with the rows streamed into the compact store when `plan` says so and the corpus is
 * large enough: the result then has no embeddings and no docIds (its `ids` are the packed table the
 * stream began with: strings are made only for the hits), and the store holds the corpus, so
 * dense-compact's loadCompactStore finds it there.
 */
export async function embedCorpusTo(
  req: EmbedCorpusRequest,
  job: JobOptions,
  plan?: { fromDocs: number; storeKey: (embeddingKey: string) => string },
): Promise<CorpusResult> {
  if (!plan) return embedCorpus(req, job);
  type Begun = { key: string; ids: PackedStrings; missing: string[]; filling: boolean };
  const state: { begun?: Begun } = {};
  const sink: CorpusSink = {
    async begin(info) {
      // A corpus this large: the BM25 index (stored) leaves the retrieval worker's memory meanwhile.
      await releaseBm25();
      const key = plan.storeKey(info.key);
      const filling = await beginCompactFill(key, info.dim, info.ids, job);
      state.begun = { key, ids: info.ids, missing: info.missing, filling };
      return filling;
    },
    // The piece's buffers come back from the index worker and go on to the encoder worker (reused).
    rows: (piece) => addRowsAtToCompactStore(piece.vectors, piece.at, job.signal),
  };
  const r = await embedCorpus({ ...req, stream: { fromDocs: plan.fromDocs } }, { ...job, sink });
  if (!r.streamed) return r;
  const b = state.begun;
  if (!b) throw new Error('the encoder worker streamed a corpus without beginning it');
  if (b.filling) await endCompactFill(b.key, b.ids, b.missing, job);
  return { ...r, docIds: [], ids: b.ids };
}
