// Runs as stored objects: what produced them (retriever configuration) and a compact,
// structured-clone friendly encoding of their ranked lists.
import type { ReferenceCheck } from './reference-check';
import type { Run } from '../types';
import { describeChunking, type Chunking } from './chunking';
import { describeMultiImage, type MultiImage } from './multi-image';
import type { IvfRunInfo } from './ivf-report';
import type { QueryLatency } from '../eval/approximation';
import { describeTuning, type FusionTuning } from './fusion-record';

/** How a run was produced. Every field is needed to reproduce it. */
export type RetrieverConfig =
  | { kind: 'bm25'; k1: number; b: number; lossyLengths: boolean }
  | {
      kind: 'dense';
      modelId: string;
      revision: string;
      dtype: string;
      device: string;
      /** Why it ran on `device` (e.g. "software WebGPU adapter (SwiftShader) — using WASM"); absent on older runs. */
      deviceReason?: string;
      /** Which query parts were used and how they were combined (image + text queries). */
      fusion?: {
        mode: 'score' | 'feature';
        textWeight: number;
        /** Score fusion at `textWeight` ranked every query exactly like this run, so it was not stored twice. */
        sameAsScore?: boolean;
      };
      /**
       * How texts longer than the model's window were embedded (core/chunking.ts): windows overlapping
       * by `overlap` tokens, aggregated by mean or max. Absent: truncated to the first window.
       */
      chunking?: Chunking;
      /** Multi-image items scored by every image (core/multi-image.ts): mean or max. Absent: the first image. */
      multiImage?: MultiImage;
      /** Ranked through the compact vector store (large corpora): int8 scan, exact rescoring of the top R. */
      index?: VectorIndex;
      /** Approximate search (HNSW) instead of exact, with its recall@10 against exact on this run. */
      ann?: {
        kind: 'hnsw';
        M: number;
        efConstruction: number;
        efSearch: number;
        recallAt10: number;
        /** Recall@10 against exact search and queries/s of this index over ef (the recall–QPS chart). */
        curve?: { efSearch: number; recall: number; qps: number }[];
        /** Search times of a sample of the queries searched one at a time at efSearch (clients/index-client.ts, searchHnswRuns). */
        latency?: QueryLatency;
      };
      /** Searched through the shard's packed IVF-int8 index on its host (Range reads), with what it cost. */
      ivf?: IvfRunInfo;
      /**
       * Exact search (the retrieval worker) or the compact store's scan (the index worker): each
       * query's own search time there, scoring and top k, not its embedding (RankedList.ms).
       */
      latency?: QueryLatency;
      /** What Loupe did and why (core/retrieval/dense-plan.ts); absent on older runs. */
      plan?: { does: string; why: string }[];
      /** The check of the shard's reference vectors the corpus came from (reference-check.ts). */
      reference?: ReferenceCheck;
    }
  | {
      kind: 'fusion';
      method: string;
      params: Record<string, number | string>;
      inputs: string[];
      /** Parameters tuned by cross-validation (core/fusion-tuning.ts): folds and per-fold parameters. */
      tuning?: FusionTuning;
    }
  | { kind: 'import'; fileName: string; tag: string }
  | {
      /** The top N of run `input` reordered by a cross-encoder (core/rerank.ts); the rest kept below. */
      kind: 'rerank';
      modelId: string;
      revision: string;
      dtype: string;
      device: string;
      /** Why it ran on `device` (as for dense runs). */
      deviceReason?: string;
      topN: number;
      /** Id of the reranked run. */
      input: string;
    };

/** The compact store's search (workers/index/compact-store.ts): every int8 code scanned, the best `rerank` rescored exactly. */
export interface VectorIndex {
  kind: 'int8-rescore';
  rerank: number;
  /** The two-pass scan: a 4-bit first pass over every row, int8 scores of its best `candidates` (absent: full int8 scan). */
  firstPass?: { bits: 4; candidates: number };
}

