// Encoder model specs: what a registry entry (models/registry.json) or a user-typed custom entry
// must say for the encoder worker to load it and embed with the right pooling and prefixes (or, for
// a cross-encoder, score query–document pairs with the right activation), and the cache key of
// corpus embeddings. Pure: no DOM, no I/O.
import type { EmbedPart } from '../types';
import { isChunked, type Chunking } from './chunking';

/**
 * Which towers a model has: a text encoder, a CLIP/SigLIP dual encoder (text + image), or a
 * `cross-encoder` (a reranker: one sequence-classification model reading a query and a document
 * together and giving relevance logits; it embeds nothing).
 */
export type EncoderKind = 'text' | 'clip' | 'siglip' | 'cross-encoder';

/**
 * How a cross-encoder's logits become one relevance score per (query, document) pair:
 * - `none`: the raw logit (models with one label). What sentence-transformers' CrossEncoder.predict
 *   returns for models whose config sets `sbert_ce_default_activation_function` to Identity (the
 *   cross-encoder/ms-marco-* family).
 * - `sigmoid`: σ(logit) (one label), in (0, 1): sentence-transformers' default for one-label models
 *   without that config key, and what BGE's `normalize=True` gives. Monotone, so the ranking is the
 *   same as by the raw logit; but in float32 σ saturates at 1 for logits above ~17, which can turn
 *   distinct logits into ties, so `none` is preferred for ranking.
 * - `softmax-positive`: softmax over the labels, the probability of the last label (the "relevant"
 *   class of two-label models). Not the same ranking as any single logit.
 */
export type RerankActivation = 'none' | 'sigmoid' | 'softmax-positive';

/** How one vector is made from a model's output: mean over the attention mask, the [CLS] token, or the model's own projection. */
export type Pooling = 'mean' | 'cls' | 'model';

/** ONNX weight variants (transformers.js dtype names). */
export type Dtype = 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4' | 'q4f16';

export type { EmbedPart } from '../types';

/** Whether a text is embedded as a query or as a document (they may get different prefixes). */
export type EmbedRole = 'query' | 'document';

export const ENCODER_KINDS: readonly EncoderKind[] = ['text', 'clip', 'siglip', 'cross-encoder'];
export const RERANK_ACTIVATIONS: readonly RerankActivation[] = ['none', 'sigmoid', 'softmax-positive'];
export const POOLINGS: readonly Pooling[] = ['mean', 'cls', 'model'];
export const DTYPES: readonly Dtype[] = ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16'];

/** DEFAULT_MAX_TOKENS: tokens per text when a spec gives no `maxTokens` (BERT's position limit). */
export const DEFAULT_MAX_TOKENS = 512;

/** One encoder the app can load. */
export interface ModelSpec {
  /** Registry key, unique; also what the UI shows when there is no `label`. */
  id: string;
  /** Hugging Face model id (`owner/name`), the name transformers.js resolves. */
  hubId: string;
  /** Hub branch, tag or 40-hex commit ("main" unless a commit was checked). */
  revision: string;
  kind: EncoderKind;
  /**
   * `model` (the model's projected output) is the only pooling for CLIP and SigLIP; a cross-encoder's
   * is `model` too (its own classification head).
   */
  pooling: Pooling;
  /** L2-normalise every vector (then inner product = cosine). Always false for a cross-encoder. */
  normalize: boolean;
  /** Prepended to query texts (e.g. "query: "); for a cross-encoder, to the first text of each pair. */
  queryPrefix: string;
  /** Prepended to document texts (e.g. "passage: "); for a cross-encoder, to the second text of each pair. */
  docPrefix: string;
  /**
   * Embedding size; for a cross-encoder the number of logits per pair (its labels). 0 for a custom
   * entry whose size is learnt when it loads.
   */
  dim: number;
  /** Weight variants published for the model; the first is the default on WASM. */
  dtypes: Dtype[];
  license: string;
  /** Whether the files, pooling and prefixes were checked against the hub and the model card. */
  verified: boolean;
  note: string;
  /** Served from this app's own /models/ folder (never fetched from the hub). */
  local?: boolean;
  /** Folder under /models/ holding a local model (default: hubId). */
  localPath?: string;
  /** Tokens per text after truncation (default DEFAULT_MAX_TOKENS). */
  maxTokens?: number;
  /** Pad every text to maxTokens (SigLIP was trained that way). */
  padToMax?: boolean;
  /** Cross-encoders only (required there): how the logits become one score per pair. */
  activation?: RerankActivation;
  label?: string;
}

export type SpecResult = { ok: true; spec: ModelSpec } | { ok: false; errors: string[] };

