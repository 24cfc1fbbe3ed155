// Long texts (chunking mean/max): every text cut into windows of token ids (core/retrieval/chunking),
// each framed with the model's special tokens and the role's prefix, embedded in batches of similar
// length; and the two calls built on them (chunk vectors of texts, the decoded text of each window).
import * as Comlink from 'comlink';
import { Tensor } from '@huggingface/transformers';
import {
  DEFAULT_MAX_TOKENS,
  prefixFor,
  type EmbedRole,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';
import { DEFAULT_TOKEN_BUDGET, planBatches } from '../../src/lib/core/retrieval/batching';
import {
  checkChunking,
  chunkWindows,
  frameWindow,
  meanOfChunks,
  specialFrame,
  windowSize,
  type Chunking,
} from '../../src/lib/core/retrieval/chunking';
import { checkBatchSize } from '../../src/lib/core/retrieval/corpus-batches';
import { throttle } from '../../src/lib/core/throttle';
import { onActive } from './session';
import { LENGTH_CHUNK, runTextModel } from './text';
import type { Encoder, OnProgress } from './types';

/** How the tokenizer frames one sequence, and the tokens of a role's prefix. */
interface ChunkFrame {
  head: number[];
  tail: number[];
  prefix: number[];
  /** Content tokens per window (maxTokens minus special and prefix tokens). */
  size: number;
  /** Input names the tokenizer gives the model (input_ids, attention_mask, token_type_ids?). */
  inputs: string[];
  padId: number;
}

const frames = new WeakMap<Encoder, Map<string, ChunkFrame>>();

/**
 * The special tokens the tokenizer puts before and after a text (found by tokenizing a probe with
 * and without them), the prefix's tokens for `role`, and the window size they leave.
 */
function chunkFrame(enc: Encoder, spec: ModelSpec, role: EmbedRole): ChunkFrame {
  const prefix = prefixFor(spec, role);
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const k = `${prefix}\u0000${maxTokens}`;
  let byKey = frames.get(enc);
  if (!byKey) frames.set(enc, (byKey = new Map()));
  const hit = byKey.get(k);
  if (hit) return hit;
  const ids = (text: string, special: boolean) =>
    (
      enc.tokenizer(text, { add_special_tokens: special, return_tensor: false }) as unknown as {
        input_ids: number[];
      }
    ).input_ids;
  const probe = 'chunk probe';
  const framed = ids(probe, true);
  const bare = ids(probe, false);
  let head: number[];
  let tail: number[];
  try {
    ({ head, tail } = specialFrame(framed, bare));
  } catch {
    throw new Error(`${spec.id}: cannot find where the tokenizer puts its special tokens`);
  }
  // The prefix's own words: a trailing space would be a token of its own for SentencePiece (the
  // text's first word carries its space), so "query: " + text frames as "query: text" tokenizes.
  const prefixIds = prefix.trim() ? ids(prefix.trimEnd(), false) : [];
  const sample = enc.tokenizer(['a'], { padding: true }) as Record<string, Tensor>;
  const frame: ChunkFrame = {
    head,
    tail,
    prefix: prefixIds,
    size: windowSize(maxTokens, head.length + tail.length, prefixIds.length),
    inputs: Object.keys(sample),
    padId: Number((enc.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0),
  };
  byKey.set(k, frame);
  return frame;
}

/** Texts cut into framed windows: the ids of every window, chunks per text and each window's token span. */
export interface Windows {
  rows: number[][];
  counts: Uint32Array;
  /** 2 per window: start and end among the text's tokens (special and prefix tokens not counted). */
  spans: Uint32Array;
  /** Tokens of each text without special tokens (to decode a window's text). */
  tokens: number[][];
}

/** Cuts texts into framed windows (not truncated: every token of a long text is in some window). */
export function textWindows(
  enc: Encoder,
  spec: ModelSpec,
  texts: string[],
  role: EmbedRole,
  chunking: Chunking,
): Windows {
  const frame = chunkFrame(enc, spec, role);
  const overlap = chunking.overlap;
  if (overlap >= frame.size)
    throw new RangeError(
      `chunk overlap ${overlap} is not smaller than the ${frame.size}-token window of ${spec.label ?? spec.id}`,
    );
  const rows: number[][] = [];
  const spans: number[] = [];
  const counts = new Uint32Array(texts.length);
  const tokens: number[][] = [];
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    // Not truncated: every token of a long text is in some window.
    const { input_ids } = enc.tokenizer(texts.slice(i, i + LENGTH_CHUNK), {
      add_special_tokens: false,
      return_tensor: false,
    }) as unknown as { input_ids: number[][] };
    input_ids.forEach((ids, j) => {
      const ws = chunkWindows(ids.length, frame.size, overlap, chunking.aggregate);
      counts[i + j] = ws.length;
      tokens.push(ids);
      for (const w of ws) {
        rows.push(frameWindow(ids, w, frame));
        spans.push(w.start, w.end);
      }
    });
  }
  return { rows, counts, spans: Uint32Array.from(spans), tokens };
}

/** Tokens each text costs once cut into framed windows (for batching documents by cost). */
export function windowTokens(
  enc: Encoder,
  spec: ModelSpec,
  texts: string[],
  chunking: Chunking,
): Uint32Array {
  const out = new Uint32Array(texts.length);
  for (let i = 0; i < texts.length; i += LENGTH_CHUNK) {
    const w = textWindows(enc, spec, texts.slice(i, i + LENGTH_CHUNK), 'document', chunking);
    let r = 0;
    w.counts.forEach((c, j) => {
      for (let k = 0; k < c; k++, r++) out[i + j] += w.rows[r].length;
    });
  }
  return out;
}

/** Framed windows as model inputs, padded to the longest (or to maxTokens for padToMax models). */
function windowInputs(frame: ChunkFrame, spec: ModelSpec, rows: number[][]): Record<string, Tensor> {
  const len = spec.padToMax
    ? (spec.maxTokens ?? DEFAULT_MAX_TOKENS)
    : Math.max(1, ...rows.map((r) => r.length));
  const n = rows.length;
  const ids = new BigInt64Array(n * len).fill(BigInt(frame.padId));
  const mask = new BigInt64Array(n * len);
  rows.forEach((r, i) => {
    for (let t = 0; t < r.length; t++) {
      ids[i * len + t] = BigInt(r[t]);
      mask[i * len + t] = 1n;
    }
  });
  const out: Record<string, Tensor> = {
    input_ids: new Tensor('int64', ids, [n, len]),
    attention_mask: new Tensor('int64', mask, [n, len]),
  };
  if (frame.inputs.includes('token_type_ids'))
    out.token_type_ids = new Tensor('int64', new BigInt64Array(n * len), [n, len]);
  return out;
}

/**
 * Embeds framed windows in batches of similar length (sorted by length within the token budget),
 * returning their vectors in input order: (windows × dim).
 */
export async function embedWindows(
  enc: Encoder,
  spec: ModelSpec,
  role: EmbedRole,
  rows: number[][],
  batchSize: number,
  onDone?: (windows: number) => void,
): Promise<Float32Array> {
  const frame = chunkFrame(enc, spec, role);
  const plan = planBatches(
    rows.map((r) => r.length),
    { tokenBudget: DEFAULT_TOKEN_BUDGET, maxBatch: batchSize },
  );
  let out: Float32Array | null = null;
  for (let b = 0; b + 1 < plan.bounds.length; b++) {
    const pos = plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]);
    const part = Array.from(pos, (p) => rows[p]);
    const v = await runTextModel(enc, spec, windowInputs(frame, spec, part), part.length);
    const dim = v.length / part.length;
    const o = (out ??= new Float32Array(rows.length * dim));
    pos.forEach((p, i) => o.set(v.subarray(i * dim, (i + 1) * dim), p * dim));
    onDone?.(plan.bounds[b + 1]);
  }
  return out ?? new Float32Array(0);
}

