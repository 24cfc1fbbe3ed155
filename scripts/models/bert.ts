// BERT-like text encoders (BertModel): weights, the encoder graph (embeddings, post-LayerNorm layers
// with GELU; output last_hidden_state) and config.json. XLM-R and the cross-encoders build on it.

import type { BertShape, ModelSpec } from './specs';
import { F32_LOWEST, GraphBuilder, T, type ModelParts } from './onnx-graph';
import type { WeightStore } from './weights';

/** Creates the BERT encoder's weights; the row of `padId` in the word embeddings is zero. */
export function bertWeights(store: WeightStore, s: BertShape, padId = 0): void {
  const H = s.hidden;
  const word = store.normal('embeddings.word_embeddings.weight', [s.vocab, H]);
  // The padding row is zero, as in BERT ([PAD] = 0) and XLM-R (<pad> = 1).
  store.get(word).data.fill(0, padId * H, (padId + 1) * H);
  store.normal('embeddings.position_embeddings.weight', [s.maxPositions, H]);
  store.normal('embeddings.token_type_embeddings.weight', [s.typeVocab, H]);
  const ln = (p: string): void => {
    store.fill(`${p}.weight`, [H], 1);
    store.fill(`${p}.bias`, [H], 0);
  };
  const lin = (p: string, i: number, o: number): void => {
    store.normal(`${p}.weight`, [i, o]);
    store.fill(`${p}.bias`, [o], 0);
  };
  ln('embeddings.LayerNorm');
  for (let l = 0; l < s.layers; l++) {
    const p = `encoder.layer.${l}`;
    for (const n of ['query', 'key', 'value']) lin(`${p}.attention.self.${n}`, H, H);
    lin(`${p}.attention.output.dense`, H, H);
    ln(`${p}.attention.output.LayerNorm`);
    lin(`${p}.intermediate.dense`, H, s.intermediate);
    lin(`${p}.output.dense`, s.intermediate, H);
    ln(`${p}.output.LayerNorm`);
  }
}

/**
 * The BERT encoder on inputs input_ids, attention_mask, token_type_ids; returns the last hidden state
 * [batch, seq, hidden], named `lastName` when given.
 */
export function bertEncoder(g: GraphBuilder, s: BertShape, lastName?: string): string {
  const dims = ['batch_size', 'sequence_length'];
  const ids = g.input('input_ids', T.INT64, dims);
  const mask = g.input('attention_mask', T.INT64, dims);
  const seq = g.op1('Shape', [ids], { start: 1, end: 2 });
  const words = g.gather('embeddings.word_embeddings.weight', ids, true);
  // XLM-R exports take no token_type_ids: its single type row [1, hidden] is added by broadcasting.
  const typeEmb =
    s.typeVocab === 1
      ? g.weight('embeddings.token_type_embeddings.weight')
      : g.gather('embeddings.token_type_embeddings.weight', g.input('token_type_ids', T.INT64, dims), false);
  const pos = g.op1('Slice', [
    g.weight('embeddings.position_embeddings.weight'),
    g.i64([0]),
    seq,
    g.i64([0]),
  ]);
  let x = g.op1('Add', [g.op1('Add', [words, typeEmb]), pos]);
  x = g.layerNorm(x, 'embeddings.LayerNorm', s.eps);
  const ext = g.paddingMask(mask, F32_LOWEST);
  for (let l = 0; l < s.layers; l++) {
    const p = `encoder.layer.${l}`;
    const a = g.attention(
      x,
      s.hidden,
      s.heads,
      {
        q: `${p}.attention.self.query`,
        k: `${p}.attention.self.key`,
        v: `${p}.attention.self.value`,
        o: `${p}.attention.output.dense`,
      },
      ext,
    );
    x = g.layerNorm(g.op1('Add', [a, x]), `${p}.attention.output.LayerNorm`, s.eps);
    const h = g.gelu(g.linear(x, `${p}.intermediate.dense`));
    const o = g.linear(h, `${p}.output.dense`);
    const last = l === s.layers - 1;
    x = g.layerNorm(g.op1('Add', [o, x]), `${p}.output.LayerNorm`, s.eps, last ? lastName : undefined);
  }
  if (s.layers === 0 && lastName) x = g.op1('Identity', [x], {}, lastName);
  return x;
}

/** BertModel: the encoder with output `last_hidden_state` [batch, seq, hidden]. */
export function bertGraph(store: WeightStore, s: BertShape, q8: boolean): GraphBuilder {
  const g = new GraphBuilder(store, q8);
  bertEncoder(g, s, 'last_hidden_state');
  g.output('last_hidden_state', T.FLOAT, ['batch_size', 'sequence_length', s.hidden]);
  return g;
}

/** config.json of BertModel. */
export function bertConfig(s: BertShape): object {
  return {
    architectures: ['BertModel'],
    attention_probs_dropout_prob: 0.1,
    classifier_dropout: null,
    hidden_act: 'gelu',
    hidden_dropout_prob: 0.1,
    hidden_size: s.hidden,
    initializer_range: 0.02,
    intermediate_size: s.intermediate,
    layer_norm_eps: s.eps,
    max_position_embeddings: s.maxPositions,
    model_type: 'bert',
    num_attention_heads: s.heads,
    num_hidden_layers: s.layers,
    pad_token_id: 0,
    position_embedding_type: 'absolute',
    type_vocab_size: s.typeVocab,
    use_cache: true,
    vocab_size: s.vocab,
  };
}

/** A BERT bi-encoder: config.json and model.onnx. */
export function bertModel(spec: Extract<ModelSpec, { kind: 'bert' }>, store: WeightStore): ModelParts {
  const parts: ModelParts = { json: [['config.json', bertConfig(spec.shape)]], graphs: [] };
  bertWeights(store, spec.shape);
  parts.graphs.push(['model', (q8) => bertGraph(store, spec.shape, q8)]);
  return parts;
}
