// A dense run as a plan: from the facts (the model and the task's parts, the settings, the shard's
// size, its sets, the loaded encoder, a packed index, a corpus a worker holds already), the ordered
// steps state/dense.ts walks, each with its reason in words (shown in the run's details). Pure:
// the executor re-plans as facts arrive (the encoder once loaded, the corpus's rows once embedded);
// steps already taken do not depend on the new facts.
import type { TaskInfo } from '../types';
import { chunkingFor, isChunked, type Chunking } from './chunking';
import { corpusEmbeddingKey, supportsPart, type Dtype, type EmbedPart, type ModelSpec } from './models';
import type { MultiImage } from './multi-image';
import { PROBE_SEED, PROBE_SIZE, referenceThreshold } from './reference-check';

/** float32 corpus bytes from which a dense run uses the compact store (the tab's 1 GB: issue 18). */
export const COMPACT_FROM_BYTES = 256 * 2 ** 20;

/** Documents from which a dense run goes through the compact store (`override`: the URL's compact-from). */
export function compactFromRows(dim: number, override?: number): number {
  return override ?? Math.ceil(COMPACT_FROM_BYTES / (4 * dim));
}

/** Whether a dense run over `n` documents of `dim` takes the compact store (clients/index-client.ts's compact store section). */
export function useCompactStore(
  n: number,
  dim: number,
  settings: { compactFrom?: number; ann?: unknown },
  rowsPerDoc: boolean,
  queryParts: number,
): boolean {
  return n >= compactFromRows(dim, settings.compactFrom) && !settings.ann && !rowsPerDoc && queryParts === 1;
}

/** The retrieval worker's key of a corpus matrix: the embedding keys, and how chunks and images were aggregated. */
export function denseDocsKey(
  keys: string[],
  chunking: Chunking | undefined,
  multiImage?: MultiImage,
): string {
  return (
    keys.join('+') + (chunking ? `|agg=${chunking.aggregate}` : '') + (multiImage ? `|img=${multiImage}` : '')
  );
}

/** What a model can do with a task: which query and document parts it uses, and what it ignores. */
export function densePlan(spec: ModelSpec, task: TaskInfo) {
  const want = (m: TaskInfo['queryModality']): EmbedPart[] => (m === 'image+text' ? ['text', 'image'] : [m]);
  const wantQuery = want(task.queryModality);
  const queryParts = wantQuery.filter((p) => supportsPart(spec, p));
  let docParts = want(task.corpusModality).filter((p) => supportsPart(spec, p));
  const notes: string[] = [];
  // A text-only encoder ranks an image task by the documents' text, as BM25 does.
  if (docParts.length === 0) {
    docParts = ['text'];
    notes.push(`ranks documents by their text: ${spec.label ?? spec.id} has no image tower`);
  }
  if (queryParts.length < wantQuery.length)
    notes.push(
      queryParts.length
        ? 'uses the query text only (no image tower)'
        : 'cannot embed this task’s image-only queries',
    );
  return { queryParts, docParts, notes, canRun: queryParts.length > 0 };
}

export interface DenseFacts<A = unknown> {
  spec: ModelSpec;
  task: TaskInfo;
  settings: {
    ann?: A;
    chunking?: Chunking;
    multiImage?: MultiImage;
    multiImageDocs?: boolean;
    compactFrom?: number;
    fusion: 'both' | 'score' | 'feature';
  };
  /** One query typed in the Search view (its corpus may be held from the last one), not a task's. */
  adhoc: boolean;
  /** The shard's documents as its summary counts them (a task's run). */
  docs?: number;
  /** The dtypes the shard has vectors of this model at (state/dense-sets.ts), when the dtype is auto. */
  setDtypes?: string[];
  /** The shard (its hash): with the encoder, the key a worker holds this corpus under. */
  shardHash?: string;
  /** The encoder, once loaded. */
  encoder?: { device: string; dtype: string; dim: number; deviceReason?: string };
  /** An ad-hoc query's parts may have been embedded ahead (the image as added, the text on a pause). */
  prefetch?: boolean;
  /** The shard's packed index (its file) that serves this run, found once the encoder is loaded. */
  packedIndex?: string;
  /** The worker that holds this corpus already (an ad-hoc query after another). */
  held?: 'compact' | 'matrix';
  /** The corpus's rows, once embedded (each document once). */
  corpusRows?: number;
  /** Some documents' text is chunked with max, or their images kept as rows: several rows a document. */
  rowsPerDoc?: boolean;
  /**
   * The shard's precomputed sets (or packed index) of this model this run takes its corpus vectors
   * from (reference-check.ts): a probe of them is checked first, once per shard, set, model, dtype
   * and device (`cached`: checked before in this tab); `skip`: run anyway as asked, marked unchecked.
   */
  reference?: { sets: string[]; cached?: boolean; skip?: boolean };
}

