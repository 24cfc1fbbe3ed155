// CLIP (CLIPModel): a text tower (causal, pooled at the end-of-text token) and a ViT vision tower, each
// with its projection, as text_model.onnx and vision_model.onnx; config.json and the image preprocessor.

import { F32_LOWEST, GraphBuilder, T, type ModelParts } from './onnx-graph';
import { CLIP_VOCAB, type ClipTextShape, type ClipVisionShape, type ModelSpec } from './specs';
import type { WeightStore } from './weights';

/** Weights of one CLIP encoder layer under prefix `p` (hidden H, MLP width I). */
function clipLayerWeights(store: WeightStore, p: string, H: number, I: number): void {
  const lin = (n: string, i: number, o: number): void => {
    store.normal(`${n}.weight`, [i, o]);
    store.fill(`${n}.bias`, [o], 0);
  };
  for (const n of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) lin(`${p}.self_attn.${n}`, H, H);
  for (const n of ['layer_norm1', 'layer_norm2']) {
    store.fill(`${p}.${n}.weight`, [H], 1);
    store.fill(`${p}.${n}.bias`, [H], 0);
  }
  lin(`${p}.mlp.fc1`, H, I);
  lin(`${p}.mlp.fc2`, I, H);
}

/** Pre-LayerNorm CLIP encoder layer with quick_gelu. */
function clipLayer(
  g: GraphBuilder,
  x: string,
  p: string,
  H: number,
  heads: number,
  eps: number,
  mask: string | null,
) {
  const h1 = g.layerNorm(x, `${p}.layer_norm1`, eps);
  const a = g.attention(
    h1,
    H,
    heads,
    {
      q: `${p}.self_attn.q_proj`,
      k: `${p}.self_attn.k_proj`,
      v: `${p}.self_attn.v_proj`,
      o: `${p}.self_attn.out_proj`,
    },
    mask,
  );
  const x1 = g.op1('Add', [x, a]);
  const h2 = g.layerNorm(x1, `${p}.layer_norm2`, eps);
  const m = g.linear(g.quickGelu(g.linear(h2, `${p}.mlp.fc1`)), `${p}.mlp.fc2`);
  return g.op1('Add', [x1, m]);
}

/** The text tower's weights, its projection and the causal mask (a constant table). */
function clipTextWeights(store: WeightStore, t: ClipTextShape, projection: number): void {
  store.normal('text_model.embeddings.token_embedding.weight', [t.vocab, t.hidden]);
  store.normal('text_model.embeddings.position_embedding.weight', [t.maxPositions, t.hidden]);
  for (let l = 0; l < t.layers; l++)
    clipLayerWeights(store, `text_model.encoder.layers.${l}`, t.hidden, t.intermediate);
  store.fill('text_model.final_layer_norm.weight', [t.hidden], 1);
  store.fill('text_model.final_layer_norm.bias', [t.hidden], 0);
  store.normal('text_projection.weight', [t.hidden, projection]);
  // Causal mask [max, max]: 0 on and below the diagonal, a large negative above it.
  const n = t.maxPositions;
  const causal = new Float32Array(n * n);
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) causal[i * n + j] = F32_LOWEST / 2;
  store.set('text_model.causal_mask', [n, n], causal);
}

/** text_model.onnx: input_ids, attention_mask → text_embeds [batch, projection], last_hidden_state. */
function clipTextGraph(store: WeightStore, t: ClipTextShape, projection: number, q8: boolean): GraphBuilder {
  const g = new GraphBuilder(store, q8);
  const dims = ['batch_size', 'sequence_length'];
  const ids = g.input('input_ids', T.INT64, dims);
  const mask = g.input('attention_mask', T.INT64, dims);
  const seq = g.op1('Shape', [ids], { start: 1, end: 2 });
  const tok = g.gather('text_model.embeddings.token_embedding.weight', ids, true);
  const pos = g.op1('Slice', [
    g.weight('text_model.embeddings.position_embedding.weight'),
    g.i64([0]),
    seq,
    g.i64([0]),
  ]);
  let x = g.op1('Add', [tok, pos]);
  // Causal [s, s] + padding [b, 1, 1, s], each at half the float32 range so the sum stays finite.
  const ends = g.op1('Concat', [seq, seq], { axis: 0 });
  const causal = g.op1('Slice', [g.weight('text_model.causal_mask'), g.i64([0, 0]), ends, g.i64([0, 1])]);
  const m = g.op1('Add', [causal, g.paddingMask(mask, F32_LOWEST / 2)]);
  for (let l = 0; l < t.layers; l++)
    x = clipLayer(g, x, `text_model.encoder.layers.${l}`, t.hidden, t.heads, t.eps, m);
  const last = g.layerNorm(x, 'text_model.final_layer_norm', t.eps, 'last_hidden_state');
  // Pool at the end-of-text token: the highest id in each row (first occurrence), as CLIP does.
  const eos = g.op1('ArgMax', [ids], { axis: -1, keepdims: 1 });
  const pooled = g.op1('GatherND', [last, eos], { batch_dims: 1 });
  g.linear(pooled, 'text_projection', false, 'text_embeds');
  g.output('text_embeds', T.FLOAT, ['batch_size', projection]);
  g.output('last_hidden_state', T.FLOAT, ['batch_size', 'sequence_length', t.hidden]);
  return g;
}