const HUB_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
const LOCAL_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * Validates one registry entry (all fields required, as in models/registry.json). Returns every
 * problem found, not just the first.
 */
export function validateModelSpec(x: unknown): SpecResult {
  if (!isRecord(x)) return { ok: false, errors: ['a model entry must be an object'] };
  const errors: string[] = [];
  const str = (k: string, allowEmpty = false): string => {
    const v = x[k];
    if (typeof v !== 'string' || (!allowEmpty && v.trim() === '')) {
      errors.push(`${k} must be a ${allowEmpty ? '' : 'non-empty '}string`);
      return '';
    }
    return v;
  };
  const bool = (k: string): boolean => {
    if (typeof x[k] !== 'boolean') errors.push(`${k} must be true or false`);
    return x[k] === true;
  };
  const id = str('id');
  const hubId = str('hubId');
  if (hubId && !HUB_ID.test(hubId)) errors.push(`hubId "${hubId}" is not of the form owner/name`);
  if (hubId.includes('..')) errors.push('hubId must not contain ".."');
  const revision = str('revision');
  if (revision && (!REVISION.test(revision) || revision.includes('..')))
    errors.push(`revision "${revision}" is not a branch, tag or commit`);
  const kind = x.kind as EncoderKind;
  if (!ENCODER_KINDS.includes(kind)) errors.push(`kind must be one of ${ENCODER_KINDS.join(', ')}`);
  const pooling = x.pooling as Pooling;
  if (!POOLINGS.includes(pooling)) errors.push(`pooling must be one of ${POOLINGS.join(', ')}`);
  else if ((kind === 'clip' || kind === 'siglip') && pooling !== 'model')
    errors.push(`a ${kind} model's pooling must be "model" (its projected output)`);
  else if (kind === 'cross-encoder' && pooling !== 'model')
    errors.push('a cross-encoder\'s pooling must be "model" (its classification head)');
  else if (kind === 'text' && pooling === 'model') errors.push('a text model needs "mean" or "cls" pooling');
  const normalize = bool('normalize');
  if (kind === 'cross-encoder' && normalize)
    errors.push('a cross-encoder gives scores, not vectors: normalize must be false');
  const queryPrefix = str('queryPrefix', true);
  const docPrefix = str('docPrefix', true);
  const dim = x.dim;
  if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < 0 || dim > 65536)
    errors.push('dim must be an integer between 0 (unknown) and 65536');
  const dtypes = x.dtypes;
  if (!Array.isArray(dtypes) || dtypes.length === 0 || !dtypes.every((d) => DTYPES.includes(d as Dtype)))
    errors.push(`dtypes must be a non-empty list of ${DTYPES.join(', ')}`);
  else if (new Set(dtypes).size !== dtypes.length) errors.push('dtypes must not repeat');
  const license = str('license');
  const verified = bool('verified');
  const note = str('note', true);
  const optional: Partial<ModelSpec> = {};
  if (x.local !== undefined) {
    if (typeof x.local !== 'boolean') errors.push('local must be true or false');
    else optional.local = x.local;
  }
  if (x.localPath !== undefined) {
    if (typeof x.localPath !== 'string' || !LOCAL_PATH.test(x.localPath) || x.localPath.includes('..'))
      errors.push('localPath must be a relative folder path under /models/');
    else optional.localPath = x.localPath;
  }
  if (x.maxTokens !== undefined) {
    const m = x.maxTokens;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 2 || m > 8192)
      errors.push('maxTokens must be an integer between 2 and 8192');
    else optional.maxTokens = m;
  }
  if (x.padToMax !== undefined) {
    if (typeof x.padToMax !== 'boolean') errors.push('padToMax must be true or false');
    else optional.padToMax = x.padToMax;
  }
  if (x.label !== undefined) {
    if (typeof x.label !== 'string') errors.push('label must be a string');
    else optional.label = x.label;
  }
  if (kind === 'cross-encoder') {
    const a = x.activation as RerankActivation;
    if (!RERANK_ACTIVATIONS.includes(a))
      errors.push(`a cross-encoder needs an activation: one of ${RERANK_ACTIVATIONS.join(', ')}`);
    else {
      optional.activation = a;
      if (typeof dim === 'number' && dim > 0) {
        if (a !== 'softmax-positive' && dim !== 1)
          errors.push(`activation "${a}" needs a one-logit model (dim 1), not dim ${dim}`);
        if (a === 'softmax-positive' && dim < 2)
          errors.push('activation "softmax-positive" needs at least two logits (dim ≥ 2)');
      }
    }
  } else if (x.activation !== undefined) errors.push('activation is for cross-encoders only');
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    spec: {
      id,
      hubId,
      revision,
      kind,
      pooling,
      normalize,
      queryPrefix,
      docPrefix,
      dim: dim as number,
      dtypes: dtypes as Dtype[],
      license,
      verified,
      note,
      ...optional,
    },
  };
}

