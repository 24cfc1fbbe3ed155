// Encoder worker: loads text and CLIP/SigLIP encoders and cross-encoders (rerankers) with
// transformers.js (WebGPU when it works, WASM otherwise), embeds texts and images, embeds a cached
// shard's corpus batch by batch with every batch stored in IndexedDB (so a cancelled, reloaded or
// closed run resumes where it stopped), and scores query–document pairs with a cross-encoder.
//
// This file only wires the modules in workers/encoder/ and exposes their calls:
//   environment.ts  transformers.js set-up, model-download failures, the WebGPU-failure error
//   model-cache.ts  the browser cache of model files, written once a load is over
//   load.ts         backend probe, model loading and warm-up, the WebGPU → WASM rule
//   parity.ts       WebGPU vs WASM parity check and single-query timing at load (device policy)
//   session.ts      the model cache and the active model every call runs on
//   text.ts         tokenizing, the text tower, pooling; windows.ts long texts cut into windows
//   image.ts        image decoding (DICOM included) and the vision tower
//   rerank.ts       cross-encoder pairs and scores
//   embed.ts        ad-hoc calls (one query, lists of texts)
//   corpus.ts       the resumable corpus-embedding job (its records: core/retrieval/corpus-batches)
//   reference.ts    the check of a shard's reference vectors against the active model (issue 37)
import * as Comlink from 'comlink';
import type { ModelSpec } from '../src/lib/core/retrieval/models';
import { fuseDocParts, type DocPart } from '../src/lib/core/retrieval/multi-image';
import { corpusCounters, embedCorpus } from './encoder/corpus';
import { embedQuery, embedTexts } from './encoder/embed';
import { embedImages } from './encoder/image';
import { load } from './encoder/load';
import { flushModelCache } from './encoder/model-cache';
import { checkReference, referenceSets } from './encoder/reference';
import { rerank } from './encoder/rerank';
import { activeBackend, simulateDeviceLoss } from './encoder/session';
import type { LoadOptions, LoadedEncoder, OnProgress } from './encoder/types';
import { chunkTexts, embedTextChunks } from './encoder/windows';

export type { LoadOptions, LoadedEncoder, QueryStages } from './encoder/types';
export type { EmbedCorpusRequest, EmbedCorpusResult } from './encoder/corpus';
export type { ReferenceIo, ReferenceRequest } from './encoder/reference';
export type { CorpusSink } from './encoder/stream';
export type { TextBatching } from './encoder/embed';
export type { EmbMetaRecord } from '../src/lib/core/retrieval/corpus-batches';
export { EMB_KIND, docText } from '../src/lib/core/retrieval/corpus-batches';

const api = {
  /** Loads (or reuses) a model and makes it the active one; falls back to WASM on any WebGPU failure. */
  load(spec: ModelSpec, opts: LoadOptions = {}, onProgress?: OnProgress): Promise<LoadedEncoder> {
    return load(spec, opts, onProgress);
  },
  /** Embeds texts with the active model (role picks the prefix); (texts × dim) floats, transferred. */
  embedTexts,
  /** Embeds images (decoded and preprocessed here) with the active CLIP/SigLIP model, transferred. */
  embedImages,
  /** Embeds one ad-hoc query's text and/or image with the time of each stage; transferred. */
  embedQuery,
  /** Embeds a cached shard's documents (text or image part), reusing every stored batch. */
  embedCorpus,
  /** Embeds every window of long texts (chunking mean/max): chunk vectors, chunks per text, token spans. */
  embedTextChunks,
  /** The decoded text of each window of one text (drill-down). */
  chunkTexts,
  /** The stored sets (or packed index) a run takes its corpus vectors from, as the active model fits them. */
  referenceSets,
  /** Embeds the probe of those sets here and compares it with their rows (documents and packed rows via `io`). */
  checkReference,
  /** A corpus's text and image parts as one matrix (core's fuseDocParts), off the page's thread; transferred. */
  fuseDocParts(req: {
    docIds: string[];
    dim: number;
    text: DocPart;
    image: DocPart;
    imageRowDoc?: Uint32Array;
  }) {
    const r = fuseDocParts(req.docIds, req.dim, req.text, req.image, req.imageRowDoc);
    return Comlink.transfer(r, [r.matrix.buffer, ...(r.rowDoc ? [r.rowDoc.buffer] : [])] as ArrayBuffer[]);
  },
  /** Scores (query, document) pairs with the active cross-encoder (loaded for that spec); transferred. */
  rerank,
  /** Writes the model files this worker downloaded to the browser cache (model-cache.ts); resolves when written. */
  flushModelCache(): Promise<void> {
    return flushModelCache();
  },
  /** Where the active model runs now (it moves to WASM if its GPU device is lost). */
  backend() {
    return activeBackend();
  },
  /** Corpus documents embedded, batches computed or reused, precomputed rows taken, since the worker started. */
  counters() {
    return corpusCounters();
  },
  /** Test only: destroys the GPU device ORT uses, as a driver reset would. Returns whether there was one. */
  simulateDeviceLoss(): boolean {
    return simulateDeviceLoss();
  },
};

export type EncoderWorkerApi = typeof api;
Comlink.expose(api);
