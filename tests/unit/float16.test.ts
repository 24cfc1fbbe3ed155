// The generator's float32 → float16 rounding (scripts/models/float16.ts) against an outside reference:
// onnxruntime's own Cast(float → float16), run in onnxruntime-node on the same values (edge cases of
// IEEE 754 binary16 and random values over its whole range); and the fp16 graph conversion's shape:
// every float initializer fp16, float inputs and outputs kept float32 behind a Cast, Casts to float
// made Casts to float16; and which backends bench:gpu's fp16 rows run on.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  FP16_CLAMP,
  convertToFloat16,
  float16Bits,
  float16Value,
  toFloat16,
} from '../../scripts/models/float16';
import { fp16Plan } from '../../scripts/lib/gpu-measure';
import { GraphBuilder, T } from '../../scripts/models/onnx-graph';
import { WeightStore } from '../../scripts/models/weights';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');
const { onnx } = require('onnx-proto') as typeof import('onnx-proto');

/** Float32 values that exercise every branch: zeros, subnormals, ties, overflow, NaN, Infinity. */
function edgeValues(): Float32Array {
  const v: number[] = [0, -0, 1, -1, 1 / 3, 65504, 65519.99, 65520, -65520, 1e6, Infinity, -Infinity];
  v.push(2 ** -24, 2 ** -25, 2 ** -25 * 1.0001, 3 * 2 ** -25, 2 ** -14, 2 ** -14 - 2 ** -25, 6e-8, 1e-9);
  v.push(1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 2048 + 1, 2048 + 3, -(2048 + 1));
  // Random values over fp16's range of exponents, both signs (a fixed seed: the same values every run).
  let s = 12345;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  for (let i = 0; i < 20000; i++) v.push((rnd() < 0.5 ? -1 : 1) * 2 ** (rnd() * 44 - 28) * (1 + rnd()));
  return Float32Array.from(v);
}

async function ortCast(x: Float32Array): Promise<Uint16Array> {
  const g = new GraphBuilder(new WeightStore(1), false);
  g.input('x', T.FLOAT, [x.length]);
  g.op1('Cast', ['x'], { to: T.FLOAT16 }, 'y');
  g.output('y', T.FLOAT16, [x.length]);
  const session = await ort.InferenceSession.create(g.encode('cast', 'float16 reference'));
  const out = await session.run({ x: new ort.Tensor('float32', x, [x.length]) });
  const data = out.y.data as ArrayLike<number>;
  // Node 20 has no Float16Array: ORT hands fp16 back as its bits.
  return data instanceof Uint16Array ? data : new Uint16Array(new Uint8Array((data as Uint16Array).buffer));
}