/** What a user types to add a model that is not in the registry; everything but hubId has a default. */
export interface CustomModelInput {
  hubId: string;
  revision?: string;
  kind?: EncoderKind;
  pooling?: Pooling;
  normalize?: boolean;
  queryPrefix?: string;
  docPrefix?: string;
  dim?: number;
  dtypes?: Dtype[];
  maxTokens?: number;
  /** Cross-encoders: default `none` (the raw logit). */
  activation?: RerankActivation;
}

/**
 * Validates a user-typed model: fills defaults (revision "main", mean pooling for text models,
 * normalised, no prefixes, fp32 + q8 weights, dim learnt on load; a cross-encoder is not normalised
 * and scores by the raw logit) and marks it unverified.
 * Whitespace around the hub id is ignored; a pasted hub URL is reduced to `owner/name`.
 */
export function customModelSpec(input: CustomModelInput): SpecResult {
  if (!isRecord(input)) return { ok: false, errors: ['a model entry must be an object'] };
  let hubId = typeof input.hubId === 'string' ? input.hubId.trim() : '';
  const fromUrl = /^https?:\/\/(?:www\.)?huggingface\.co\/([^/?#]+\/[^/?#]+)/.exec(hubId);
  if (fromUrl) hubId = fromUrl[1];
  const kind = input.kind ?? 'text';
  return validateModelSpec({
    id: `custom:${hubId}`,
    hubId,
    revision: input.revision?.trim() || 'main',
    kind,
    pooling: input.pooling ?? (kind === 'text' ? 'mean' : 'model'),
    normalize: input.normalize ?? kind !== 'cross-encoder',
    queryPrefix: input.queryPrefix ?? '',
    docPrefix: input.docPrefix ?? '',
    dim: input.dim ?? 0,
    dtypes: input.dtypes ?? ['fp32', 'q8'],
    license: 'unknown (see the model card)',
    verified: false,
    note: 'Added by hand; pooling and prefixes are as typed, not checked against the model card.',
    ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}),
    ...(kind === 'cross-encoder' ? { activation: input.activation ?? 'none' } : {}),
  });
}

/** A parsed models/registry.json: the valid entries, and a message per rejected one. */
export interface Registry {
  version: number;
  models: ModelSpec[];
  errors: string[];
}