/** How a run's compact index reads in its description. */
export function describeVectorIndex(i: VectorIndex): string {
  return i.firstPass
    ? `4-bit scan, int8 rescoring of the best ${i.firstPass.candidates}, exact rescoring of top ${i.rerank}`
    : `int8 scan + exact rescoring of top ${i.rerank}`;
}

/** STORED_RUN_VERSION: bump when the encoding changes; older records are dropped on read. */
export const STORED_RUN_VERSION = 1;

export interface RunMeta {
  id: string;
  name: string;
  shardHash: string;
  shardName: string;
  taskId: string;
  config: RetrieverConfig;
  depth: number;
  createdAt: string;
  /** Wall time to produce the run, milliseconds (0 for imports). */
  ms: number;
  tag: string;
  /**
   * Made with a generated test model (deterministic random weights), directly or through an input
   * run: its metrics measure the pipeline, not retrieval quality. Absent on older stored runs.
   */
  randomWeights?: boolean;
}

/** A run as stored in IndexedDB: metadata plus ranked lists flattened into parallel arrays. */
export interface StoredRun extends RunMeta {
  version: number;
  queryIds: string[];
  /** Number of ranked docs of each query, in queryIds order. */
  counts: Uint32Array;
  docIds: string[];
  scores: Float64Array;
}

export function encodeRun(meta: RunMeta, run: Run): StoredRun {
  const queryIds = [...run.keys()];
  const counts = new Uint32Array(queryIds.length);
  const docIds: string[] = [];
  const scores: number[] = [];
  queryIds.forEach((q, i) => {
    const list = run.get(q)!;
    counts[i] = list.length;
    for (const d of list) {
      docIds.push(d.docId);
      scores.push(d.score);
    }
  });
  return {
    ...meta,
    version: STORED_RUN_VERSION,
    queryIds,
    counts,
    docIds,
    scores: Float64Array.from(scores),
  };
}

/** Decodes a stored run; throws on a record that does not add up (the caller drops it). */
export function decodeRun(s: StoredRun): { meta: RunMeta; run: Run } {
  if (s.version !== STORED_RUN_VERSION)
    throw new Error(`stored run format ${s.version} is not ${STORED_RUN_VERSION}`);
  let total = 0;
  for (const c of s.counts) total += c;
  if (s.counts.length !== s.queryIds.length || total !== s.docIds.length || total !== s.scores.length)
    throw new Error(`stored run ${s.id} is inconsistent`);
  const run: Run = new Map();
  let o = 0;
  s.queryIds.forEach((q, i) => {
    const list = [];
    for (let j = 0; j < s.counts[i]; j++, o++) list.push({ docId: s.docIds[o], score: s.scores[o] });
    run.set(q, list);
  });
  const { version: _v, queryIds: _q, counts: _c, docIds: _d, scores: _s, ...meta } = s;
  return { meta, run };
}

/** A TREC run tag (no whitespace) describing a configuration. */
export function runTag(c: RetrieverConfig): string {
  switch (c.kind) {
    case 'bm25':
      return `loupe-bm25-k1_${c.k1}-b_${c.b}`;
    case 'dense':
      return `loupe-dense-${c.modelId.replace(/[^\w.-]+/g, '_')}-${c.dtype}${c.fusion ? `-${c.fusion.mode}${c.fusion.textWeight}` : ''}${c.ann ? `-hnsw_ef${c.ann.efSearch}` : ''}${c.ivf ? `-ivf${c.ivf.nlist}_np${c.ivf.nprobe}` : ''}${c.index ? `${c.index.firstPass ? `-4b${c.index.firstPass.candidates}` : ''}-int8r${c.index.rerank}` : ''}${c.chunking && c.chunking.aggregate !== 'first' ? `-chunk${c.chunking.aggregate}_o${c.chunking.overlap}` : ''}${c.multiImage ? `-images_${c.multiImage}` : ''}`;
    case 'fusion':
      return `loupe-${c.method}-${c.inputs.length}runs${c.tuning ? `-cv${c.tuning.folds.length}` : ''}`;
    case 'import':
      return c.tag.replace(/\s+/g, '_') || 'imported';
    case 'rerank':
      return `loupe-rerank${c.topN}-${c.modelId.replace(/[^\w.-]+/g, '_')}-${c.dtype}`;
  }
}

