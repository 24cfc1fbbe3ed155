// Exact top-k by inner product on WebGPU: the same answers as the JS path (exactSearch in
// core/exact.ts), with the O(n · queries · dim) work on the GPU. Works in the page and in workers.
//
// Pipeline, per query block (≤ QUERY_BLOCK queries) and corpus chunk (≤ the device's storage
// binding limit):
//   1. `scores`: a tiled matrix product (64 × 64 outputs per workgroup, 4 × 4 per thread, 16-deep
//      k-tiles in workgroup memory) writes S = Q · Dᵀ in float32.
//   2. `select`: one workgroup per query finds the K'-th largest score of its row exactly, by
//      radix select on order-preserving 32-bit keys (three histogram passes of 11 + 11 + 10 bits),
//      then compacts exactly K' candidates: every key above the threshold, then threshold ties up to
//      K'. K' = k + margin + the block's longest exclusion list (capped at the chunk size).
//   3. The candidates (index, GPU score) and each chunk's threshold come back to the CPU.
//
// Exactness and tie order: the GPU sums in float32 in its own order, so its scores differ from the
// JS path's (float64 sum rounded to float32) by up to ε = dim · 2⁻²² · ‖q‖ · max‖d‖ (a rigorous
// bound on float32 dot-product error, with or without fused multiply-add). The CPU rescores every
// candidate with exactScore() and ranks them with the same TopK and tie-break as exactSearch, so ids
// and scores are bit-identical to the JS path whenever the candidate set is complete. It is complete
// when, for every chunk that was cut, threshold + 2ε < the final k-th score: any document whose exact
// score reaches the k-th has a GPU score above the threshold and was taken. A query that fails the
// check (exact ties or near-duplicates straddling the cut) is recomputed on the CPU, and counted.
import {
  exactScore,
  exactSearch,
  indexTieBreak,
  type Exclusions,
  type KnnResult,
  type Matrix,
} from '../../core/retrieval/exact';
import { TopK, type TieBreak } from '../../core/retrieval/topk';
import { probeWebGpu, type GpuProbe } from './backend';

/** QUERY_BLOCK: queries scored per dispatch (bounded also by the score buffer's binding limit). */
export const QUERY_BLOCK = 256;
/** CANDIDATE_MARGIN: extra candidates per query beyond k, so that near-ties at the cut stay on the GPU path. */
export const CANDIDATE_MARGIN = 16;
/** MAX_K: largest k supported (a select workgroup compacts at most this many plus the margin). */
export const MAX_K = 1000;

const SCORES_WGSL = /* wgsl */ `
struct Params { nq: u32, m: u32, dim: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> Q: array<f32>;
@group(0) @binding(1) var<storage, read> D: array<f32>;
@group(0) @binding(2) var<storage, read_write> S: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

const TILE: u32 = 64u;
const TK: u32 = 16u;
var<workgroup> qs: array<f32, 1024>; // TILE rows × TK, row-major
var<workgroup> ds: array<f32, 1024>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let q0 = wg.y * TILE;
  let d0 = wg.x * TILE;
  let t = lid.y * 16u + lid.x;
  var acc: array<f32, 16>;
  for (var i = 0u; i < 16u; i++) { acc[i] = 0.0; }
  for (var k0 = 0u; k0 < P.dim; k0 += TK) {
    for (var i = 0u; i < 4u; i++) {
      let e = t + i * 256u;
      let row = e / TK;
      let kk = e % TK;
      let col = k0 + kk;
      var qv = 0.0;
      if (q0 + row < P.nq && col < P.dim) { qv = Q[(q0 + row) * P.dim + col]; }
      qs[e] = qv;
      var dv = 0.0;
      if (d0 + row < P.m && col < P.dim) { dv = D[(d0 + row) * P.dim + col]; }
      ds[e] = dv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var r = 0u; r < 4u; r++) {
        a[r] = qs[(lid.y * 4u + r) * TK + kk];
        b[r] = ds[(lid.x * 4u + r) * TK + kk];
      }
      for (var r = 0u; r < 4u; r++) {
        for (var c = 0u; c < 4u; c++) { acc[r * 4u + c] += a[r] * b[c]; }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r++) {
    let q = q0 + lid.y * 4u + r;
    for (var c = 0u; c < 4u; c++) {
      let d = d0 + lid.x * 4u + c;
      if (q < P.nq && d < P.m) { S[q * P.m + d] = acc[r * 4u + c]; }
    }
  }
}`;