/** Parses models/registry.json (`{ version, models: [...] }`); invalid or duplicate entries are dropped and reported. */
export function parseRegistry(json: unknown): Registry {
  if (!isRecord(json) || !Array.isArray(json.models))
    return { version: 0, models: [], errors: ['the registry must be an object with a "models" list'] };
  const models: ModelSpec[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  json.models.forEach((m, i) => {
    const r = validateModelSpec(m);
    const name = isRecord(m) && typeof m.id === 'string' ? m.id : `#${i}`;
    if (!r.ok) errors.push(`${name}: ${r.errors.join('; ')}`);
    else if (seen.has(r.spec.id)) errors.push(`${name}: duplicate id`);
    else {
      seen.add(r.spec.id);
      models.push(r.spec);
    }
  });
  return { version: typeof json.version === 'number' ? json.version : 0, models, errors };
}

/**
 * LOCAL_MODELS_PATH: URL path of the app's own model folder when the app is served at the origin
 * root (also transformers.js's env.localModelPath). Under a sub-path the encoder worker passes its
 * own (`/course/loupe/models/`) as `base` below.
 */
export const LOCAL_MODELS_PATH = '/models/';

/**
 * The name transformers.js loads: the hub id, or for a local model the absolute path of its folder
 * (`/models/generated/loupe-test/x`, under `base`). transformers.js fetches such a path as it is (it
 * is not an `owner/name` id, so env.localModelPath is not prepended) and never falls back to the hub.
 */
export function modelPath(spec: ModelSpec, base = LOCAL_MODELS_PATH): string {
  return spec.local ? base + (spec.localPath ?? spec.hubId) : spec.hubId;
}

/** The prefix a text gets for its role. */
export function prefixFor(spec: Pick<ModelSpec, 'queryPrefix' | 'docPrefix'>, role: EmbedRole): string {
  return role === 'query' ? spec.queryPrefix : spec.docPrefix;
}

/**
 * Whether a spec can embed that part of a document (images need a CLIP/SigLIP vision tower; a
 * cross-encoder embeds nothing).
 */
export function supportsPart(spec: Pick<ModelSpec, 'kind'>, part: EmbedPart): boolean {
  if (spec.kind === 'cross-encoder') return false;
  return part === 'text' || spec.kind !== 'text';
}

/** Whether a spec is a reranker (scores query–document pairs) rather than an embedding model. */
export function isCrossEncoder(spec: Pick<ModelSpec, 'kind'>): boolean {
  return spec.kind === 'cross-encoder';
}

/**
 * One relevance score from a pair's logits (`n` of them, at `offset` in `logits`) with the spec's
 * activation; see RerankActivation. Computed in double precision.
 */
export function rerankScore(
  logits: ArrayLike<number>,
  offset: number,
  n: number,
  activation: RerankActivation,
): number {
  if (activation === 'softmax-positive') {
    let max = -Infinity;
    for (let j = 0; j < n; j++) max = Math.max(max, logits[offset + j]);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += Math.exp(logits[offset + j] - max);
    return Math.exp(logits[offset + n - 1] - max) / sum;
  }
  const x = logits[offset];
  return activation === 'sigmoid' ? 1 / (1 + Math.exp(-x)) : x;
}

/**
 * WEBGPU_FAILED: the error name with which the encoder worker reports any WebGPU failure (session
 * creation, warm-up, a run, a lost device); the client then restarts it on WASM.
 */
export const WEBGPU_FAILED = 'WebGpuFailedError';
/**
 * A WebGPU load in an encoder worker that started ONNX Runtime's plain WASM build (which has no
 * WebGPU): the client starts a fresh worker, which takes the asyncify build, and loads there.
 */
export const ORT_BUILD_RESTART = 'OrtBuildRestartError';

/**
 * MODEL_FETCH_FAILED: the error name with which the encoder worker reports that a model file could
 * not be downloaded (offline, host unreachable). It is never a WebGPU failure: no WASM retry.
 */
export const MODEL_FETCH_FAILED = 'ModelFetchFailedError';

/** EMBEDDING_KEY_VERSION: bump when the stored embedding layout or the text/image preparation changes (2: batches by length, plan stored). */
export const EMBEDDING_KEY_VERSION = 2;

export interface EmbeddingKeyInput {
  shardHash: string;
  modelId: string;
  revision: string;
  dtype: string;
  queryPrefix: string;
  docPrefix: string;
  pooling: Pooling;
  normalize: boolean;
  part: EmbedPart;
  /** Only when a spec sets it (it changes the vectors); omitted keys stay as they were. */
  maxTokens?: number;
  /**
   * Texts cut into windows overlapping by this many tokens (chunking `mean` or `max`: both read the
   * same chunk vectors); absent for truncation (`first`), whose keys stay as they were.
   */
  chunkOverlap?: number;
  /** Every image of multi-image items (one row per image), not the first only. */
  allImages?: boolean;
}

/**
 * The cache key of a shard's corpus embeddings: every input that changes the vectors, in a fixed
 * order, free-text fields percent-encoded so the key never contains `|` or `#` from user input
 * (batch records are stored as `<key>#<batchNo>`).
 */
export function embeddingKey(k: EmbeddingKeyInput): string {
  const e = encodeURIComponent;
  return [
    `emb-v${EMBEDDING_KEY_VERSION}`,
    `shard=${e(k.shardHash)}`,
    `model=${e(k.modelId)}@${e(k.revision)}`,
    `dtype=${e(k.dtype)}`,
    `pool=${k.pooling}`,
    `norm=${k.normalize ? 1 : 0}`,
    `part=${k.part}`,
    `qp=${e(k.queryPrefix)}`,
    `dp=${e(k.docPrefix)}`,
    ...(k.maxTokens !== undefined ? [`max=${k.maxTokens}`] : []),
    ...(k.chunkOverlap !== undefined ? [`chunks=o${k.chunkOverlap}`] : []),
    ...(k.allImages ? ['images=all'] : []),
  ].join('|');
}

/** The embedding key of a shard's `part` embedded by `spec` at `dtype` (the worker's and the page's). */
export function corpusEmbeddingKey(
  shardHash: string,
  spec: ModelSpec,
  dtype: Dtype,
  part: EmbedPart,
  chunking?: Chunking,
  allImages = false,
): string {
  return embeddingKey({
    shardHash,
    modelId: spec.id,
    revision: spec.revision,
    dtype,
    queryPrefix: spec.queryPrefix,
    docPrefix: spec.docPrefix,
    pooling: spec.pooling,
    normalize: spec.normalize,
    part,
    ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
    // Only text is chunked; images are one vector whatever the setting.
    ...(part === 'text' && isChunked(chunking) ? { chunkOverlap: chunking.overlap } : {}),
    ...(part === 'image' && allImages ? { allImages: true } : {}),
  });
}
