// The fp16 variant of a generated graph (onnx/<stem>_fp16.onnx, what transformers.js loads for dtype
// 'fp16'): the same graph and the same weights, every float32 initializer rounded to float16 (round to
// nearest, ties to even), every Cast to float32 made a Cast to float16, and the graph's float inputs and
// outputs kept float32 with a Cast at the boundary (transformers.js feeds float32 pixel_values and reads
// float32 or float16 outputs; float32 at the boundary keeps both the text and the vision tower usable).
// Magnitudes are clamped to FP16_CLAMP first: the additive attention masks (float32's lowest value in
// the fp32 graph) would otherwise become -Infinity, and a causal mask plus a padding mask would add two.
import type { onnx as OnnxNS } from 'onnx-proto';

/** ONNX TensorProto.DataType values used here. */
const FLOAT = 1;
const FLOAT16 = 10;
/** AttributeProto.AttributeType: INT, TENSOR, TENSORS. */
const ATTR_INT = 2;
const ATTR_TENSOR = 4;
const ATTR_TENSORS = 9;

/** Largest magnitude written to an fp16 initializer (masks become −1e4: exp(−1e4) is 0 in fp16 and fp32). */
export const FP16_CLAMP = 1e4;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16 bits of a float32 value: round to nearest, ties to even; overflow to ±Infinity. */
export function float16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Infinity, or a quiet NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal in fp16: m × 2^-24, from the full 24-bit significand shifted right by 14 − e.
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e;
    const rest = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    let m = full >>> shift;
    if (rest > half || (rest === half && (m & 1) === 1)) m++; // may carry into the smallest normal: right
    return sign | m;
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++; // a carry into the exponent is right too
  return h;
}

/** float32 values as fp16 bits, magnitudes clamped to `clamp` first (NaN stays NaN). */
export function toFloat16(data: Float32Array, clamp = FP16_CLAMP): Uint16Array {
  const out = new Uint16Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    out[i] = float16Bits(v > clamp ? clamp : v < -clamp ? -clamp : v);
  }
  return out;
}

/** The float32 value of fp16 bits (for tests and the benchmark's checks). */
export function float16Value(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The parts of a graph the conversion reads and writes (GraphBuilder's fields). */
export interface GraphParts {
  nodes: OnnxNS.INodeProto[];
  initializers: OnnxNS.ITensorProto[];
  inputs: OnnxNS.IValueInfoProto[];
  outputs: OnnxNS.IValueInfoProto[];
}

const elemType = (v: OnnxNS.IValueInfoProto): number | null | undefined => v.type?.tensorType?.elemType;

/** A float32 initializer's values (rawData copied out, so any byte offset works). */
function floatData(t: OnnxNS.ITensorProto): Float32Array {
  if (t.rawData && t.rawData.length) {
    const raw = t.rawData;
    return new Float32Array(raw.slice().buffer, 0, raw.length / 4);
  }
  return Float32Array.from(t.floatData ?? []);
}

/**
 * The fp16 graph of an fp32 one (new arrays; the input is not changed). Throws on what it does not
 * convert (float tensors inside attributes, e.g. Constant or ConstantOfShape values), rather than
 * writing a graph that mixes float32 and float16 where ONNX needs one type.
 */
export function convertToFloat16(g: GraphParts): GraphParts {
  const initializers = g.initializers.map((t) => {
    if (t.dataType !== FLOAT) return t;
    const bits = toFloat16(floatData(t));
    return { name: t.name, dims: t.dims, dataType: FLOAT16, rawData: new Uint8Array(bits.buffer) };
  });
  // Graph inputs stay float32: a Cast to fp16 feeds what read them.
  const rename = new Map<string, string>();
  const head: OnnxNS.INodeProto[] = [];
  for (const v of g.inputs) {
    if (elemType(v) !== FLOAT) continue;
    const name = v.name!;
    rename.set(name, `${name}_fp16`);
    head.push(castNode(`Cast_${name}_to_fp16`, name, `${name}_fp16`, FLOAT16));
  }
  // Graph outputs stay float32: what produced them now produces `<name>_fp16`, cast back at the end.
  const tail: OnnxNS.INodeProto[] = [];
  for (const v of g.outputs) {
    if (elemType(v) !== FLOAT) continue;
    const name = v.name!;
    rename.set(name, `${name}_fp16`);
    tail.push(castNode(`Cast_${name}_to_fp32`, `${name}_fp16`, name, FLOAT));
  }
  const nodes = g.nodes.map((n) => {
    for (const a of n.attribute ?? [])
      if (a.type === ATTR_TENSOR || a.type === ATTR_TENSORS)
        throw new Error(`fp16 conversion: ${n.opType} ${n.name} has a tensor attribute ${a.name}`);
    const attribute = (n.attribute ?? []).map((a) =>
      n.opType === 'Cast' && a.name === 'to' && a.type === ATTR_INT && Number(a.i) === FLOAT
        ? { ...a, i: FLOAT16 }
        : a,
    );
    return {
      ...n,
      input: (n.input ?? []).map((x) => rename.get(x) ?? x),
      output: (n.output ?? []).map((x) => rename.get(x) ?? x),
      attribute,
    };
  });
  return { nodes: [...head, ...nodes, ...tail], initializers, inputs: g.inputs, outputs: g.outputs };
}

function castNode(name: string, input: string, output: string, to: number): OnnxNS.INodeProto {
  return {
    name,
    opType: 'Cast',
    input: [input],
    output: [output],
    attribute: [{ name: 'to', type: ATTR_INT, i: to }],
  };
}
