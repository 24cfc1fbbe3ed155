// "Why did this document rank here?" for every kind of run: BM25 term contributions, a dense
// model's cosines (per query part, and the fused score), a fusion's inputs with their ranks and
// normalised values, a reranker's input rank. Computed on demand for one (query, document) pair.
import { rankQuery } from '../core/eval/metrics';
import { fusionDescriptorOf, fusionOptionsFor, fusionTerms } from '../core/retrieval/fusion';
import { fuseFeatures, l2normalize } from '../core/retrieval/dense';
import type { Dtype, EmbedPart } from '../core/retrieval/models';
import type { Device } from '../platform/gpu/backend';
import { explainBm25Doc } from '../clients/retrieval-client';
import {
  chunkTexts,
  embedCorpus,
  embedImages,
  embedTextChunks,
  embedTexts,
  loadEncoder,
  registryModel,
} from '../clients/encoder-client';
import { bestChunkPair, isChunked, meanOfChunks, type ChunkAggregate } from '../core/retrieval/chunking';
import { withShardStore } from '../platform/storage/shard-store';
import { itemImagePaths, type MultiImage } from '../core/retrieval/multi-image';
import type { Doc, ImageRef, Query } from '../core/types';
import type { ModelSpec } from '../core/retrieval/models';
import { densePlan } from '../core/retrieval/dense-plan';
import type { Library } from './library.svelte';
import type { Retrievers } from './retrievers.svelte';
import type { RunStore } from './runs.svelte';
import type { StorageState } from './storage.svelte';
import { withOfflineChoices } from './hub-fallback';
import type { RunResult } from './runs.svelte';

/** What this module needs of the page's state (App composes it and passes itself). */
export interface ExplainHost {
  readonly library: Library;
  readonly retrievers: Retrievers;
  readonly runs: RunStore;
  readonly storage: StorageState;
}

export type Explanation =
  | {
      kind: 'bm25';
      terms: { term: string; tf: number; df: number; idf: number; score: number }[];
      total: number;
    }
  | {
      kind: 'dense';
      model: string;
      /** Cosine of each query part with the document vector. */
      parts: { part: EmbedPart; cosine: number }[];
      /** How the parts were combined into the run's score, with the combined value. */
      fused?: { mode: 'score' | 'feature'; textWeight: number; value: number };
      score: number;
      /**
       * Chunked long texts: the (query chunk, document chunk) pair with the highest cosine — what
       * scored the document under max, the closest pair under mean — with each chunk's text.
       */
      chunks?: {
        aggregate: Exclude<ChunkAggregate, 'first'>;
        overlap: number;
        cosine: number;
        doc: ChunkShown;
        query: ChunkShown;
      };
      /**
       * Multi-image items scored by every image: how (mean, max-sim) and, for max-sim, the (query image,
       * document image) pair that scored the document.
       */
      images?: {
        mode: MultiImage;
        queryCount: number;
        docCount: number;
        best?: { query: number; doc: number; cosine: number; docImage: ImageRef; queryImage?: string };
      };
    }
  | {
      kind: 'fusion';
      method: string;
      inputs: { id: string; name: string; rank: number | null; score: number | null; value: number }[];
      score: number;
    }
  | { kind: 'rerank'; model: string; input: string; inputRank: number | null; score: number }
  | { kind: 'import'; score: number };

/** One chunk of a text: its position (1-based) among the text's chunks, and its (decoded) text. */
export interface ChunkShown {
  index: number;
  count: number;
  text: string;
}

/** The rank (1-based, trec_eval order) and score of a document in a run's list for a query. */
export function rankIn(r: RunResult, queryId: string, docId: string): { rank: number; score: number } | null {
  const ranked = rankQuery(r.run.get(queryId) ?? []);
  const i = ranked.findIndex((d) => d.docId === docId);
  return i < 0 ? null : { rank: i + 1, score: ranked[i].score };
}

