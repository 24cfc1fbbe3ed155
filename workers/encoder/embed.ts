// Ad-hoc embedding calls on the active model: one query (text and/or image, with the time of each
// stage) and lists of texts batched by length.
import * as Comlink from 'comlink';
import type { EmbedRole } from '../../src/lib/core/retrieval/models';
import { DEFAULT_TOKEN_BUDGET, planBatches } from '../../src/lib/core/retrieval/batching';
import { checkBatchSize } from '../../src/lib/core/retrieval/corpus-batches';
import { throttle } from '../../src/lib/core/throttle';
import { decode, embedImageBatch } from './image';
import { onActive, onQuery } from './session';
import { embedTextBatch, measureStages, textLengths } from './text';
import type { OnProgress, QueryStages } from './types';

/**
 * Embeds one ad-hoc query, its text and/or image, in one call (one round trip for image + text),
 * with the time each stage took. Vectors transferred.
 */
export async function embedQuery(text: string | null, image: Blob | null) {
  const own: QueryStages = { tokenizeMs: 0, preprocessMs: 0, encodeMs: 0 };
  measureStages(own);
  try {
    // Single text queries run where they were measured faster at load (device-policy.ts).
    const t = text ? await onQuery((enc, spec) => embedTextBatch(enc, spec, [text], 'query')) : null;
    let v: Float32Array | null = null;
    if (image) {
      const t0 = performance.now();
      const decoded = await decode(image, 'the query image');
      own.preprocessMs += performance.now() - t0;
      v = await onActive((enc, spec) => embedImageBatch(enc, spec, [decoded]));
    }
    const buffers = [t, v].flatMap((x) => (x ? [x.buffer as ArrayBuffer] : []));
    return Comlink.transfer({ text: t, image: v, stages: own }, buffers);
  } finally {
    measureStages(null);
  }
}

/** How embedTexts batches. */
export interface TextBatching {
  /** Padded tokens per batch at most (default DEFAULT_TOKEN_BUDGET). */
  tokenBudget?: number;
  /** false: batches of `batchSize` in input order, padded to their longest text (benchmarks only). */
  byLength?: boolean;
}

/**
 * Embeds texts in batches of similar length (the corpus path's batching), vectors in input order.
 * A single text skips the token count.
 */
export async function embedTexts(
  texts: string[],
  role: EmbedRole,
  batchSize = 32,
  onProgress?: OnProgress,
  batching: TextBatching = {},
) {
  checkBatchSize(batchSize);
  const report = throttle(onProgress);
  const byLength = batching.byLength !== false && texts.length > 1;
  // One text query: where single queries were measured faster at load; batches stay on the model's device.
  const on = texts.length === 1 && role === 'query' ? onQuery : onActive;
  const lengths = byLength
    ? await onActive(async (enc, spec) => textLengths(enc, spec, texts, role))
    : new Uint32Array(texts.length).fill(1);
  const plan = planBatches(lengths, {
    tokenBudget: byLength ? (batching.tokenBudget ?? DEFAULT_TOKEN_BUDGET) : Infinity,
    maxBatch: batchSize,
  });
  let out: Float32Array | null = null;
  let done = 0;
  for (let b = 0; b + 1 < plan.bounds.length; b++) {
    const pos = plan.order.subarray(plan.bounds[b], plan.bounds[b + 1]);
    const part = Array.from(pos, (p) => texts[p]);
    const v = await on((enc, spec) => embedTextBatch(enc, spec, part, role));
    const dim = v.length / pos.length;
    const o = (out ??= new Float32Array(texts.length * dim));
    pos.forEach((p, i) => o.set(v.subarray(i * dim, (i + 1) * dim), p * dim));
    done += pos.length;
    report({
      kind: 'embed',
      done,
      total: texts.length,
      docsPerSec: 0,
      items: role === 'query' ? 'queries' : 'texts',
    });
  }
  report.flush();
  out ??= new Float32Array(0);
  // Transferred: the page owns the buffer afterwards, this worker keeps no reference.
  return Comlink.transfer(out, [out.buffer]);
}
