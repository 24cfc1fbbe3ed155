// A dense run's corpus streamed from where it is stored (the shard's precomputed rows, the encoder
// worker's stored batches) into the index worker's compact store, a piece at a time, instead of
// coming to the page as one (docs × dim) matrix that is then sent on (1M × 384 is 1.5 GB, held in
// the encoder worker, the page and in transit at once). The encoder worker sends each piece of rows
// (workers/encoder/stream.ts) to this page, which forwards it to the index worker and drops it; the
// page keeps only the document ids (one packed UTF-8 table) and the missing list. Used where the run
// takes the compact store anyway (the plan's useCompactStore: one vector per document and per
// query, exact search), and where no query image reuses a corpus image's row (those rows stay in the
// page as before).
import {
  embedCorpus,
  type CorpusSink,
  type EmbedCorpusRequest,
  type EmbedCorpusResult,
} from '../clients/encoder-client';
import { addRowsAtToCompactStore } from '../clients/index-client';
import { releaseBm25 } from '../clients/retrieval-client';
import type { JobOptions } from '../clients/worker-client';
import { packedCount, type PackedStrings } from '../core/retrieval/packed-ids';
import * as compact from './dense-compact';

/** How a run's corpus may be streamed (core/retrieval/dense-plan.ts): from how many documents, and the store key of an embedding key. */
export interface StreamPlan {
  fromDocs: number;
  storeKey: (embeddingKey: string) => string;
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
  plan?: StreamPlan,
): Promise<CorpusResult> {
  if (!plan) return embedCorpus(req, job);
  type Begun = { key: string; ids: PackedStrings; missing: string[]; filling: boolean };
  const state: { begun?: Begun } = {};
  const sink: CorpusSink = {
    async begin(info) {
      // A corpus this large: the BM25 index (stored) leaves the retrieval worker's memory meanwhile.
      await releaseBm25();
      const key = plan.storeKey(info.key);
      const filling = await compact.beginCompactFill(key, info.dim, info.ids, job);
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
  if (b.filling) await compact.endCompactFill(b.key, b.ids, b.missing, job);
  return { ...r, docIds: [], ids: b.ids };
}