/** The vision tower's weights (patch embedding, class token, positions, layers) and its projection. */
function clipVisionWeights(store: WeightStore, v: ClipVisionShape, projection: number): void {
  const H = v.hidden;
  const patches = (v.imageSize / v.patchSize) ** 2;
  store.normal('vision_model.embeddings.class_embedding', [1, 1, H]);
  store.normal('vision_model.embeddings.patch_embedding.weight', [H, v.channels, v.patchSize, v.patchSize]);
  store.normal('vision_model.embeddings.position_embedding.weight', [patches + 1, H]);
  store.fill('vision_model.pre_layrnorm.weight', [H], 1);
  store.fill('vision_model.pre_layrnorm.bias', [H], 0);
  for (let l = 0; l < v.layers; l++)
    clipLayerWeights(store, `vision_model.encoder.layers.${l}`, H, v.intermediate);
  store.fill('vision_model.post_layernorm.weight', [H], 1);
  store.fill('vision_model.post_layernorm.bias', [H], 0);
  store.normal('visual_projection.weight', [H, projection]);
}

/** vision_model.onnx: pixel_values → image_embeds [batch, projection], last_hidden_state. */
function clipVisionGraph(
  store: WeightStore,
  v: ClipVisionShape,
  projection: number,
  q8: boolean,
): GraphBuilder {
  const g = new GraphBuilder(store, q8);
  const H = v.hidden;
  const px = g.input('pixel_values', T.FLOAT, ['batch_size', v.channels, v.imageSize, v.imageSize]);
  const conv = g.op1('Conv', [px, g.weight('vision_model.embeddings.patch_embedding.weight')], {
    kernel_shape: [v.patchSize, v.patchSize],
    strides: [v.patchSize, v.patchSize],
  });
  const patches = g.op1('Transpose', [g.op1('Reshape', [conv, g.i64([0, 0, -1])])], { perm: [0, 2, 1] });
  const batch = g.op1('Shape', [px], { start: 0, end: 1 });
  const clsShape = g.op1('Concat', [batch, g.i64([1, H])], { axis: 0 });
  const cls = g.op1('Expand', [g.weight('vision_model.embeddings.class_embedding'), clsShape]);
  let x = g.op1('Concat', [cls, patches], { axis: 1 });
  x = g.op1('Add', [x, g.weight('vision_model.embeddings.position_embedding.weight')]);
  x = g.layerNorm(x, 'vision_model.pre_layrnorm', v.eps);
  for (let l = 0; l < v.layers; l++) {
    x = clipLayer(g, x, `vision_model.encoder.layers.${l}`, H, v.heads, v.eps, null);
  }
  const last = g.op1('Identity', [x], {}, 'last_hidden_state');
  const first = g.op1('Gather', [last, g.i64([0], [])], { axis: 1 });
  const pooled = g.layerNorm(first, 'vision_model.post_layernorm', v.eps);
  g.linear(pooled, 'visual_projection', false, 'image_embeds');
  g.output('image_embeds', T.FLOAT, ['batch_size', projection]);
  g.output('last_hidden_state', T.FLOAT, ['batch_size', (v.imageSize / v.patchSize) ** 2 + 1, H]);
  return g;
}

/** config.json of CLIPModel, with its text and vision configs. */
function clipConfig(spec: Extract<ModelSpec, { kind: 'clip' }>): object {
  const { text: t, vision: v } = spec;
  return {
    architectures: ['CLIPModel'],
    initializer_factor: 1.0,
    logit_scale_init_value: 2.6592,
    model_type: 'clip',
    projection_dim: spec.projection,
    text_config: {
      attention_dropout: 0.0,
      bos_token_id: CLIP_VOCAB - 2,
      eos_token_id: CLIP_VOCAB - 1,
      hidden_act: 'quick_gelu',
      hidden_size: t.hidden,
      initializer_range: 0.02,
      intermediate_size: t.intermediate,
      layer_norm_eps: t.eps,
      max_position_embeddings: t.maxPositions,
      model_type: 'clip_text_model',
      num_attention_heads: t.heads,
      num_hidden_layers: t.layers,
      pad_token_id: 1,
      projection_dim: spec.projection,
      vocab_size: t.vocab,
    },
    vision_config: {
      attention_dropout: 0.0,
      hidden_act: 'quick_gelu',
      hidden_size: v.hidden,
      image_size: v.imageSize,
      initializer_range: 0.02,
      intermediate_size: v.intermediate,
      layer_norm_eps: v.eps,
      model_type: 'clip_vision_model',
      num_attention_heads: v.heads,
      num_channels: v.channels,
      num_hidden_layers: v.layers,
      patch_size: v.patchSize,
      projection_dim: spec.projection,
    },
  };
}

/** preprocessor_config.json: CLIP's bicubic resize, 224-pixel centre crop and normalisation. */
const CLIP_PREPROCESSOR = {
  crop_size: { height: 224, width: 224 },
  do_center_crop: true,
  do_convert_rgb: true,
  do_normalize: true,
  do_rescale: true,
  do_resize: true,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_processor_type: 'CLIPImageProcessor',
  image_std: [0.26862954, 0.26130258, 0.27577711],
  resample: 3,
  rescale_factor: 1 / 255,
  size: { shortest_edge: 224 },
};

/** A CLIP model: config.json, preprocessor_config.json, text_model.onnx and vision_model.onnx. */
export function clipModel(spec: Extract<ModelSpec, { kind: 'clip' }>, store: WeightStore): ModelParts {
  const parts: ModelParts = {
    json: [
      ['config.json', clipConfig(spec)],
      ['preprocessor_config.json', CLIP_PREPROCESSOR],
    ],
    graphs: [],
  };
  clipTextWeights(store, spec.text, spec.projection);
  clipVisionWeights(store, spec.vision, spec.projection);
  parts.graphs.push(['text_model', (q8) => clipTextGraph(store, spec.text, spec.projection, q8)]);
  parts.graphs.push(['vision_model', (q8) => clipVisionGraph(store, spec.vision, spec.projection, q8)]);
  return parts;
}