describe('float16 rounding', () => {
  it('gives the same bits as onnxruntime Cast(float → float16) on edge cases and 20k random values', async () => {
    const x = edgeValues();
    const ref = await ortCast(x);
    let mismatches = 0;
    for (let i = 0; i < x.length; i++) {
      const ours = float16Bits(x[i]);
      if (ours !== ref[i]) {
        mismatches++;
        if (mismatches < 5) console.log(`x=${x[i]}: ours ${ours.toString(16)}, ORT ${ref[i].toString(16)}`);
      }
    }
    expect(mismatches).toBe(0);
    // NaN: ORT and ours agree that it stays NaN (payloads are not compared).
    const nan = await ortCast(Float32Array.of(NaN));
    expect(Number.isNaN(float16Value(nan[0]))).toBe(true);
    expect(Number.isNaN(float16Value(float16Bits(NaN)))).toBe(true);
  });

  it('knows IEEE 754 binary16 facts: max 65504, smallest subnormal 2^-24, ties to even', () => {
    expect(float16Bits(65504)).toBe(0x7bff);
    expect(float16Bits(65520)).toBe(0x7c00);
    expect(float16Bits(2 ** -24)).toBe(0x0001);
    expect(float16Bits(2 ** -25)).toBe(0x0000);
    expect(float16Bits(1 + 2 ** -11)).toBe(0x3c00);
    expect(float16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(float16Bits(-2)).toBe(0xc000);
    for (const h of [0x0001, 0x03ff, 0x0400, 0x3555, 0x7bff, 0xfbff])
      expect(float16Bits(float16Value(h))).toBe(h);
  });

  it('clamps magnitudes to FP16_CLAMP before rounding (masks stay finite)', () => {
    const bits = toFloat16(Float32Array.of(-3.4028234663852886e38, 3e38, 0.5));
    expect([...bits].map(float16Value)).toEqual([
      -float16Value(float16Bits(FP16_CLAMP)),
      float16Value(float16Bits(FP16_CLAMP)),
      0.5,
    ]);
  });
});

describe('fp16 graph conversion', () => {
  it('keeps float32 at the boundary and makes everything inside float16', () => {
    const store = new WeightStore(7);
    store.normal('w', [4, 3]);
    const g = new GraphBuilder(store, false);
    g.input('pixels', T.FLOAT, ['n', 4]);
    const ids = g.input('ids', T.INT64, ['n']);
    const mask = g.op1('Cast', [ids], { to: T.FLOAT });
    const y = g.op1('MatMul', ['pixels', g.weight('w')]);
    const z = g.op1('Add', [y, g.op1('Unsqueeze', [mask, g.i64([1])])], {}, 'out');
    g.output(z, T.FLOAT, ['n', 3]);
    const c = convertToFloat16(g);
    const model = onnx.ModelProto.decode(g.encode('t', 't', true));
    expect(model.graph!.input!.map((v) => v.type!.tensorType!.elemType)).toEqual([T.FLOAT, T.INT64]);
    expect(model.graph!.output!.map((v) => v.type!.tensorType!.elemType)).toEqual([T.FLOAT]);
    const types = Object.fromEntries(c.initializers.map((t) => [t.name, t.dataType]));
    expect(types).toMatchObject({ w: T.FLOAT16, const_i64_1_1: T.INT64 });
    const casts = c.nodes
      .filter((n) => n.opType === 'Cast')
      .map((n) => [n.input![0], n.output![0], Number(n.attribute![0].i)]);
    expect(casts).toEqual([
      ['pixels', 'pixels_fp16', T.FLOAT16],
      ['ids', casts[1][1], T.FLOAT16],
      ['out_fp16', 'out', T.FLOAT],
    ]);
    // The original graph is unchanged (the fp32 file is written from it too).
    expect(g.initializers.find((t) => t.name === 'w')!.dataType).toBe(T.FLOAT);
    expect(g.nodes.find((n) => n.opType === 'MatMul')!.input![0]).toBe('pixels');
  });

  it('runs in onnxruntime with the fp32 graph’s results to fp16 precision', async () => {
    const store = new WeightStore(7);
    store.normal('w', [4, 3], 0.5);
    const g = new GraphBuilder(store, false);
    g.input('x', T.FLOAT, [2, 4]);
    g.output(g.op1('MatMul', ['x', g.weight('w')], {}, 'y'), T.FLOAT, [2, 3]);
    const x = Float32Array.of(1, 2, 3, 4, -1, 0.5, 0.25, -2);
    const run = async (fp16: boolean) => {
      const s = await ort.InferenceSession.create(g.encode('m', 'm', fp16));
      const out = await s.run({ x: new ort.Tensor('float32', x, [2, 4]) });
      expect(out.y.type).toBe('float32');
      return out.y.data as Float32Array;
    };
    const [a, b] = [await run(false), await run(true)];
    for (let i = 0; i < a.length; i++)
      expect(Math.abs(a[i] - b[i])).toBeLessThan(Math.abs(a[i]) * 2e-3 + 1e-3);
    expect(Array.from(b)).not.toEqual(Array.from(a));
  });
});

describe("bench:gpu's fp16 rows (scripts/lib/gpu-measure.ts)", () => {
  it('run fp16 on WebGPU only with shader-f16, against WASM fp32; without it, the fp16 file on WASM against fp32', () => {
    expect(fp16Plan('fp16', true)).toEqual({
      fp32: 'wasm',
      row: { wasmDtype: 'fp32', cosineOf: 'WebGPU fp16 vs WASM fp32' },
    });
    const none = fp16Plan('fp16', false);
    expect(none.fp32).toBe('reference');
    expect(none.row.webgpuSkipped).toMatch(/no shader-f16/);
    expect(none.row.cosineOf).toBe('fp16 file vs fp32 file, both on WASM');
    expect(fp16Plan('fp32', false)).toEqual({ row: {} });
    expect(fp16Plan('q8', true)).toEqual({ row: {} });
  });
});
