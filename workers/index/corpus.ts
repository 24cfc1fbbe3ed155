// The chunked exact corpus (exact search at a scale whose float32 rows do not fit the tab: int16
// codes in wasm chunks, rows in OPFS; workers/index/chunked-exact.ts), kept apart from the HNSW index.
import * as Comlink from 'comlink';
import { ChunkedCorpus } from './chunked-exact';
import { hnswModule } from './hnsw-engine';
import { indexTieBreak, normalizeRows, trecTieBreak } from '../../src/lib/core/retrieval/exact';
import { throttle } from '../../src/lib/core/throttle';
import type { Progress } from '../../src/lib/core/types';
import { asMatrix } from './session';
import type { ExactCorpusInfo, ExactCorpusOptions, ExactCorpusResult, Space } from './types';

/** The chunked exact corpus, separate from the HNSW index (either can be open). */
let corpus: {
  c: ChunkedCorpus;
  space: Space;
  reason?: string;
  docIds?: string[];
} | null = null;

function closeCorpus(): void {
  corpus?.c.free();
  corpus = null;
}

async function corpusInfo(): Promise<ExactCorpusInfo> {
  if (!corpus) return { open: false };
  const { c } = corpus;
  return {
    open: true,
    n: c.n,
    dim: c.dim,
    space: corpus.space,
    chunkRows: c.chunkRows,
    store: c.storeKind,
    storeReason: corpus.reason,
    codeBytes: c.codeBytes(),
    storeMemoryBytes: c.storeMemoryBytes(),
    wasmHeapBytes: (await hnswModule()).HEAPU8.byteLength,
  };
}

/**
 * Starts an empty chunked exact corpus (closing any previous one): int16 codes in wasm chunks,
 * float32 rows in OPFS (or memory). Rows then arrive with exactCorpusAdd, in order.
 */
export async function exactCorpusOpen(opts: ExactCorpusOptions): Promise<ExactCorpusInfo> {
  const engine = await hnswModule();
  closeCorpus();
  const tieBreak = opts.docIds ? trecTieBreak(opts.docIds) : indexTieBreak;
  const { corpus: c, reason } = await ChunkedCorpus.open(engine, opts.dim, {
    chunkRows: opts.chunkRows,
    store: opts.store,
    tieBreak,
  });
  corpus = { c, space: opts.space, reason, docIds: opts.docIds };
  return corpusInfo();
}

/** Appends rows (n × dim, transferred; normalised here for cosine); returns the row count. */
export function exactCorpusAdd(vectors: Float32Array): number {
  if (!corpus) throw new Error('no exact corpus: call exactCorpusOpen() first');
  const m = asMatrix(vectors, corpus.c.dim, 'vectors');
  if (corpus.docIds && corpus.c.n + m.n > corpus.docIds.length)
    throw new RangeError(`${corpus.c.n + m.n} rows for ${corpus.docIds.length} document ids`);
  if (corpus.space === 'cosine') normalizeRows(m);
  return corpus.c.add(m.data);
}

/**
 * Exact top-k over the chunked corpus, equal to exactSearch() over all its rows. Progress: one
 * 'search' tick per (query block, chunk) pass. Cancel = terminate (the client's signal): the
 * corpus is gone with the worker and must be added again.
 */
export function exactCorpusSearch(
  queries: Float32Array,
  k: number,
  opts: { exclude?: number[][] } = {},
  onProgress?: (p: Progress) => void,
): ExactCorpusResult {
  if (!corpus) throw new Error('no exact corpus: call exactCorpusOpen() first');
  if (corpus.docIds && corpus.docIds.length !== corpus.c.n)
    throw new RangeError(`${corpus.docIds.length} document ids for ${corpus.c.n} rows`);
  const report = throttle(onProgress);
  const q = asMatrix(corpus.space === 'cosine' ? queries.slice() : queries, corpus.c.dim, 'queries');
  if (corpus.space === 'cosine') normalizeRows(q);
  const t0 = performance.now();
  const { result, stats } = corpus.c.search(q, k, opts.exclude, (done, total) =>
    report({ kind: 'search', done, total }),
  );
  report.flush();
  const ms = performance.now() - t0;
  return Comlink.transfer({ result, stats, ms }, [result.indices.buffer, result.scores.buffer]);
}

/** What the chunked exact corpus holds. */
export async function exactCorpusInfo(): Promise<ExactCorpusInfo> {
  return corpusInfo();
}

/** Frees the chunked exact corpus (wasm chunks, OPFS file). */
export function exactCorpusClose(): void {
  closeCorpus();
}