const SELECT_WGSL = /* wgsl */ `
struct Params { m: u32, kp: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> S: array<f32>;
@group(0) @binding(1) var<storage, read_write> outIdx: array<u32>;
@group(0) @binding(2) var<storage, read_write> outScore: array<f32>;
@group(0) @binding(3) var<storage, read_write> outMeta: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;

var<workgroup> hist: array<atomic<u32>, 2048>;
var<workgroup> prefix: u32;
var<workgroup> need: u32;
var<workgroup> taken: atomic<u32>;
var<workgroup> ties: atomic<u32>;

// Larger float → larger key (NaN sorts like its bit pattern; rows never contain NaN for finite input).
fn key(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row = wg.x;
  let base = row * P.m;
  let l = lid.x;
  if (l == 0u) { prefix = 0u; need = P.kp; }
  // Three levels: bits 31..21, 20..10, 9..0.
  for (var level = 0u; level < 3u; level++) {
    let shift = select(select(0u, 10u, level == 1u), 21u, level == 0u);
    let width = select(11u, 10u, level == 2u);
    let bins = 1u << width;
    for (var b = l; b < 2048u; b += 256u) { atomicStore(&hist[b], 0u); }
    workgroupBarrier();
    let high = prefix;
    for (var i = l; i < P.m; i += 256u) {
      let k = key(S[base + i]);
      let hi = select(k >> (shift + width), 0u, level == 0u);
      if (hi == high) { atomicAdd(&hist[(k >> shift) & (bins - 1u)], 1u); }
    }
    workgroupBarrier();
    if (l == 0u) {
      var cum = 0u;
      var b = bins;
      loop {
        if (b == 0u) { break; }
        b -= 1u;
        let c = atomicLoad(&hist[b]);
        if (cum + c >= need) { break; }
        cum += c;
      }
      need -= cum;
      prefix = (prefix << width) | b;
    }
    workgroupBarrier();
  }
  let T = prefix;
  let want = need; // threshold ties to take
  let above = P.kp - want;
  if (l == 0u) { atomicStore(&taken, 0u); atomicStore(&ties, 0u); }
  workgroupBarrier();
  for (var i = l; i < P.m; i += 256u) {
    let s = S[base + i];
    let k = key(s);
    var slot = 0xffffffffu;
    if (k > T) {
      slot = atomicAdd(&taken, 1u);
    } else if (k == T) {
      let t = atomicAdd(&ties, 1u);
      if (t < want) { slot = above + t; }
    }
    if (slot < P.kp) {
      outIdx[row * P.kp + slot] = i;
      outScore[row * P.kp + slot] = s;
    }
  }
  if (l == 0u) { outMeta[row * 2u] = P.kp; outMeta[row * 2u + 1u] = T; }
}`;

/** GPUBufferUsage flags (the spec's values; TypeScript's DOM lib declares the types but not the constants). */
/** GPUBufferUsage flags as plain numbers, shared by the compute modules. */
export const USAGE = { MAP_READ: 0x1, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80 } as const;
/** MAP_READ */
const MAP_READ = 0x1;

/** Inverse of the shader's key(): the float whose key is `k`. */
function keyToFloat(k: number): number {
  const u = k & 0x80000000 ? k & 0x7fffffff : ~k >>> 0;
  const b = new Uint32Array([u >>> 0]);
  return new Float32Array(b.buffer)[0];
}

// The adapter probe is backend.ts's, shared with the encoders' choice (one place decides what a
// software adapter is).
export { probeWebGpu, type GpuProbe } from './backend';

/** What one GPU search did, besides its answers. */
export interface GpuSearchStats {
  chunks: number;
  queryBlocks: number;
  /** Candidates per query per chunk (K'). */
  candidatesPerQuery: number;
  /** Queries whose candidate set could not be certified complete and were recomputed on the CPU. */
  cpuFallbackQueries: number;
  /** Largest |GPU score − exact score| over all candidates (float32 rounding of the GPU sum). */
  maxGpuScoreError: number;
  ms: number;
}