/**
 * Chunk vectors of texts: (Σ counts × dim), the chunks of text 0 first, with counts, token spans and
 * each text's mean (texts × dim, normalised as the model normalises its vectors).
 */
export async function embedTextChunks(
  texts: string[],
  role: EmbedRole,
  chunking: Chunking,
  batchSize = 32,
  onProgress?: OnProgress,
): Promise<{ vectors: Float32Array; counts: Uint32Array; spans: Uint32Array; mean: Float32Array }> {
  checkBatchSize(batchSize);
  checkChunking(chunking);
  const report = throttle(onProgress);
  const r = await onActive(async (enc, spec) => {
    const w = textWindows(enc, spec, texts, role, chunking);
    const total = w.rows.length;
    const vectors = await embedWindows(enc, spec, role, w.rows, batchSize, (done) =>
      report({ kind: 'status', message: `Embedding ${texts.length} texts: ${done} / ${total} chunks` }),
    );
    const mean = meanOfChunks(vectors, w.counts, total ? vectors.length / total : 0, spec.normalize);
    return { vectors, counts: w.counts, spans: w.spans, mean };
  });
  report.flush();
  const buffers = [r.vectors.buffer, r.counts.buffer, r.spans.buffer, r.mean.buffer] as ArrayBuffer[];
  return Comlink.transfer(r, buffers);
}

/** The text of every window of one text (decoded from its tokens, special tokens left out), for the drill-down. */
export async function chunkTexts(text: string, role: EmbedRole, chunking: Chunking): Promise<string[]> {
  checkChunking(chunking);
  return onActive(async (enc, spec) => {
    const w = textWindows(enc, spec, [text], role, chunking);
    const ids = w.tokens[0];
    const out: string[] = [];
    for (let c = 0; c < w.counts[0]; c++)
      out.push(
        enc.tokenizer.decode(ids.slice(w.spans[2 * c], w.spans[2 * c + 1]), { skip_special_tokens: true }),
      );
    return out;
  });
}
