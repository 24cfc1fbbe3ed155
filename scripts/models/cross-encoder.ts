// BERT cross-encoders (BertForSequenceClassification): the BERT encoder, a pooler on [CLS] and a linear
// classifier; query/document pairs in, `logits` out (for reranking).

import { bertConfig, bertEncoder, bertWeights } from './bert';
import { GraphBuilder, T, type ModelParts } from './onnx-graph';
import type { BertShape, CrossEncoderHead, ModelSpec } from './specs';
import type { WeightStore } from './weights';

function crossEncoderWeights(store: WeightStore, s: BertShape, labels: number): void {
  bertWeights(store, s);
  store.normal('pooler.dense.weight', [s.hidden, s.hidden]);
  store.fill('pooler.dense.bias', [s.hidden], 0);
  store.normal('classifier.weight', [s.hidden, labels]);
  store.fill('classifier.bias', [labels], 0);
}

/** BertForSequenceClassification: encoder, pooler (dense + tanh on [CLS]), classifier → `logits` [batch, labels]. */
function crossEncoderGraph(store: WeightStore, s: BertShape, labels: number, q8: boolean): GraphBuilder {
  const g = new GraphBuilder(store, q8);
  const last = bertEncoder(g, s);
  const cls = g.op1('Gather', [last, g.i64([0], [])], { axis: 1 });
  const pooled = g.op1('Tanh', [g.linear(cls, 'pooler.dense')]);
  g.linear(pooled, 'classifier', true, 'logits');
  g.output('logits', T.FLOAT, ['batch_size', labels]);
  return g;
}

function crossEncoderConfig(s: BertShape, head: CrossEncoderHead): object {
  return {
    ...bertConfig(s),
    architectures: ['BertForSequenceClassification'],
    id2label: Object.fromEntries(head.labels.map((l, i) => [String(i), l])),
    label2id: Object.fromEntries(head.labels.map((l, i) => [l, i])),
    ...(head.sbertActivation ? { sbert_ce_default_activation_function: head.sbertActivation } : {}),
  };
}

/** A cross-encoder: config.json (with id2label) and model.onnx. */
export function crossEncoderModel(
  spec: Extract<ModelSpec, { kind: 'bert-cross-encoder' }>,
  store: WeightStore,
): ModelParts {
  const labels = spec.head.labels.length;
  const parts: ModelParts = {
    json: [['config.json', crossEncoderConfig(spec.shape, spec.head)]],
    graphs: [],
  };
  crossEncoderWeights(store, spec.shape, labels);
  parts.graphs.push(['model', (q8) => crossEncoderGraph(store, spec.shape, labels, q8)]);
  return parts;
}
