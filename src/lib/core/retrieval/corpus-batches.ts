// The records a corpus embedding is stored as (one per batch, plus a meta record holding the batch
// plan) and the checks that decide whether a stored batch can be reused; the text a document is
// embedded from. Pure: the encoder worker reads and writes these records in IndexedDB.
import type { Doc, EmbedPart } from '../types';
import type { Dtype } from './models';

/**
 * A stored batch (artifact kind `emb`, key `<embeddingKey>#<batchNo>`): batch `batchNo` of the
 * meta record's plan, its documents in plan order.
 */
export interface EmbBatchRecord {
  v: 2;
  batchNo: number;
  ids: string[];
  dim: number;
  /** ids.length × dim, row-major; chunked text: Σ chunks × dim, each document's chunks in order. */
  vectors: Float32Array;
  /** Chunked text: chunks of each document (ids order) and each chunk's token span (2 per chunk). */
  chunks?: Uint32Array;
  spans?: Uint32Array;
  writtenAt: number;
}

/**
 * The meta record (key `<embeddingKey>#meta`): what the batches are batches of. The plan is stored,
 * not recomputed, so a resumed run (after a cancel or a reload) finds every stored batch where it
 * left it whatever the tokenizer or the limits do meanwhile.
 */
export interface EmbMetaRecord {
  v: 2;
  key: string;
  modelId: string;
  hubId: string;
  revision: string;
  dtype: Dtype;
  part: EmbedPart;
  dim: number;
  batchSize: number;
  tokenBudget: number;
  /** Documents that have the part (the rows the batches cover, in shard order). */
  total: number;
  totalBatches: number;
  /** The batches: positions among those `total` documents (BatchPlan). */
  order: Uint32Array;
  bounds: Uint32Array;
  missing: string[];
  complete: boolean;
  updatedAt: number;
}

/** EMB_KIND: artifact kind of embedding records. */
export const EMB_KIND = 'emb';

/** The batch size of an embedding call, checked: a positive integer. */
export function checkBatchSize(batchSize: number): number {
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError(`batch size must be a positive integer, got ${batchSize}`);
  return batchSize;
}

/** The text a document is embedded from (BEIR: title, a space, text). */
export function docText(d: Doc): string {
  return [d.title, d.text]
    .filter((s) => s && s.trim())
    .join(' ')
    .trim();
}

/** Whether a document has the part (non-blank text; an image path) to embed. */
export function hasPart(d: Doc, part: EmbedPart): boolean {
  return part === 'text' ? docText(d) !== '' : typeof d.image === 'string' && d.image !== '';
}

/** Whether a stored batch record holds exactly `ids`' vectors (and, chunked, their chunks and spans) at `dim`. */
export function validBatch(r: unknown, ids: string[], dim: number, chunked = false): r is EmbBatchRecord {
  const b = r as EmbBatchRecord | undefined;
  if (
    !b ||
    b.v !== 2 ||
    b.dim !== dim ||
    !Array.isArray(b.ids) ||
    b.ids.length !== ids.length ||
    !b.ids.every((id, i) => id === ids[i]) ||
    !(b.vectors instanceof Float32Array)
  )
    return false;
  if (!chunked) return b.vectors.length === ids.length * dim;
  if (
    !(b.chunks instanceof Uint32Array) ||
    !(b.spans instanceof Uint32Array) ||
    b.chunks.length !== ids.length
  )
    return false;
  let rows = 0;
  for (const c of b.chunks) rows += c;
  return b.vectors.length === rows * dim && b.spans.length === 2 * rows;
}
