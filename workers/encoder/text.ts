// Text embedding: tokenizing (prefix, truncation at the model's window), the text tower's forward
// pass, pooling (mean over unmasked tokens, first token, or the model's own output) and L2
// normalisation; token counts for batching by length; the per-stage timing of an ad-hoc query.
import type { Tensor } from '@huggingface/transformers';
import {
  DEFAULT_MAX_TOKENS,
  isCrossEncoder,
  prefixFor,
  type EmbedRole,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';
import { clipWords } from '../../src/lib/core/retrieval/rerank';
import type { Encoder, QueryStages } from './types';

/** Collector of the embedQuery in progress (null otherwise: the corpus path measures nothing). */
export let stages: QueryStages | null = null;

/** Starts (a collector) or stops (null) measuring the stages of an ad-hoc query. */
export function measureStages(s: QueryStages | null): void {
  stages = s;
}

/** A tensor's values as float32 (fp16 outputs are converted). */
export function floatData(t: Tensor): Float32Array {
  const x = t.type === 'float32' ? t : t.to('float32');
  return x.data as Float32Array;
}

/** Scales each `dim`-long row of a row-major matrix to unit length, in place (zero rows stay zero). */
export function l2normalizeRows(m: Float32Array, dim: number): void {
  for (let off = 0; off < m.length; off += dim) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += m[off + j] * m[off + j];
    if (s === 0) continue;
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) m[off + j] *= inv;
  }
}

/** Mean over unmasked tokens or the first token of [batch, tokens, hidden]. */
function pool(hidden: Tensor, mask: Tensor, how: 'mean' | 'cls'): Float32Array {
  const [n, seq, dim] = hidden.dims as number[];
  const h = floatData(hidden);
  const m = mask.data as ArrayLike<number | bigint>;
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    if (how === 'cls') {
      out.set(h.subarray(i * seq * dim, i * seq * dim + dim), o);
      continue;
    }
    let count = 0;
    for (let t = 0; t < seq; t++) {
      if (Number(m[i * seq + t]) === 0) continue;
      count++;
      const base = (i * seq + t) * dim;
      for (let j = 0; j < dim; j++) out[o + j] += h[base + j];
    }
    const inv = 1 / Math.max(count, 1e-9);
    for (let j = 0; j < dim; j++) out[o + j] *= inv;
  }
  return out;
}

/** Embeds one batch of texts; returns (texts × dim) floats. */
export async function embedTextBatch(
  enc: Encoder,
  spec: ModelSpec,
  texts: string[],
  role: EmbedRole,
): Promise<Float32Array> {
  if (isCrossEncoder(spec) || isCrossEncoder(enc.spec))
    throw new Error(`${spec.id} is a cross-encoder: it scores query–document pairs and cannot embed`);
  const prefix = prefixFor(spec, role);
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const t0 = stages ? performance.now() : 0;
  const inputs = enc.tokenizer(
    // Words beyond maxTokens cannot survive truncation: clipping first spares tokenizing long documents.
    texts.map((t) => prefix + clipWords(t, maxTokens)),
    { padding: spec.padToMax ? 'max_length' : true, truncation: true, max_length: maxTokens },
  ) as Record<string, Tensor>;
  const t1 = stages ? performance.now() : 0;
  if (stages) stages.tokenizeMs += t1 - t0;
  return runTextModel(enc, spec, inputs, texts.length);
}

/** The text model's forward pass on tokenized inputs, pooled and normalised as the spec says: (n × dim). */
export async function runTextModel(
  enc: Encoder,
  spec: ModelSpec,
  inputs: Record<string, Tensor>,
  n: number,
): Promise<Float32Array> {
  const t1 = stages ? performance.now() : 0;
  const out = (await enc.textModel(inputs)) as Record<string, Tensor>;
  if (stages) stages.encodeMs += performance.now() - t1;
  let vecs: Float32Array;
  if (spec.pooling === 'model') {
    const t = spec.kind === 'clip' ? out.text_embeds : out.pooler_output;
    if (!t)
      throw new Error(
        `${spec.id}: the text model has no ${spec.kind === 'clip' ? 'text_embeds' : 'pooler_output'} output`,
      );
    vecs = floatData(t).slice();
  } else {
    const hidden = out.last_hidden_state ?? out.token_embeddings;
    if (!hidden) throw new Error(`${spec.id}: the model has no last_hidden_state output`);
    vecs = pool(hidden, inputs.attention_mask, spec.pooling);
  }
  const dim = vecs.length / n;
  if (spec.normalize) l2normalizeRows(vecs, dim);
  return vecs;
}

/** LENGTH_CHUNK: texts tokenized per call when counting tokens (bounds the arrays held at once). */
export const LENGTH_CHUNK = 256;

/** Token count of each text after truncation (special tokens and prefix included), for batching by length. */
export function textLengths(enc: Encoder, spec: ModelSpec, texts: string[], role: EmbedRole): Uint32Array {
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const out = new Uint32Array(texts.length);
  // Padded to the maximum anyway (CLIP text towers): every text costs the same.
  if (spec.padToMax) return out.fill(maxTokens);
  const prefix = prefixFor(spec, role);
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    const { input_ids } = enc.tokenizer(
      texts.slice(i, i + LENGTH_CHUNK).map((t) => prefix + clipWords(t, maxTokens)),
      { truncation: true, max_length: maxTokens, return_tensor: false },
    ) as unknown as { input_ids: number[][] };
    input_ids.forEach((ids, j) => (out[i + j] = ids.length));
  }
  return out;
}