export interface GpuSearchOptions {
  k: number;
  tieBreak?: TieBreak;
  exclude?: Exclusions;
}

/** A corpus resident on the GPU, ready for exact searches. */
export interface GpuExact {
  readonly n: number;
  readonly dim: number;
  readonly fallbackAdapter: boolean;
  readonly description: string;
  /** Documents per chunk (each chunk is one storage buffer). */
  readonly chunkDocs: number;
  /** GPU memory held by the corpus, in bytes. */
  readonly bytes: number;
  search(queries: Matrix, opts: GpuSearchOptions): Promise<{ result: KnnResult; stats: GpuSearchStats }>;
  destroy(): void;
}

/**
 * A compute device from `given` (or a fresh probe) with the adapter's largest storage buffers, the
 * largest buffer a binding may take, and why the device was lost once it is (null until then).
 */
export async function openComputeDevice(given?: GpuProbe): Promise<{
  probe: Extract<GpuProbe, { ok: true }>;
  device: GPUDevice;
  limit: number;
  lost: () => string | null;
}> {
  const probe = given ?? (await probeWebGpu());
  if (!probe.ok) throw new Error(`WebGPU unavailable: ${probe.reason}`);
  const { adapter } = probe;
  const limit = Math.min(adapter.limits.maxStorageBufferBindingSize, adapter.limits.maxBufferSize);
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  });
  let lost: string | null = null;
  void device.lost.then((info) => (lost = info.message || info.reason || 'device lost'));
  return { probe, device, limit, lost: () => lost };
}

/**
 * Uploads a corpus (row-major float32, `n × dim`) to the GPU. `maxChunkDocs` caps the documents per
 * chunk below the device limit (tests use it to exercise the chunk merge). The caller keeps `docs`:
 * the CPU side rescoring reads it.
 */
