// Int8 scores of IVF list rows on WebGPU: the O(rows · dim) part of an IVF query (core/retrieval/
// ivf.ts scoreList) as a compute shader. Works in the page and in workers.
//
// Each row's codes are dim signed bytes; the shader reads them as u32 words (four codes each,
// sign-extended with extractBits) and one invocation sums one row: Σ_d (q_d·s_d)·c_d in float32.
// The CPU's scoreList sums the same products in float64, so the two differ by at most
// ε = (dim + 2) · 2⁻²³ · 127 · Σ_d |q_d·s_d| (float32 rounding of each product and of each partial
// sum; |c_d| ≤ 127). int8Candidates() in core/retrieval/ivf.ts turns these scores into exactly the
// candidates scoreList would give, or says it cannot (then the CPU scores that query).
import type { GpuProbe } from './backend';
import { USAGE, openComputeDevice } from './gpu-exact';

const WGSL = /* wgsl */ `
struct Params { rows: u32, words: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> C: array<u32>;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read_write> S: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let r = gid.x + gid.y * nwg.x * 64u;
  if (r >= P.rows) { return; }
  var s = 0.0;
  let base = r * P.words;
  for (var w = 0u; w < P.words; w++) {
    let v = bitcast<i32>(C[base + w]);
    let j = w * 4u;
    s += Q[j] * f32(extractBits(v, 0u, 8u));
    s += Q[j + 1u] * f32(extractBits(v, 8u, 8u));
    s += Q[j + 2u] * f32(extractBits(v, 16u, 8u));
    s += Q[j + 3u] * f32(extractBits(v, 24u, 8u));
  }
  S[r] = s;
}
`;

/** Rows scored per dispatch: 65,535 workgroups of 64 along x, more along y. */
const WG = 64;

/** The float32-vs-float64 bound of one query's int8 scores (see the header comment). */
export function int8ScoreBound(qs: Float32Array): number {
  let l1 = 0;
  for (let j = 0; j < qs.length; j++) l1 += Math.abs(qs[j]);
  return (qs.length + 2) * 2 ** -23 * 127 * l1;
}

export interface GpuInt8 {
  /**
   * Scores of `rows` code rows (rows × dim signed bytes, row-major) for the scaled query `qs`
   * (q_d·s_d, dim values), in row order.
   */
  score(codes: Int8Array, rows: number, qs: Float32Array): Promise<Float32Array>;
  destroy(): void;
  /** The adapter is a software one (SwiftShader, WARP): correct, not fast. */
  readonly software: boolean;
  readonly description: string;
}

/** A device and pipeline for int8 scoring; throws with the reason when WebGPU is unavailable. */
export async function createGpuInt8(opts: { probe?: GpuProbe } = {}): Promise<GpuInt8> {
  const { probe, device, limit, lost } = await openComputeDevice(opts.probe);
  const pipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: WGSL }), entryPoint: 'main' },
  });
  // Buffers grow to the largest request and are reused (one query at a time).
  let cap = { rows: 0, words: 0 };
  let cBuf: GPUBuffer | null = null;
  let qBuf: GPUBuffer | null = null;
  let sBuf: GPUBuffer | null = null;
  let readBuf: GPUBuffer | null = null;
  const pBuf = device.createBuffer({ size: 16, usage: USAGE.UNIFORM | USAGE.COPY_DST });
  let queue = Promise.resolve();

  const ensure = (rows: number, words: number) => {
    if (rows <= cap.rows && words === cap.words && cBuf) return;
    for (const b of [cBuf, qBuf, sBuf, readBuf]) b?.destroy();
    const r = Math.max(rows, cap.words === words ? cap.rows * 2 : 0, 1024);
    if (r * words * 4 > limit)
      throw new RangeError(`${r} rows of ${words * 4} bytes exceed the adapter's buffer limit ${limit}`);
    cap = { rows: r, words };
    cBuf = device.createBuffer({ size: r * words * 4, usage: USAGE.STORAGE | USAGE.COPY_DST });
    qBuf = device.createBuffer({ size: words * 16, usage: USAGE.STORAGE | USAGE.COPY_DST });
    sBuf = device.createBuffer({ size: r * 4, usage: USAGE.STORAGE | USAGE.COPY_SRC });
    readBuf = device.createBuffer({ size: r * 4, usage: USAGE.MAP_READ | USAGE.COPY_DST });
  };

  const run = async (codes: Int8Array, rows: number, qs: Float32Array): Promise<Float32Array> => {
    if (lost()) throw new Error(`WebGPU device lost: ${lost()}`);
    const dim = qs.length;
    if (codes.length !== rows * dim)
      throw new RangeError(`${rows} rows of ${dim} codes need ${rows * dim} bytes, got ${codes.length}`);
    if (rows === 0) return new Float32Array(0);
    const words = Math.ceil(dim / 4);
    ensure(rows, words);
    // Rows padded to whole words (zeros score nothing); dim % 4 === 0 needs no copy.
    let packed: Uint8Array;
    if (dim === words * 4) packed = new Uint8Array(codes.buffer, codes.byteOffset, codes.length);
    else {
      packed = new Uint8Array(rows * words * 4);
      for (let r = 0; r < rows; r++)
        packed.set(new Uint8Array(codes.buffer, codes.byteOffset + r * dim, dim), r * words * 4);
    }
    const q = new Float32Array(words * 4);
    q.set(qs);
    device.queue.writeBuffer(cBuf!, 0, packed);
    device.queue.writeBuffer(qBuf!, 0, q);
    device.queue.writeBuffer(pBuf, 0, new Uint32Array([rows, words, 0, 0]));
    const bind = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: cBuf! } },
        { binding: 1, resource: { buffer: qBuf! } },
        { binding: 2, resource: { buffer: sBuf! } },
        { binding: 3, resource: { buffer: pBuf } },
      ],
    });
    const groups = Math.ceil(rows / WG);
    const x = Math.min(groups, 65535);
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(x, Math.ceil(groups / x));
    pass.end();
    enc.copyBufferToBuffer(sBuf!, 0, readBuf!, 0, rows * 4);
    device.queue.submit([enc.finish()]);
    await readBuf!.mapAsync(USAGE.MAP_READ);
    const out = new Float32Array(readBuf!.getMappedRange(0, rows * 4).slice(0));
    readBuf!.unmap();
    return out;
  };

  return {
    software: probe.software !== undefined,
    description: probe.description,
    score(codes, rows, qs) {
      const p = queue.then(() => run(codes, rows, qs));
      queue = p.then(
        () => undefined,
        () => undefined,
      );
      return p;
    },
    destroy() {
      for (const b of [cBuf, qBuf, sBuf, readBuf, pBuf]) b?.destroy();
      device.destroy();
    },
  };
}
