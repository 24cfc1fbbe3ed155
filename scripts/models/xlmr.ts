// XLM-RoBERTa (XLMRobertaModel): the BERT encoder without token types, <pad> = 1, RoBERTa's positions,
// and an embedding table as large as the generated SentencePiece (Unigram) vocabulary.

import { bertGraph, bertConfig, bertWeights } from './bert';
import type { ModelParts } from './onnx-graph';
import type { BertShape, ModelSpec } from './specs';
import type { WeightStore } from './weights';

/** config.json of XLMRobertaModel (RoBERTa positions start at padding_idx + 1 = 2: 514 rows). */
function xlmrConfig(s: BertShape): object {
  return {
    ...bertConfig(s),
    architectures: ['XLMRobertaModel'],
    model_type: 'xlm-roberta',
    bos_token_id: 0,
    pad_token_id: 1,
    eos_token_id: 2,
  };
}

/** An XLM-R encoder whose embedding table has `vocabSize` rows (the tokenizer's vocabulary). */
export function xlmrModel(
  spec: Extract<ModelSpec, { kind: 'xlmr' }>,
  store: WeightStore,
  vocabSize: number,
): ModelParts {
  // The embedding table follows the generated vocabulary's size.
  const shape = { ...spec.shape, vocab: vocabSize };
  const parts: ModelParts = { json: [['config.json', xlmrConfig(shape)]], graphs: [] };
  bertWeights(store, shape, 1);
  parts.graphs.push(['model', (q8) => bertGraph(store, shape, q8)]);
  return parts;
}