/** Why a neural run (dense, rerank) ran on its device, when recorded. */
export function deviceNote(c: RetrieverConfig): string | undefined {
  return c.kind === 'dense' || c.kind === 'rerank' ? c.deviceReason : undefined;
}

/** A short human description of a configuration, with the device's reason for neural runs. */
export function describeConfig(c: RetrieverConfig): string {
  const note = deviceNote(c);
  return note ? `${describeSettings(c)} · ${note}` : describeSettings(c);
}

/** describeConfig without the device's reason. */
function describeSettings(c: RetrieverConfig): string {
  switch (c.kind) {
    case 'bm25':
      return `BM25 k1=${c.k1} b=${c.b}`;
    case 'dense':
      return `${c.modelId} (${c.dtype}, ${c.device})${c.fusion ? (c.fusion.sameAsScore ? ` · feature fusion (= score fusion at text weight ${c.fusion.textWeight}: identical rankings)` : c.fusion.mode === 'feature' ? ' · feature fusion' : ` · score fusion, text weight ${c.fusion.textWeight}`) : ''}${c.ann ? ` · HNSW M=${c.ann.M} efC=${c.ann.efConstruction} ef=${c.ann.efSearch}, recall@10 vs exact ${c.ann.recallAt10.toFixed(4)}` : ''}${c.ivf ? ` · packed IVF-int8 index, ${c.ivf.nlist} lists, nprobe ${c.ivf.nprobe}, exact rescoring of the top ${c.ivf.rerank}` : ''}${c.index ? ` · ${describeVectorIndex(c.index)}` : ''}${describeChunking(c.chunking) ? ` · ${describeChunking(c.chunking)}` : ''}${c.multiImage ? ` · ${describeMultiImage(c.multiImage)}` : ''}`;
    case 'fusion':
      return `${c.method} of ${c.inputs.length} runs${c.tuning ? ` · ${describeTuning(c.tuning)}` : ''}`;
    case 'import':
      return `imported from ${c.fileName}`;
    case 'rerank':
      return `top ${c.topN} reranked by ${c.modelId} (${c.dtype}, ${c.device})`;
  }
}

/** Generated test models (deterministic random weights, `npm run models`) have ids under `loupe-test/`. */
export function isTestModel(modelId: string): boolean {
  return modelId.startsWith('loupe-test/');
}

/** Whether a configuration names a test model itself (fusion and rerank inputs are checked by the caller). */
export function configUsesTestModel(c: RetrieverConfig): boolean {
  return (c.kind === 'dense' || c.kind === 'rerank') && isTestModel(c.modelId);
}

/**
 * A key equal for two configurations that produce the same ranking: what a run list uses to find
 * an existing run instead of adding a duplicate. Measured side data (HNSW recall) is left out.
 */
export function configKey(c: RetrieverConfig, taskId: string, depth: number): string {
  const { ...copy } = c as Record<string, unknown>;
  if (c.kind === 'dense' && c.ann)
    copy.ann = { ...c.ann, recallAt10: undefined, curve: undefined, latency: undefined };
  // Search times depend on the machine, not the ranking.
  delete copy.latency;
  // What a packed-index run transferred depends on the cache, not on the ranking.
  if (c.kind === 'dense' && c.ivf) {
    const { kind, n, nlist, nprobe, rerank } = c.ivf;
    copy.ivf = { kind, n, nlist, nprobe, rerank };
  }
  if (c.kind === 'fusion') copy.inputs = [...c.inputs].sort();
  // Why a backend was chosen, and the plan's words, describe the run: not part of what produced the ranking.
  delete copy.deviceReason;
  delete copy.plan;
  return JSON.stringify([taskId, depth, sortKeys(copy)]);
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  return v;
}