export type DenseStep = { why: string } & (
  | {
      kind:
        | 'free-bm25'
        | 'load-model'
        | 'check-reference'
        | 'free-encoder'
        | 'search-packed-index'
        | 'build-hnsw';
    }
  | { kind: 'embed-queries'; parts: EmbedPart[] }
  | { kind: 'embed-corpus'; part: EmbedPart; stream: boolean }
  | { kind: 'store'; store: 'compact' | 'matrix' }
  | { kind: 'rank'; index: 'compact' | 'matrix' | 'hnsw' }
);

/** What a step does, in words (the run's details). */
export const STEP_WORDS: Record<DenseStep['kind'], string> = {
  'free-bm25': 'Freed the BM25 index’s memory',
  'load-model': 'Loaded the model',
  'check-reference': 'Checked the shard’s reference vectors',
  'embed-queries': 'Embedded the queries',
  'free-encoder': 'Stopped the encoder worker',
  'search-packed-index': 'Searched the packed index on the shard’s host',
  'embed-corpus': 'Took the corpus vectors',
  store: 'Handed the corpus to the',
  rank: 'Ranked the queries against the',
  'build-hnsw': 'Built an HNSW index',
};

/** The plan of a dense run from what is known of it so far (see the file's header). */
export function planDenseRun<A>(f: DenseFacts<A>) {
  const parts = densePlan(f.spec, f.task);
  const notes = [...parts.notes];
  const { chunking, exact } = chunkingFor(f.settings, parts, notes);
  let ann = exact ? undefined : f.settings.ann;
  // Multi-image scoring applies where images are embedded; max keeps several rows per document.
  const images = parts.docParts.includes('image') || parts.queryParts.includes('image');
  const multiImage = images ? f.settings.multiImage : undefined;
  if (multiImage === 'max' && parts.docParts.includes('text') && parts.docParts.includes('image'))
    notes.push('max over images: each image is fused with its document’s text (feature fusion)');
  if (multiImage === 'max' && ann) {
    notes.push('searches exactly: max over images keeps several vectors per document, an HNSW index one');
    ann = undefined;
  }
  const settings = { ...f.settings, chunking, multiImage, ann };
  const chunked = isChunked(chunking);
  const steps: DenseStep[] = [];
  const dim = f.encoder?.dim ?? f.spec.dim;
  const fromDocs = compactFromRows(dim, f.settings.compactFrom);
  const big = (f.docs ?? 0) >= fromDocs;
  if (
    !f.adhoc &&
    !f.settings.ann &&
    f.spec.dim > 0 &&
    (f.docs ?? 0) >= compactFromRows(f.spec.dim, f.settings.compactFrom)
  )
    steps.push({
      kind: 'free-bm25',
      why: `the corpus (${f.docs} documents) goes to the compact store: an idle BM25 worker is stopped (a busy one releases its index) before the model loads; the next BM25 search reads the index back from the cache`,
    });
  const setDtype = f.setDtypes?.length
    ? ` (the shard has vectors of this model at ${f.setDtypes.join(', ')})`
    : '';
  steps.push({
    kind: 'load-model',
    why: f.encoder
      ? `${f.encoder.dtype} on ${f.encoder.device}${setDtype}${f.encoder.deviceReason ? `: ${f.encoder.deviceReason}` : ''}`
      : `to embed the queries${setDtype}`,
  });
  // The corpus may stream to the compact store: one part each side, exact search, and no query image
  // that takes a corpus image's row. Chunked and multi-image rows are never streamed (several a document).
  const one = parts.docParts.length === 1 && parts.queryParts.length === 1;
  const streams = one && !ann && !(parts.docParts[0] === 'image' && parts.queryParts[0] === 'image');
  const stream = streams
    ? { fromDocs, storeKey: (k: string) => denseDocsKey([k], chunking, multiImage) }
    : undefined;
  const allDocImages = !!multiImage && !!f.settings.multiImageDocs;
  const { shardHash, encoder } = f;
  // The retrieval worker's (and the compact store's) key of this corpus at the loaded encoder's dtype.
  const corpusKey =
    encoder && shardHash !== undefined
      ? denseDocsKey(
          parts.docParts.map((p) =>
            corpusEmbeddingKey(shardHash, f.spec, encoder.dtype as Dtype, p, chunking, allDocImages),
          ),
          chunking,
          multiImage,
        )
      : undefined;
  const base = { parts, notes, settings, chunking, multiImage, allDocImages, stream, ann, corpusKey };
  if (!f.encoder) return { ...base, steps };
  const ref = f.reference;
  if (ref?.sets.length) {
    const sets = ref.sets.join(', ');
    steps.push({
      kind: 'check-reference',
      why: ref.skip
        ? `not checked: run anyway as asked after the check of ${sets} failed; the run is marked unchecked`
        : ref.cached
          ? `${sets}: checked earlier in this tab for this model, dtype and device (a probe of ${PROBE_SIZE} documents; its result is recorded with the run)`
          : `a probe of ${PROBE_SIZE} of the shard's documents (seed ${PROBE_SEED}) embedded with ${f.encoder.dtype} on ${f.encoder.device} and compared with the stored rows of ${sets}: every cosine ≥ ${referenceThreshold(f.encoder.dtype)}, else the run stops before any result`,
    });
  }
  const ahead = f.prefetch
    ? '; the parts embedded ahead, as the query was typed or its image added, are taken'
    : '';
  const embedQueries = (why: string): DenseStep => ({
    kind: 'embed-queries',
    parts: parts.queryParts,
    why: why + (f.adhoc ? ahead : ''),
  });
  if (f.packedIndex) {
    steps.push(
      embedQueries(`only the queries: the shard's host has a packed index of this set (${f.packedIndex})`),
      {
        kind: 'search-packed-index',
        why: 'the index worker range-reads the header, the probed lists and the rows it rescores; the vectors are not downloaded',
      },
    );
    return { ...base, steps };
  }
  if (f.held) {
    const where = f.held === 'compact' ? 'the compact store' : 'the retrieval worker';
    steps.push(embedQueries(`only the query: ${where} holds this corpus since the last search`), {
      kind: 'rank',
      index: f.held,
      why: `against the corpus ${where} holds; nothing is read or sent again`,
    });
    return { ...base, steps };
  }
  // Queries first: their model (ORT's memory, which a worker never gives back) is stopped before
  // the corpus is handed to the store and searched (issue 18: the tab within 1 GB at 1M documents).
  const early = streams && !f.adhoc && !chunked && !multiImage && parts.queryParts[0] === 'text' && big;
  if (early)
    steps.push(embedQueries('before the corpus: the query model is stopped next'), {
      kind: 'free-encoder',
      why: "the query model's memory (ORT never gives it back) is not held beside the compact store while the corpus is handed over and searched; a batch to embed or the next search loads it again",
    });
  for (const part of parts.docParts)
    steps.push({
      kind: 'embed-corpus',
      part,
      stream: !!stream && big && !chunked && !base.allDocImages,
      why:
        `${part}: the shard's precomputed vectors or the batches stored in this browser where they fit the model, else embedded here` +
        (part === 'text' && chunked ? `; long texts in windows (${chunking.aggregate})` : '') +
        (part === 'image' && base.allDocImages ? `; every image of an item (${multiImage})` : '') +
        (stream && big ? '; streamed to the compact store in pieces, never whole in the page' : ''),
    });
  const rows = f.corpusRows ?? f.docs ?? 0;
  const compact = useCompactStore(rows, dim, settings, !!f.rowsPerDoc, parts.queryParts.length);
  steps.push({
    kind: 'store',
    store: compact ? 'compact' : 'matrix',
    why: compact
      ? `${rows} documents reach the store's threshold of ${fromDocs} (256 MiB of float32 rows, or the link's compact-from): int8 codes in memory, the float32 rows in OPFS`
      : parts.docParts.length > 1
        ? "the retrieval worker's float32 matrix; each document is its text and image fused"
        : "the retrieval worker's float32 matrix: it fits beside everything else, exact by construction",
  });
  if (!early) steps.push(embedQueries(compact ? 'with the model still loaded' : 'after the corpus'));
  steps.push({
    kind: 'rank',
    index: compact ? 'compact' : 'matrix',
    why: compact
      ? 'a 4-bit scan, int8 scores of the best candidates, exact rescoring of the top R'
      : 'exact cosine against every document' +
        (f.rowsPerDoc ? ', each document scored by its best row' : '') +
        (parts.queryParts.length > 1 ? `; image + text queries by ${f.settings.fusion} fusion` : ''),
  });
  if (ann)
    steps.push(
      {
        kind: 'build-hnsw',
        why: 'approximate search as asked; its recall@10 is measured against the exact run',
      },
      { kind: 'rank', index: 'hnsw', why: 'the single-vector queries through the HNSW index' },
    );
  return { ...base, steps };
}

/** The plan as the run's details show it: what was done, and why. */
export const describePlan = (steps: DenseStep[]) =>
  steps.map((s) => {
    const where = { compact: 'compact store', matrix: 'float32 matrix', hnsw: 'HNSW index' };
    const to = 'store' in s ? s.store : 'index' in s ? s.index : undefined;
    const detail = 'part' in s ? ` (${s.part})` : to ? ` ${where[to]}` : '';
    return { does: STEP_WORDS[s.kind] + detail, why: s.why };
  });
