// Cross-encoders (rerankers): query–document pairs through the model's pair template (the closing
// separator put back on truncated pairs), logits turned into scores by the spec's activation.
import * as Comlink from 'comlink';
import type { Tensor } from '@huggingface/transformers';
import {
  DEFAULT_MAX_TOKENS,
  isCrossEncoder,
  modelPath,
  rerankScore,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';
import { clipWords } from '../../src/lib/core/retrieval/rerank';
import { checkBatchSize } from '../../src/lib/core/retrieval/corpus-batches';
import { throttle } from '../../src/lib/core/throttle';
import { onActive } from './session';
import { floatData } from './text';
import type { Encoder, OnProgress } from './types';

/** A cross-encoder's activation must fit its number of logits (one for none/sigmoid, two or more for softmax). */
export function checkActivation(spec: ModelSpec, labels: number): void {
  const a = spec.activation ?? 'none';
  if (a === 'softmax-positive' ? labels < 2 : labels !== 1)
    throw new Error(
      `${spec.id}: activation "${a}" does not fit a model with ${labels} logit${labels === 1 ? '' : 's'} per pair`,
    );
}

/**
 * A cross-encoder's logits for (query, doc) pairs: `[CLS] query [SEP] doc [SEP]` (the tokenizer's pair
 * template, token types 0 then 1), padded to the longest pair and truncated at maxTokens.
 *
 * transformers.js truncates a pair by cutting the end of the whole sequence, which drops the closing
 * [SEP]; it is put back on every truncated row, so a long document is cut as Python's `longest_first` /
 * `only_second` cut it (the query stays whole unless it alone is longer than maxTokens).
 */
export async function pairLogits(
  enc: Encoder,
  spec: ModelSpec,
  query: string,
  docs: string[],
): Promise<{ logits: Float32Array; labels: number }> {
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  const inputs = enc.tokenizer(
    docs.map(() => spec.queryPrefix + query),
    {
      // Words beyond maxTokens cannot be in the pair: clipping first spares tokenizing long documents.
      text_pair: docs.map((d) => spec.docPrefix + clipWords(d, maxTokens)),
      padding: true,
      truncation: true,
      max_length: maxTokens,
    },
  ) as Record<string, Tensor>;
  const ids = inputs.input_ids;
  const [n, len] = ids.dims as number[];
  const end = enc.pairEnd;
  if (end !== undefined) {
    const idData = ids.data as BigInt64Array;
    const mask = inputs.attention_mask.data as BigInt64Array;
    for (let i = 0; i < n; i++) {
      const last = i * len + len - 1;
      if (mask[last] !== 0n && idData[last] !== end) idData[last] = end;
    }
  }
  const out = (await enc.textModel(inputs)) as Record<string, Tensor>;
  const t = out.logits;
  if (!t) throw new Error(`${spec.id}: the model has no logits output`);
  const labels = (t.dims as number[])[1] ?? 1;
  return { logits: floatData(t), labels };
}

/** Scores one batch of pairs with the spec's activation. */
async function scorePairBatch(
  enc: Encoder,
  spec: ModelSpec,
  query: string,
  docs: string[],
): Promise<Float32Array> {
  const { logits, labels } = await pairLogits(enc, spec, query, docs);
  checkActivation(spec, labels);
  const scores = new Float32Array(docs.length);
  for (let i = 0; i < docs.length; i++)
    scores[i] = rerankScore(logits, i * labels, labels, spec.activation ?? 'none');
  return scores;
}

/**
 * Scores (query, doc) pairs with the active cross-encoder, which must have been loaded for `spec`'s
 * files (load() first); the spec gives the prefixes, the truncation length and the activation.
 * Returns one score per document, higher = more relevant (transferred).
 */
export async function rerank(
  spec: ModelSpec,
  query: string,
  docs: string[],
  batchSize = 32,
  onProgress?: OnProgress,
) {
  checkBatchSize(batchSize);
  if (!isCrossEncoder(spec)) throw new Error(`${spec.id} is not a cross-encoder: it cannot rerank`);
  const report = throttle(onProgress);
  const out = new Float32Array(docs.length);
  for (let i = 0; i < docs.length; i += batchSize) {
    const part = docs.slice(i, i + batchSize);
    const scores = await onActive((enc) => {
      if (
        !isCrossEncoder(enc.spec) ||
        modelPath(enc.spec) !== modelPath(spec) ||
        enc.spec.revision !== spec.revision
      )
        throw new Error(
          `the active model is ${enc.spec.id}, not the cross-encoder ${spec.id}: load it first`,
        );
      return scorePairBatch(enc, spec, query, part);
    });
    out.set(scores, i);
    report({ kind: 'status', message: `Reranking: ${i + part.length} / ${docs.length} pairs` });
  }
  report.flush();
  return Comlink.transfer(out, [out.buffer]);
}