/** Explains `docId`'s score for `queryId` in run `r`. */
export async function explain(
  app: ExplainHost,
  r: RunResult,
  queryId: string,
  docId: string,
): Promise<Explanation> {
  const s = app.library.shard;
  const query = s?.queryById.get(queryId);
  if (!s || !query) throw new Error(`query ${queryId} is not in the open shard`);
  const score = rankIn(r, queryId, docId)?.score ?? 0;
  const c = r.meta.config;
  switch (c.kind) {
    case 'bm25': {
      // The worker's index must be the run's (same k1 and b).
      const ret = app.retrievers;
      if (ret.bm25.k1 !== c.k1 || ret.bm25.b !== c.b) ret.bm25 = { ...ret.bm25, k1: c.k1, b: c.b };
      if (!(await ret.prepare())) throw new Error('the BM25 index could not be built');
      const res = await explainBm25Doc(query.text, docId);
      const terms = res?.terms ?? [];
      return { kind: 'bm25', terms, total: terms.reduce((a, t) => a + t.score, 0) };
    }
    case 'dense': {
      const spec = registryModel(c.modelId) ?? app.retrievers.customModels.find((m) => m.id === c.modelId);
      const task = s.summary.manifest.tasks.find((t) => t.id === r.meta.taskId);
      if (!spec || !task) throw new Error(`model ${c.modelId} is not in the registry of this page`);
      const plan = densePlan(spec, task);
      const load = { device: c.device as Device, dtype: c.dtype as Dtype };
      // The run's model and no other (no stand-in): a failed download names the ones that load offline.
      await loadEncoder(spec, load).catch(async (e: unknown) => {
        throw await withOfflineChoices(app.storage, e, spec);
      });
      const chunking = c.chunking;
      const doc0 = (await s.docs.load([docId])).get(docId);
      if (isChunked(chunking) && plan.docParts.length === 1 && plan.docParts[0] === 'text' && doc0) {
        // The document's chunk vectors as the run used them (the corpus cache), the query's chunks.
        const e = await embedCorpus({
          shardHash: s.summary.hash,
          spec,
          part: 'text',
          batchSize: 32,
          load,
          chunking,
        });
        const di = e.docIds.indexOf(docId);
        const rows: number[] = [];
        e.chunks?.rowDoc.forEach((d, r) => d === di && rows.push(r));
        if (!rows.length) throw new Error(`document ${docId} has no embedding for ${spec.label ?? spec.id}`);
        const dim = e.dim;
        const docRows = new Float32Array(rows.length * dim);
        rows.forEach((r, j) => docRows.set(e.embeddings.subarray(r * dim, (r + 1) * dim), j * dim));
        const qc = await embedTextChunks([query.text], 'query', chunking);
        const best = bestChunkPair(qc.vectors, docRows, dim);
        // The text a document is embedded from, as the encoder worker builds it (title, a space, text).
        const text = [doc0.title, doc0.text]
          .filter((x) => x && x.trim())
          .join(' ')
          .trim();
        const [docTexts, queryTexts] = [
          await chunkTexts(text, 'document', chunking),
          await chunkTexts(query.text, 'query', chunking),
        ];
        const cosine =
          chunking.aggregate === 'max'
            ? best.cosine
            : dot(
                meanOfChunks(qc.vectors, [qc.counts[0]], dim, true),
                meanOfChunks(docRows, [rows.length], dim, true),
              );
        return {
          kind: 'dense',
          model: spec.label ?? spec.id,
          parts: [{ part: 'text', cosine }],
          score,
          chunks: {
            aggregate: chunking.aggregate,
            overlap: chunking.overlap,
            cosine: best.cosine,
            doc: { index: best.doc + 1, count: rows.length, text: docTexts[best.doc] ?? '' },
            query: { index: best.query + 1, count: qc.counts[0], text: queryTexts[best.query] ?? '' },
          },
        };
      }
      if (c.multiImage && doc0 && (plan.docParts.includes('image') || plan.queryParts.includes('image')))
        return explainImages(app, spec, plan, c.multiImage, query, doc0, load, score, c.fusion);
      // The document vector: its one part, or the normalised sum of its text and image.
      const rows: Float32Array[] = [];
      for (const part of plan.docParts) {
        const e = await embedCorpus({ shardHash: s.summary.hash, spec, part, batchSize: 32, load });
        const i = e.docIds.indexOf(docId);
        if (i >= 0 && !e.missing.includes(docId)) rows.push(e.embeddings.slice(i * e.dim, (i + 1) * e.dim));
      }
      if (!rows.length) throw new Error(`document ${docId} has no embedding for ${spec.label ?? spec.id}`);
      const doc = rows.length === 2 ? fuseFeatures(rows[0], rows[1]) : l2normalize(rows[0]);
      const q: Partial<Record<EmbedPart, Float32Array>> = {};
      if (plan.queryParts.includes('text') && query.text)
        q.text = l2normalize(await embedTexts([query.text], 'query'));
      if (plan.queryParts.includes('image') && query.image) {
        const blob = await withShardStore((store) => store.getImage(s.summary.hash, query.image!));
        if (blob) q.image = l2normalize(await embedImages([blob]));
      }
      const parts = (Object.entries(q) as [EmbedPart, Float32Array][]).map(([part, v]) => ({
        part,
        cosine: dot(v, doc),
      }));
      return {
        kind: 'dense',
        model: spec.label ?? spec.id,
        parts,
        fused: fusedValue(c.fusion, q, doc),
        score,
      };
    }
    case 'fusion': {
      // The parameters that fused this query (a tuned fusion: its fold's); a deleted input counts as a
      // run without results.
      const inputRuns = c.inputs.map((id) => app.runs.byId(id));
      const opts = fusionOptionsFor(fusionDescriptorOf(c), queryId);
      let terms: (number | null)[] = c.inputs.map(() => null);
      try {
        if (opts)
          terms = fusionTerms(
            inputRuns.map((r) => r?.run ?? new Map()),
            opts,
            queryId,
            docId,
          );
      } catch {
        // A stored configuration this version cannot fuse again: no terms.
      }
      const inputs = c.inputs.map((id, j) => {
        const input = inputRuns[j];
        const at = input ? rankIn(input, queryId, docId) : null;
        return {
          id,
          name: input?.meta.name ?? `${id} (deleted)`,
          rank: at?.rank ?? null,
          score: at?.score ?? null,
          value: terms[j] ?? 0,
        };
      });
      return { kind: 'fusion', method: c.method, inputs, score };
    }
    case 'rerank': {
      const input = app.runs.byId(c.input);
      return {
        kind: 'rerank',
        model: c.modelId,
        input: input?.meta.name ?? c.input,
        inputRank: input ? (rankIn(input, queryId, docId)?.rank ?? null) : null,
        score,
      };
    }
    case 'import':
      return { kind: 'import', score };
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/**
 * A dense run over multi-image items (mean or max-sim), recomputed as the run scored it: every image
 * of the document (the corpus cache) and of the query; mean → the cosines of the mean vectors; max →
 * the best (query image, document image) pair, each image fused with its side's text when it has one.
 */
async function explainImages(
  app: ExplainHost,
  spec: ModelSpec,
  plan: ReturnType<typeof densePlan>,
  mode: MultiImage,
  query: Query,
  doc: Doc,
  load: { device: Device; dtype: Dtype },
  score: number,
  fusion?: { mode: 'score' | 'feature'; textWeight: number },
): Promise<Extract<Explanation, { kind: 'dense' }>> {
  const s = app.library.shard!;
  const allImages = s.docs.facts.multiImageDocs > 0;
  let docText: Float32Array | null = null;
  let docImages: Float32Array | null = null;
  let dim = 0;
  for (const part of plan.docParts) {
    const e = await embedCorpus({
      shardHash: s.summary.hash,
      spec,
      part,
      batchSize: 32,
      load,
      ...(part === 'image' && allImages ? { allImages: true } : {}),
    });
    dim = e.dim;
    const i = e.docIds.indexOf(doc.id);
    if (i < 0 || e.missing.includes(doc.id)) continue;
    if (part === 'text') docText = e.embeddings.slice(i * dim, (i + 1) * dim);
    else if (e.chunks) {
      const rows: number[] = [];
      e.chunks.rowDoc.forEach((d, r) => d === i && rows.push(r));
      docImages = new Float32Array(rows.length * dim);
      rows.forEach((r, j) => docImages!.set(e.embeddings.subarray(r * dim, (r + 1) * dim), j * dim));
    } else docImages = e.embeddings.slice(i * dim, (i + 1) * dim);
  }
  if (!docText && !docImages)
    throw new Error(`document ${doc.id} has no embedding for ${spec.label ?? spec.id}`);
  const qText =
    plan.queryParts.includes('text') && query.text ? await embedTexts([query.text], 'query') : null;
  const paths = plan.queryParts.includes('image') ? itemImagePaths(query) : [];
  let qImages: Float32Array | null = null;
  if (paths.length) {
    const blobs = (
      await withShardStore((store) => Promise.all(paths.map((p) => store.getImage(s.summary.hash, p))))
    ).filter((b): b is Blob => !!b);
    if (blobs.length) qImages = await embedImages(blobs);
  }
  const nq = qImages ? qImages.length / dim : 0;
  const nd = docImages ? docImages.length / dim : 0;
  const docImageRefs: ImageRef[] = doc.images ?? (doc.image ? [{ path: doc.image }] : []);
  const model = spec.label ?? spec.id;
  if (mode === 'max' && nd > 0 && plan.docParts.includes('image')) {
    // The rows the retrieval worker searched: document images (fused with the text), query images
    // (each fused with the query text; one image: text and image fused).
    const docRows = new Float32Array(nd * dim);
    for (let j = 0; j < nd; j++) {
      const v = docImages!.subarray(j * dim, (j + 1) * dim);
      docRows.set(docText ? fuseFeatures(docText, v) : v, j * dim);
    }
    const qn = Math.max(nq, 1);
    const qRows = new Float32Array(qn * dim);
    for (let i = 0; i < qn; i++) {
      const v = qImages ? qImages.subarray(i * dim, (i + 1) * dim) : null;
      qRows.set(v && qText ? fuseFeatures(qText, v) : (v ?? qText!), i * dim);
    }
    const best = bestChunkPair(qRows, docRows, dim);
    return {
      kind: 'dense',
      model,
      parts: [],
      score,
      images: {
        mode,
        queryCount: nq,
        docCount: nd,
        best: {
          query: best.query + 1,
          doc: best.doc + 1,
          cosine: best.cosine,
          docImage: docImageRefs[best.doc] ?? { path: '' },
          ...(paths[best.query] ? { queryImage: paths[best.query] } : {}),
        },
      },
    };
  }
  // mean (or max where documents have one vector): the mean image vectors, as the run used them.
  const docImage = docImages ? meanOfChunks(docImages, [nd], dim, spec.normalize) : null;
  const docVec = docText && docImage ? fuseFeatures(docText, docImage) : l2normalize((docImage ?? docText)!);
  const q: Partial<Record<EmbedPart, Float32Array>> = {};
  if (qText) q.text = l2normalize(qText);
  if (qImages) q.image = meanOfChunks(qImages, [nq], dim, true);
  const parts = (Object.entries(q) as [EmbedPart, Float32Array][]).map(([part, v]) => ({
    part,
    cosine: dot(v, docVec),
  }));
  return {
    kind: 'dense',
    model,
    parts,
    fused: fusedValue(fusion, q, docVec),
    score,
    images: { mode: 'mean', queryCount: nq, docCount: nd },
  };
}

/** How the run combined a query's text and image against the document vector, and the value (both parts only). */
function fusedValue(
  fusion: { mode: 'score' | 'feature'; textWeight: number } | undefined,
  q: Partial<Record<EmbedPart, Float32Array>>,
  doc: Float32Array,
): Extract<Explanation, { kind: 'dense' }>['fused'] {
  if (!fusion || !q.text || !q.image) return undefined;
  const w = fusion.textWeight;
  const value =
    fusion.mode === 'score'
      ? w * dot(q.text, doc) + (1 - w) * dot(q.image, doc)
      : dot(fuseFeatures(q.text, q.image), doc);
  return { mode: fusion.mode, textWeight: w, value };
}
