// Writing ONNX: a small graph builder over onnx-proto (nodes, initializers from the WeightStore, inputs
// and outputs) with the layers the architectures share (linear, embedding lookup, LayerNorm, GELU,
// multi-head attention, padding masks), each in fp32 or with ORT-style dynamic uint8 quantization.

import { createRequire } from 'node:module';
import type { onnx as OnnxNS } from 'onnx-proto';
import { convertToFloat16 } from './float16';
import { GENERATOR_VERSION } from './specs';
import type { WeightStore } from './weights';

const require = createRequire(import.meta.url);
const { onnx } = require('onnx-proto') as typeof import('onnx-proto');
const OPSET = 17;
const IR_VERSION = 8;

/** ONNX tensor element types (TensorProto.DataType). */
export const T = onnx.TensorProto.DataType;
const A = onnx.AttributeProto.AttributeType;
type AttrValue = number | number[] | { f: number } | string;

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** ORT-style per-tensor asymmetric uint8 quantization: range widened to include 0, round half to even. */
function quantizeUint8(data: Float32Array): { q: Uint8Array; scale: number; zeroPoint: number } {
  let min = 0;
  let max = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const scale = Math.fround(max > min ? (max - min) / 255 : 1);
  const zeroPoint = Math.min(255, Math.max(0, rint(-min / scale)));
  const q = new Uint8Array(data.length);
  const inv = 1 / scale;
  for (let i = 0; i < data.length; i++) {
    const v = rint(data[i] * inv) + zeroPoint;
    q[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
  return { q, scale, zeroPoint };
}

function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Builds one ONNX graph; `q8` switches the MatMul weights and embedding tables to uint8. */
export class GraphBuilder {
  readonly nodes: OnnxNS.INodeProto[] = [];
  readonly initializers: OnnxNS.ITensorProto[] = [];
  readonly inputs: OnnxNS.IValueInfoProto[] = [];
  readonly outputs: OnnxNS.IValueInfoProto[] = [];
  readonly opTypes = new Set<string>();
  private readonly initNames = new Set<string>();
  private readonly dynQuant = new Map<string, [string, string, string]>();
  private count = 0;

  constructor(
    readonly store: WeightStore,
    readonly q8: boolean,
  ) {}

  /** Adds a node; returns its output names (auto-named unless given). */
  op(
    type: string,
    inputs: string[],
    attrs: Record<string, AttrValue> = {},
    outs: number | string[] = 1,
  ): string[] {
    const name = `${type}_${this.count++}`;
    const output = typeof outs === 'number' ? Array.from({ length: outs }, (_, i) => `${name}_o${i}`) : outs;
    const attribute: OnnxNS.IAttributeProto[] = Object.entries(attrs).map(([key, v]) => {
      if (typeof v === 'number') return { name: key, type: A.INT, i: v };
      if (typeof v === 'string') return { name: key, type: A.STRING, s: new TextEncoder().encode(v) };
      if (Array.isArray(v)) return { name: key, type: A.INTS, ints: v };
      return { name: key, type: A.FLOAT, f: v.f };
    });
    this.nodes.push({ name, opType: type, input: inputs, output, attribute });
    this.opTypes.add(type);
    return output;
  }
  op1(type: string, inputs: string[], attrs: Record<string, AttrValue> = {}, out?: string): string {
    return this.op(type, inputs, attrs, out ? [out] : 1)[0];
  }

  tensor(name: string, dataType: number, dims: number[], data: ArrayBufferView): string {
    if (!this.initNames.has(name)) {
      this.initNames.add(name);
      this.initializers.push({ name, dataType, dims, rawData: bytesOf(data) });
    }
    return name;
  }
  f32(values: number[], dims: number[] = [values.length]): string {
    return this.tensor(
      `const_f32_${dims.join('x')}_${values.join('_')}`,
      T.FLOAT,
      dims,
      new Float32Array(values),
    );
  }
  i64(values: number[], dims: number[] = [values.length]): string {
    const name = `const_i64_${dims.join('x')}_${values.join('_')}`;
    return this.tensor(name, T.INT64, dims, BigInt64Array.from(values.map((v) => BigInt(v))));
  }
  weight(name: string): string {
    const w = this.store.get(name);
    return this.tensor(name, T.FLOAT, w.dims, w.data);
  }
  private quantizedWeight(name: string): [string, string, string] {
    const q = `${name}_quantized`;
    if (!this.initNames.has(q)) {
      const w = this.store.get(name);
      const r = quantizeUint8(w.data);
      this.tensor(q, T.UINT8, w.dims, r.q);
      this.tensor(`${name}_scale`, T.FLOAT, [], new Float32Array([r.scale]));
      this.tensor(`${name}_zero_point`, T.UINT8, [], new Uint8Array([r.zeroPoint]));
    }
    return [q, `${name}_scale`, `${name}_zero_point`];
  }

  input(name: string, elemType: number, dims: (number | string)[]): string {
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }
  output(name: string, elemType: number, dims: (number | string)[]): void {
    this.outputs.push(valueInfo(name, elemType, dims));
  }

  /** x · W (+ b); W stored [in, out]. q8: DynamicQuantizeLinear → MatMulInteger → Cast → Mul (ORT's dynamic pattern). */
  linear(x: string, prefix: string, bias = true, out?: string): string {
    let y: string;
    if (!this.q8) {
      y = this.op1('MatMul', [x, this.weight(`${prefix}.weight`)], {}, bias ? undefined : out);
    } else {
      let dq = this.dynQuant.get(x);
      if (!dq) {
        const o = this.op('DynamicQuantizeLinear', [x], {}, 3);
        dq = [o[0], o[1], o[2]];
        this.dynQuant.set(x, dq);
      }
      const [wq, ws, wz] = this.quantizedWeight(`${prefix}.weight`);
      const mm = this.op1('MatMulInteger', [dq[0], wq, dq[2], wz]);
      const f = this.op1('Cast', [mm], { to: T.FLOAT });
      const s = this.op1('Mul', [dq[1], ws]);
      y = this.op1('Mul', [f, s], {}, bias ? undefined : out);
    }
    return bias ? this.op1('Add', [y, this.weight(`${prefix}.bias`)], {}, out) : y;
  }

  /** Embedding lookup; q8 keeps the table as uint8 and dequantizes the gathered rows (ORT's Gather quantization). */
  gather(table: string, ids: string, quantize: boolean): string {
    if (!(this.q8 && quantize)) return this.op1('Gather', [this.weight(table), ids], { axis: 0 });
    const [tq, ts, tz] = this.quantizedWeight(table);
    const g = this.op1('Gather', [tq, ids], { axis: 0 });
    return this.op1('DequantizeLinear', [g, ts, tz]);
  }

  layerNorm(x: string, prefix: string, eps: number, out?: string): string {
    return this.op1(
      'LayerNormalization',
      [x, this.weight(`${prefix}.weight`), this.weight(`${prefix}.bias`)],
      { axis: -1, epsilon: { f: eps } },
      out,
    );
  }

  /** GELU, erf form: 0.5·x·(1 + erf(x/√2)). */
  gelu(x: string): string {
    const d = this.op1('Div', [x, this.f32([Math.SQRT2], [])]);
    const e = this.op1('Erf', [d]);
    const a = this.op1('Add', [e, this.f32([1], [])]);
    const m = this.op1('Mul', [x, a]);
    return this.op1('Mul', [m, this.f32([0.5], [])]);
  }

  /** quick_gelu: x·σ(1.702·x). */
  quickGelu(x: string): string {
    const s = this.op1('Sigmoid', [this.op1('Mul', [x, this.f32([1.702], [])])]);
    return this.op1('Mul', [x, s]);
  }

  /**
   * Multi-head self-attention on x [b, s, hidden]; `mask` is additive and broadcasts to [b, heads, s, s].
   * Names follow `names.q/k/v/o` (Linear prefixes).
   */
  attention(
    x: string,
    hidden: number,
    heads: number,
    names: { q: string; k: string; v: string; o: string },
    mask: string | null,
  ): string {
    const hd = hidden / heads;
    const split = this.i64([0, 0, heads, hd]);
    const q = this.op1('Transpose', [this.op1('Reshape', [this.linear(x, names.q), split])], {
      perm: [0, 2, 1, 3],
    });
    const k = this.op1('Transpose', [this.op1('Reshape', [this.linear(x, names.k), split])], {
      perm: [0, 2, 3, 1],
    });
    const v = this.op1('Transpose', [this.op1('Reshape', [this.linear(x, names.v), split])], {
      perm: [0, 2, 1, 3],
    });
    let s = this.op1('MatMul', [q, k]);
    s = this.op1('Div', [s, this.f32([Math.fround(Math.sqrt(hd))], [])]);
    if (mask) s = this.op1('Add', [s, mask]);
    const p = this.op1('Softmax', [s], { axis: -1 });
    const c = this.op1('Transpose', [this.op1('MatMul', [p, v])], { perm: [0, 2, 1, 3] });
    const merged = this.op1('Reshape', [c, this.i64([0, 0, hidden])]);
    return this.linear(merged, names.o);
  }

  /** Additive padding mask from attention_mask [b, s] → [b, 1, 1, s]: (1 − mask)·neg. */
  paddingMask(attentionMask: string, neg: number): string {
    const u = this.op1('Unsqueeze', [attentionMask, this.i64([1, 2])]);
    const f = this.op1('Cast', [u], { to: T.FLOAT });
    const inv = this.op1('Sub', [this.f32([1], []), f]);
    return this.op1('Mul', [inv, this.f32([neg], [])]);
  }

  /** The ONNX bytes; `fp16`: the float16 variant of the same graph and weights (see float16.ts). */
  encode(graphName: string, doc: string, fp16 = false): Uint8Array {
    const g = fp16 ? convertToFloat16(this) : this;
    const model: OnnxNS.IModelProto = {
      irVersion: IR_VERSION,
      opsetImport: [{ domain: '', version: OPSET }],
      producerName: 'loupe scripts/generate-models.ts',
      producerVersion: GENERATOR_VERSION,
      docString: doc,
      graph: {
        name: graphName,
        node: g.nodes,
        initializer: g.initializers,
        input: g.inputs,
        output: g.outputs,
      },
    };
    return onnx.ModelProto.encode(model).finish();
  }
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): OnnxNS.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/** Large negative for additive attention masks: float32's lowest value. */
export const F32_LOWEST = -3.4028234663852886e38;

/** What one architecture contributes to a model folder besides the tokenizer: JSON files and ONNX graphs. */
export interface ModelParts {
  /** JSON files, written first and in this order (config.json, preprocessor_config.json). */
  json: Array<[string, object]>;
  /**
   * Graphs by file stem: onnx/<stem>.onnx and onnx/<stem>_quantized.onnx (build(false), build(true)),
   * and for bi-encoders onnx/<stem>_fp16.onnx (build(false) converted, see float16.ts).
   */
  graphs: Array<[string, (q8: boolean) => GraphBuilder]>;
}