export async function createGpuExact(
  docs: Matrix,
  opts: { maxChunkDocs?: number; probe?: GpuProbe } = {},
): Promise<GpuExact> {
  const { probe, device, limit, lost } = await openComputeDevice(opts.probe);

  const { n, dim } = docs;
  const rowBytes = dim * 4;
  // 64 documents per score workgroup along x, at most 65,535 workgroups per dimension.
  const chunkDocs = Math.max(
    1,
    Math.min(opts.maxChunkDocs ?? Infinity, Math.floor(limit / rowBytes), 65535 * 64, n || 1),
  );
  const chunks: { start: number; m: number; buffer: GPUBuffer; maxNorm: number }[] = [];
  for (let start = 0; start < n; start += chunkDocs) {
    const m = Math.min(chunkDocs, n - start);
    const buffer = device.createBuffer({
      size: m * rowBytes,
      usage: USAGE.STORAGE | USAGE.COPY_DST,
    });
    device.queue.writeBuffer(buffer, 0, docs.data, start * dim, m * dim);
    let maxNorm = 0;
    for (let d = start; d < start + m; d++) {
      let s = 0;
      for (let j = 0; j < dim; j++) s += docs.data[d * dim + j] ** 2;
      maxNorm = Math.max(maxNorm, Math.sqrt(s));
    }
    chunks.push({ start, m, buffer, maxNorm });
  }

  const scoresPipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: SCORES_WGSL }), entryPoint: 'main' },
  });
  const selectPipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: SELECT_WGSL }), entryPoint: 'main' },
  });

  const search = async (queries: Matrix, so: GpuSearchOptions) => {
    if (lost()) throw new Error(`WebGPU device lost: ${lost()}`);
    const t0 = performance.now();
    const k = so.k;
    if (!Number.isInteger(k) || k < 0 || k > MAX_K)
      throw new RangeError(`k must be an integer in [0, ${MAX_K}]`);
    if (queries.dim !== dim) throw new RangeError(`query dimension ${queries.dim} differs from ${dim}`);
    const nq = queries.n;
    const tieBreak = so.tieBreak ?? indexTieBreak;
    const exclude = so.exclude;
    const result: KnnResult = {
      k,
      nq,
      indices: new Int32Array(nq * k).fill(-1),
      scores: new Float32Array(nq * k).fill(-Infinity),
      counts: new Uint32Array(nq),
    };
    const stats: GpuSearchStats = {
      chunks: chunks.length,
      queryBlocks: 0,
      candidatesPerQuery: 0,
      cpuFallbackQueries: 0,
      maxGpuScoreError: 0,
      ms: 0,
    };
    if (k === 0 || n === 0 || nq === 0) return { result, stats };
    const qNorm = new Float64Array(nq);
    for (let q = 0; q < nq; q++) {
      let s = 0;
      for (let j = 0; j < dim; j++) s += queries.data[q * dim + j] ** 2;
      qNorm[q] = Math.sqrt(s);
    }
    const fallback: number[] = [];
    const qBlock = Math.max(1, Math.min(QUERY_BLOCK, nq, Math.floor(limit / (chunkDocs * 4))));
    for (let b0 = 0; b0 < nq; b0 += qBlock) {
      const qb = Math.min(qBlock, nq - b0);
      stats.queryBlocks++;
      let maxEx = 0;
      for (let q = b0; q < b0 + qb; q++) maxEx = Math.max(maxEx, exclude?.[q]?.length ?? 0);
      const kWant = k + CANDIDATE_MARGIN + maxEx;
      stats.candidatesPerQuery = Math.max(stats.candidatesPerQuery, Math.min(kWant, chunkDocs));

      const qBuf = device.createBuffer({
        size: qb * dim * 4,
        usage: USAGE.STORAGE | USAGE.COPY_DST,
      });
      device.queue.writeBuffer(qBuf, 0, queries.data, b0 * dim, qb * dim);
      const sBuf = device.createBuffer({ size: qb * chunkDocs * 4, usage: USAGE.STORAGE });
      const kpMax = Math.min(kWant, chunkDocs);
      const idxBuf = device.createBuffer({
        size: qb * kpMax * 4,
        usage: USAGE.STORAGE | USAGE.COPY_SRC,
      });
      const scBuf = device.createBuffer({
        size: qb * kpMax * 4,
        usage: USAGE.STORAGE | USAGE.COPY_SRC,
      });
      const metaBuf = device.createBuffer({
        size: qb * 8,
        usage: USAGE.STORAGE | USAGE.COPY_SRC,
      });
      // Per chunk: kp × qb indices, kp × qb scores, qb × 2 meta words.
      const perChunk = qb * (kpMax * 8 + 8);
      const readBuf = device.createBuffer({
        size: perChunk * chunks.length,
        usage: USAGE.MAP_READ | USAGE.COPY_DST,
      });
      const uniforms: GPUBuffer[] = [];
      const enc = device.createCommandEncoder();
      chunks.forEach((c, ci) => {
        const kp = Math.min(kWant, c.m);
        const u1 = device.createBuffer({ size: 16, usage: USAGE.UNIFORM | USAGE.COPY_DST });
        device.queue.writeBuffer(u1, 0, new Uint32Array([qb, c.m, dim, 0]));
        const u2 = device.createBuffer({ size: 16, usage: USAGE.UNIFORM | USAGE.COPY_DST });
        device.queue.writeBuffer(u2, 0, new Uint32Array([c.m, kp, 0, 0]));
        uniforms.push(u1, u2);
        const pass = enc.beginComputePass();
        pass.setPipeline(scoresPipeline);
        pass.setBindGroup(
          0,
          device.createBindGroup({
            layout: scoresPipeline.getBindGroupLayout(0),
            entries: [
              { binding: 0, resource: { buffer: qBuf } },
              { binding: 1, resource: { buffer: c.buffer } },
              { binding: 2, resource: { buffer: sBuf, size: qb * c.m * 4 } },
              { binding: 3, resource: { buffer: u1 } },
            ],
          }),
        );
        pass.dispatchWorkgroups(Math.ceil(c.m / 64), Math.ceil(qb / 64));
        pass.setPipeline(selectPipeline);
        pass.setBindGroup(
          0,
          device.createBindGroup({
            layout: selectPipeline.getBindGroupLayout(0),
            entries: [
              { binding: 0, resource: { buffer: sBuf, size: qb * c.m * 4 } },
              { binding: 1, resource: { buffer: idxBuf } },
              { binding: 2, resource: { buffer: scBuf } },
              { binding: 3, resource: { buffer: metaBuf } },
              { binding: 4, resource: { buffer: u2 } },
            ],
          }),
        );
        pass.dispatchWorkgroups(qb);
        pass.end();
        // Rows are kp wide in the candidate buffers; copy qb × kp of them.
        const at = ci * perChunk;
        enc.copyBufferToBuffer(idxBuf, 0, readBuf, at, qb * kp * 4);
        enc.copyBufferToBuffer(scBuf, 0, readBuf, at + qb * kpMax * 4, qb * kp * 4);
        enc.copyBufferToBuffer(metaBuf, 0, readBuf, at + qb * kpMax * 8, qb * 8);
      });
      device.queue.submit([enc.finish()]);
      await readBuf.mapAsync(MAP_READ);
      // Owned by the mapping until unmap(): copy out before releasing.
      const bytes = readBuf.getMappedRange().slice(0);
      readBuf.unmap();
      for (const x of [qBuf, sBuf, idxBuf, scBuf, metaBuf, readBuf, ...uniforms]) x.destroy();
      if (lost()) throw new Error(`WebGPU device lost: ${lost()}`);

      for (let i = 0; i < qb; i++) {
        const q = b0 + i;
        const top = new TopK(k, tieBreak);
        const ex = exclude?.[q] && exclude[q]!.length > 0 ? new Set(Array.from(exclude[q]!)) : null;
        const cuts: number[] = [];
        chunks.forEach((c, ci) => {
          const kp = Math.min(kWant, c.m);
          const at = ci * perChunk;
          const idx = new Uint32Array(bytes, at + i * kp * 4, kp);
          const sc = new Float32Array(bytes, at + qb * kpMax * 4 + i * kp * 4, kp);
          const meta = new Uint32Array(bytes, at + qb * kpMax * 8 + i * 8, 2);
          if (meta[0] !== kp) throw new Error(`GPU select returned ${meta[0]} candidates, expected ${kp}`);
          if (kp < c.m) cuts.push(keyToFloat(meta[1]) + 2 * dim * 2 ** -22 * qNorm[q] * c.maxNorm);
          for (let j = 0; j < kp; j++) {
            const d = c.start + idx[j];
            const s = exactScore(docs, d, queries, q);
            stats.maxGpuScoreError = Math.max(stats.maxGpuScoreError, Math.abs(s - sc[j]));
            if (ex !== null && ex.has(d)) continue;
            top.push(s, d);
          }
        });
        const hits = top.drain();
        const kth = hits.length === k ? hits[k - 1].score : -Infinity;
        if (cuts.some((bound) => !(bound < kth))) {
          fallback.push(q);
          continue;
        }
        const o = q * k;
        hits.forEach((h, j) => {
          result.indices[o + j] = h.index;
          result.scores[o + j] = h.score;
        });
        result.counts[q] = hits.length;
      }
    }
    if (fallback.length) {
      stats.cpuFallbackQueries = fallback.length;
      const sub: Matrix = {
        data: new Float32Array(fallback.length * dim),
        n: fallback.length,
        dim,
      };
      fallback.forEach((q, i) => sub.data.set(queries.data.subarray(q * dim, q * dim + dim), i * dim));
      const cpu = exactSearch(docs, sub, {
        k,
        tieBreak,
        exclude: exclude ? fallback.map((q) => exclude[q]) : undefined,
      });
      fallback.forEach((q, i) => {
        result.indices.set(cpu.indices.subarray(i * k, i * k + k), q * k);
        result.scores.set(cpu.scores.subarray(i * k, i * k + k), q * k);
        result.counts[q] = cpu.counts[i];
      });
    }
    stats.ms = performance.now() - t0;
    return { result, stats };
  };

  return {
    n,
    dim,
    fallbackAdapter: probe.fallbackAdapter,
    description: probe.description,
    chunkDocs,
    bytes: n * rowBytes,
    search,
    destroy() {
      for (const c of chunks) c.buffer.destroy();
      device.destroy();
    },
  };
}
