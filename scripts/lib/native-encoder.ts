// Native ONNX Runtime (onnxruntime-node, MLAS on the CPU) running the same ONNX files the browser
// encoder worker loads, with the same tokenizer (transformers.js's AutoTokenizer, in Node), the same
// padding and truncation, and the same pooling and normalisation as workers/encoder.worker.ts. It is
// the reference for scripts/parity.ts, scripts/bench-encode.ts and tests/e2e/parity.test.ts.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import {
  AutoProcessor,
  AutoTokenizer,
  RawImage,
  env,
  type PreTrainedTokenizer,
  type Processor,
  type Tensor,
} from '@huggingface/transformers';
import {
  DEFAULT_MAX_TOKENS,
  prefixFor,
  type Dtype,
  type EmbedRole,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';

/** The repository's models/ folder (the browser's /models/). */
export const MODELS_DIR = resolve(import.meta.dirname, '../../models');

/** dtype → ONNX file suffix (transformers.js's naming). */
const SUFFIX: Partial<Record<Dtype, string>> = { fp32: '', fp16: '_fp16', q8: '_quantized' };

let configured = false;
/** transformers.js in Node: local files only (models/ as the model root). */
export function configureTransformers(): void {
  if (configured) return;
  env.allowLocalModels = true;
  env.allowRemoteModels = false;
  env.localModelPath = MODELS_DIR + '/';
  configured = true;
}

/** The registry entries (models/registry.json). */
export function registry(): ModelSpec[] {
  const json = JSON.parse(readFileSync(join(MODELS_DIR, 'registry.json'), 'utf8')) as { models: ModelSpec[] };
  return json.models;
}

/** A registry entry by id, with optional changes (e.g. a shorter maxTokens for a benchmark). */
export function registrySpec(id: string, overrides: Partial<ModelSpec> = {}): ModelSpec {
  const s = registry().find((m) => m.id === id);
  if (!s) throw new Error(`${id} is not in models/registry.json`);
  return { ...s, ...overrides };
}

/** Absolute folder of a local model (what transformers.js is given in Node: a 3-part relative name fails). */
export function localName(spec: ModelSpec): string {
  if (!spec.local) throw new Error(`${spec.id} is not a local model`);
  return join(MODELS_DIR, spec.localPath ?? spec.hubId);
}

/** Absolute path of one of a local model's ONNX files. */
export function onnxFile(spec: ModelSpec, tower: 'text' | 'vision', dtype: Dtype): string {
  const suffix = SUFFIX[dtype];
  if (suffix === undefined) throw new Error(`dtype ${dtype} is not handled here`);
  const base = spec.kind === 'text' ? 'model' : `${tower}_model`;
  return join(localName(spec), 'onnx', `${base}${suffix}.onnx`);
}

export interface NativeOptions {
  /** ORT intra-op threads (default 1). */
  threads?: number;
}

function sessionOptions(threads: number): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

/** Row-wise L2 normalisation in place (rows with norm 0 stay 0), as the worker does. */
export function l2normalizeRows(m: Float32Array, dim: number): void {
  for (let off = 0; off < m.length; off += dim) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += m[off + j] * m[off + j];
    if (s === 0) continue;
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) m[off + j] *= inv;
  }
}

/** Mean over the tokens whose mask is 1, or the first token, of [batch, tokens, hidden] (float32 sums). */
export function pool(
  h: Float32Array,
  dims: readonly number[],
  mask: ArrayLike<number | bigint>,
  how: 'mean' | 'cls',
): Float32Array {
  const [n, seq, dim] = dims;
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    if (how === 'cls') {
      out.set(h.subarray(i * seq * dim, i * seq * dim + dim), o);
      continue;
    }
    let count = 0;
    for (let t = 0; t < seq; t++) {
      if (Number(mask[i * seq + t]) === 0) continue;
      count++;
      const base = (i * seq + t) * dim;
      for (let j = 0; j < dim; j++) out[o + j] += h[base + j];
    }
    const inv = 1 / Math.max(count, 1e-9);
    for (let j = 0; j < dim; j++) out[o + j] *= inv;
  }
  return out;
}

export interface TokenizedBatch {
  feeds: Record<string, ort.Tensor>;
  mask: BigInt64Array;
  dims: number[];
}

/** A text encoder on native ORT: tokenize (transformers.js) → InferenceSession.run → pool → normalise. */
export class NativeTextEncoder {
  private constructor(
    readonly spec: ModelSpec,
    readonly dtype: Dtype,
    readonly threads: number,
    readonly tokenizer: PreTrainedTokenizer,
    readonly session: ort.InferenceSession,
  ) {}

  static async load(spec: ModelSpec, dtype: Dtype, opts: NativeOptions = {}): Promise<NativeTextEncoder> {
    if (spec.kind !== 'text' || spec.pooling === 'model')
      throw new Error(`${spec.id}: only text encoders with mean/cls pooling are handled natively`);
    configureTransformers();
    const threads = opts.threads ?? 1;
    const tokenizer = await AutoTokenizer.from_pretrained(localName(spec));
    const session = await ort.InferenceSession.create(onnxFile(spec, 'text', dtype), sessionOptions(threads));
    return new NativeTextEncoder(spec, dtype, threads, tokenizer, session);
  }

  /** Tokenizes as the worker does: role prefix, padding to the longest, truncation at maxTokens. */
  tokenize(texts: string[], role: EmbedRole): TokenizedBatch {
    const prefix = prefixFor(this.spec, role);
    const enc = this.tokenizer(
      texts.map((t) => prefix + t),
      {
        padding: this.spec.padToMax ? 'max_length' : true,
        truncation: true,
        max_length: this.spec.maxTokens ?? DEFAULT_MAX_TOKENS,
      },
    ) as Record<string, Tensor>;
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of this.session.inputNames) {
      const t = enc[name];
      if (!t) throw new Error(`${this.spec.id}: the tokenizer gave no ${name}`);
      feeds[name] = new ort.Tensor('int64', t.data as BigInt64Array, t.dims as number[]);
    }
    const mask = enc.attention_mask;
    return { feeds, mask: mask.data as BigInt64Array, dims: mask.dims as number[] };
  }

  /** Runs the model on a tokenized batch; returns pooled, normalised (n × dim) floats. */
  async run(batch: TokenizedBatch): Promise<Float32Array> {
    const out = await this.session.run(batch.feeds);
    const hidden = out.last_hidden_state ?? out.token_embeddings;
    if (!hidden) throw new Error(`${this.spec.id}: no last_hidden_state output`);
    const vecs = pool(
      hidden.data as Float32Array,
      hidden.dims,
      batch.mask,
      this.spec.pooling === 'cls' ? 'cls' : 'mean',
    );
    if (this.spec.normalize) l2normalizeRows(vecs, hidden.dims[2]);
    return vecs;
  }

  /** Embeds texts in batches of `batchSize` (same split as the worker's embedTexts). */
  async embed(texts: string[], role: EmbedRole, batchSize: number): Promise<Float32Array> {
    let out: Float32Array | null = null;
    for (let i = 0; i < texts.length; i += batchSize) {
      const v = await this.run(this.tokenize(texts.slice(i, i + batchSize), role));
      const dim = v.length / Math.min(batchSize, texts.length - i);
      out ??= new Float32Array(texts.length * dim);
      out.set(v, i * dim);
    }
    return out ?? new Float32Array(0);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

const processors = new Map<string, Promise<Processor>>();

/** transformers.js's image preprocessing in Node (sharp decode and resize): pixel_values and dims. */
export async function nodePixelValues(
  spec: ModelSpec,
  images: RawImage[],
): Promise<{ data: Float32Array; dims: number[] }> {
  configureTransformers();
  const name = localName(spec);
  let p = processors.get(name);
  if (!p) processors.set(name, (p = AutoProcessor.from_pretrained(name)));
  const px = ((await (await p)(images)) as Record<string, Tensor>).pixel_values;
  return { data: px.data as Float32Array, dims: px.dims as number[] };
}

/** A CLIP vision tower on native ORT, fed with pixel_values [n, 3, H, W]. */
export class NativeVisionEncoder {
  private constructor(
    readonly spec: ModelSpec,
    readonly dtype: Dtype,
    readonly threads: number,
    readonly session: ort.InferenceSession,
  ) {}

  static async load(spec: ModelSpec, dtype: Dtype, opts: NativeOptions = {}): Promise<NativeVisionEncoder> {
    if (spec.kind !== 'clip') throw new Error(`${spec.id}: only CLIP vision towers are handled natively`);
    configureTransformers();
    const threads = opts.threads ?? 1;
    const session = await ort.InferenceSession.create(
      onnxFile(spec, 'vision', dtype),
      sessionOptions(threads),
    );
    return new NativeVisionEncoder(spec, dtype, threads, session);
  }

  /** Runs the tower on pixel_values; returns normalised (n × projection) image_embeds. */
  async run(pixels: Float32Array, dims: number[]): Promise<Float32Array> {
    const out = await this.session.run({ pixel_values: new ort.Tensor('float32', pixels, dims) });
    const t = out.image_embeds;
    if (!t) throw new Error(`${this.spec.id}: the vision model has no image_embeds output`);
    const vecs = (t.data as Float32Array).slice();
    if (this.spec.normalize) l2normalizeRows(vecs, t.dims[1]);
    return vecs;
  }

  /** Runs pixel_values [n, 3, H, W] in batches of `batch` images; (n × projection) floats. */
  async runBatches(pixels: Float32Array, dims: number[], batch: number): Promise<Float32Array> {
    const n = dims[0];
    const per = pixels.length / n;
    const parts: Float32Array[] = [];
    for (let i = 0; i < n; i += batch) {
      const m = Math.min(batch, n - i);
      parts.push(await this.run(pixels.slice(i * per, (i + m) * per), [m, ...dims.slice(1)]));
    }
    return concat(parts);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

export function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Decodes an image file with transformers.js in Node (sharp). */
export async function readImage(path: string): Promise<RawImage> {
  return RawImage.fromBlob(new Blob([readFileSync(path)]));
}

// ---- small numeric helpers shared by the parity script, the benchmark and the e2e test ----------

/** Cosine of two rows. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? (na === nb ? 1 : 0) : dot / Math.sqrt(na * nb);
}

/** Row-wise cosines of two (n × dim) matrices. */
export function rowCosines(a: Float32Array, b: Float32Array, n: number): number[] {
  if (a.length !== b.length) throw new Error(`shape mismatch: ${a.length} vs ${b.length} floats`);
  const dim = a.length / n;
  return Array.from({ length: n }, (_, i) =>
    cosine(a.subarray(i * dim, (i + 1) * dim), b.subarray(i * dim, (i + 1) * dim)),
  );
}

export interface CosineStats {
  n: number;
  min: number;
  mean: number;
  /** Largest |a − b| over every element. */
  maxAbs: number;
}

export function cosineStats(a: Float32Array, b: Float32Array, n: number): CosineStats {
  const c = rowCosines(a, b, n);
  let maxAbs = 0;
  for (let i = 0; i < a.length; i++) maxAbs = Math.max(maxAbs, Math.abs(a[i] - b[i]));
  return { n, min: Math.min(...c), mean: c.reduce((s, x) => s + x, 0) / n, maxAbs };
}

/** Float32Array ↔ base64 (page.evaluate returns JSON; base64 keeps every bit). */
export function fromBase64(b64: string): Float32Array {
  const buf = Buffer.from(b64, 'base64');
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

/** Reads a BEIR jsonl file's rows. */
export function readJsonl<T>(path: string): T[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

/** The text a document is embedded from (as workers/encoder.worker.ts docText: title, a space, text). */
export function docText(d: { title?: string; text?: string }): string {
  return [d.title, d.text]
    .filter((s): s is string => !!s && !!s.trim())
    .join(' ')
    .trim();
}
