// The compact vector store's pure parts (src/lib/core/retrieval/int8-scan.ts) and its wasm SIMD
// kernel (workers/kernels/int8-kernel.ts): the kernel's integer sums equal the JS reference (worst-case
// magnitudes included), the codes follow ivf.ts's quantiser, candidate selection equals a full
// sort, and int8 scan + exact rescoring of the top R gives exact search's top 10 (exactSearch over
// the float32 rows, the outside reference) on seeded clustered vectors; and when a dense run takes
// the store (clients/index-client.ts), and how its run is described.
import { describe, expect, it } from 'vitest';
import { clusteredVectors, exactSearch, indexTieBreak, mulberry32 } from '../../src/lib/core/retrieval/exact';
import { encodeValue, quantiserScales } from '../../src/lib/core/retrieval/ivf';
import {
  CandidateHeap,
  ScaleAccumulator,
  encodeRows,
  int8Width,
  queryQmax,
  quantiseQuery,
  rescoreCandidates,
  scanJs,
  topCandidates,
} from '../../src/lib/core/retrieval/int8-scan';
import { describeConfig, runTag, type RetrieverConfig } from '../../src/lib/core/retrieval/runs';
import {
  COMPACT_FROM_BYTES,
  compactFromRows,
  useCompactStore,
} from '../../src/lib/core/retrieval/dense-plan';
import { compactIndex } from '../../src/lib/clients/index-client';
import { INT8_KERNEL_WASM, int8Kernel, int8KernelSupported } from '../../workers/kernels/int8-kernel';

/** A wasm memory holding n rows of codes (P wide), then the query, then the scores. */
function kernelSetup(n: number, P: number) {
  const bytes = n * P + 2 * P + 4 * n;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(bytes / 65536) + 1 });
  const qAt = n * P;
  const outAt = qAt + 2 * P;
  return {
    codes: new Int8Array(memory.buffer, 0, n * P),
    qc: new Int16Array(memory.buffer, qAt, P),
    out: new Int32Array(memory.buffer, outAt, n),
    scan: () => int8Kernel(memory)(0, qAt, outAt, n, P),
  };
}

describe('int8 scan kernel (hand-assembled wasm SIMD)', () => {
  it('is a valid module this engine runs', () => {
    expect(WebAssembly.validate(INT8_KERNEL_WASM)).toBe(true);
    expect(int8KernelSupported()).toBe(true);
  });

  it.each([16, 32, 400, 512])('gives scanJs’s integer sums for rows %i wide', (P) => {
    const n = 777;
    const k = kernelSetup(n, P);
    const rand = mulberry32(P);
    for (let i = 0; i < k.codes.length; i++) k.codes[i] = Math.floor(rand() * 255) - 127;
    const qmax = queryQmax(P);
    for (let j = 0; j < P; j++) k.qc[j] = Math.floor(rand() * (2 * qmax + 1)) - qmax;
    k.scan();
    const ref = new Int32Array(n);
    scanJs(k.codes, 0, n, P, k.qc, ref);
    expect(Array.from(k.out)).toEqual(Array.from(ref));
    // Not trivially zero: the sums spread over a wide range.
    expect(Math.max(...ref) - Math.min(...ref)).toBeGreaterThan(1e6);
  });

  it('does not wrap at the largest magnitudes the store can produce', () => {
    const P = 512;
    const qmax = queryQmax(P);
    const k = kernelSetup(3, P);
    k.codes.fill(127, 0, P);
    k.codes.fill(-127, P, 2 * P);
    for (let j = 0; j < P; j++) k.codes[2 * P + j] = j % 2 ? 127 : -127;
    k.qc.fill(qmax);
    k.scan();
    expect(Array.from(k.out)).toEqual([P * 127 * qmax, -P * 127 * qmax, 0]);
    expect(P * 127 * qmax).toBeLessThan(2 ** 31);
  });
});

describe('int8 codes (ivf.ts’s quantiser)', () => {
  const dim = 40;
  const { data } = clusteredVectors(dim, { seed: 3 }).generate(300);

  it('accumulates over batches the scales quantiserScales gives for all rows at once', () => {
    const acc = new ScaleAccumulator(dim);
    acc.observe(data.subarray(0, 100 * dim));
    acc.observe(data.subarray(100 * dim));
    expect(acc.rows).toBe(300);
    expect(Array.from(acc.scales())).toEqual(Array.from(quantiserScales(data, 300, dim)));
    // A dimension that is zero everywhere gets scale 1, as in ivf.ts.
    const z = new ScaleAccumulator(2);
    z.observe(new Float32Array([0.5, 0, -0.25, 0]));
    expect(Array.from(z.scales())).toEqual([Math.fround(0.5 / 127), 1]);
    expect(() => z.observe(new Float32Array(3))).toThrow('3 values is not a multiple of 2');
  });

  it('encodes rows with encodeValue into rows padded to 16 with zeros', () => {
    const s = quantiserScales(data, 300, dim);
    const P = int8Width(dim);
    expect(P).toBe(48);
    const out = new Int8Array(302 * P).fill(99);
    encodeRows(data, dim, s, out, 2);
    for (let i = 0; i < 300; i++)
      for (let j = 0; j < P; j++) {
        const c = out[(i + 2) * P + j];
        if (j >= dim) expect(c).toBe(0);
        else {
          expect(c).toBe(encodeValue(data[i * dim + j], s[j]) + 0); // + 0: an Int8Array holds no −0
          // The definition: within half a step of the value.
          expect(Math.abs(c * s[j] - data[i * dim + j])).toBeLessThanOrEqual(s[j] / 2 + 1e-7);
        }
      }
    expect(out[0]).toBe(99);
  });

  it('quantises a query to integers within half a step of q_d · s_d', () => {
    const s = quantiserScales(data, 300, dim);
    const qc = new Int16Array(int8Width(dim)).fill(7);
    const t = quantiseQuery(data, 5 * dim, dim, s, qc);
    const qmax = queryQmax(int8Width(dim));
    expect(Math.max(...Array.from(qc, Math.abs))).toBe(qmax);
    for (let j = 0; j < dim; j++)
      expect(Math.abs(qc[j] * t - data[5 * dim + j] * s[j])).toBeLessThanOrEqual(t / 2 + 1e-12);
    expect(Array.from(qc.subarray(dim))).toEqual(new Array(int8Width(dim) - dim).fill(0));
    expect(quantiseQuery(new Float32Array(dim), 0, dim, s, qc)).toBe(0);
    expect(Array.from(qc).every((v) => v === 0)).toBe(true);
  });
});

describe('candidate selection and exact rescoring', () => {
  it('picks the R highest scores, lower row first on ties, skipping exclusions, in row order', () => {
    const rand = mulberry32(9);
    const n = 5000;
    // Few distinct values: many ties at the cut.
    const scores = Int32Array.from({ length: n }, () => Math.floor(rand() * 50) - 25);
    const exclude = new Set([3, 17, 4000, 4999]);
    for (const R of [1, 10, 100, 333]) {
      const want = Array.from({ length: n }, (_, r) => r)
        .filter((r) => !exclude.has(r))
        .sort((a, b) => scores[b] - scores[a] || a - b)
        .slice(0, R)
        .sort((a, b) => a - b);
      expect(Array.from(topCandidates(scores, n, R, exclude))).toEqual(want);
    }
    expect(Array.from(topCandidates(scores, 3, 10))).toEqual([0, 1, 2]);
  });

  it('selects the same offered block by block, its buffer cut many times, with the scores of the rows', () => {
    const rand = mulberry32(17);
    const n = 50_000;
    // Few distinct values (ties across every cut and block edge), and a rising trend (many cuts).
    const scores = Int32Array.from({ length: n }, (_, r) => Math.floor(rand() * 40) + (r >> 12));
    const exclude = new Set([5, 49_999, 40_000, 40_001]);
    for (const R of [1, 7, 100, 2000]) {
      const want = Array.from({ length: n }, (_, r) => r)
        .filter((r) => !exclude.has(r))
        .sort((a, b) => scores[b] - scores[a] || a - b)
        .slice(0, R)
        .sort((a, b) => a - b);
      const heap = new CandidateHeap(R);
      for (let first = 0, step = 1; first < n; first += step, step = 1 + Math.floor(rand() * 3000))
        heap.offer(scores.subarray(first), Math.min(step, n - first), first, exclude);
      const got = heap.result();
      expect(Array.from(got.rows)).toEqual(want);
      expect(Array.from(got.scores)).toEqual(want.map((r) => scores[r]));
    }
    // The lowest int32 scores are kept like any other.
    const low = new Int32Array(5).fill(-(2 ** 31));
    expect(Array.from(topCandidates(low, 5, 3))).toEqual([0, 1, 2]);
  });

  it('int8 scan + exact rescoring of the top 100 gives exact search’s top 10, ids and scores', () => {
    const dim = 64;
    const n = 20_000;
    const nq = 100;
    const gen = clusteredVectors(dim, { seed: 21 });
    const docs = gen.generate(n);
    const queries = gen.generate(nq);
    const ref = exactSearch(docs, queries, { k: 10, tieBreak: indexTieBreak });
    const acc = new ScaleAccumulator(dim);
    acc.observe(docs.data);
    const s = acc.scales();
    const P = int8Width(dim);
    const codes = new Int8Array(n * P);
    encodeRows(docs.data, dim, s, codes, 0);
    const qc = new Int16Array(P);
    const scores = new Int32Array(n);
    let same = 0;
    for (let q = 0; q < nq; q++) {
      quantiseQuery(queries.data, q * dim, dim, s, qc);
      scanJs(codes, 0, n, P, qc, scores);
      const cand = topCandidates(scores, n, 100);
      const rows = new Float32Array(cand.length * dim);
      cand.forEach((r, i) => rows.set(docs.data.subarray(r * dim, (r + 1) * dim), i * dim));
      const top = rescoreCandidates(queries.data, q * dim, dim, cand, rows, 10, indexTieBreak);
      const ids = top.map((e) => e.index);
      const want = Array.from(ref.indices.subarray(q * 10, q * 10 + 10));
      if (ids.join() === want.join()) {
        same++;
        expect(top.map((e) => e.score)).toEqual(Array.from(ref.scores.subarray(q * 10, q * 10 + 10)));
      }
    }
    // Every query on this data; a miss would need a true top-10 row ranked below 100 by int8.
    expect(same).toBe(nq);
  });

  it('with R too small the rescoring can only reorder what the scan kept', () => {
    const cand = Int32Array.from([4, 9]);
    const rows = new Float32Array([1, 0, 0, 1]);
    const q = new Float32Array([0.25, 0.75]);
    expect(rescoreCandidates(q, 0, 2, cand, rows, 10, indexTieBreak)).toEqual([
      { index: 9, score: 0.75 },
      { index: 4, score: 0.25 },
    ]);
  });
});

describe('when a dense run takes the compact store', () => {
  it('from 256 MiB of float32 rows (174,763 documents at 384), single-vector exact runs only', () => {
    expect(compactFromRows(384)).toBe(Math.ceil(COMPACT_FROM_BYTES / (4 * 384)));
    expect(compactFromRows(384)).toBe(174_763);
    expect(compactFromRows(384, 20_000)).toBe(20_000);
    const s = {};
    expect(useCompactStore(174_762, 384, s, false, 1)).toBe(false);
    expect(useCompactStore(174_763, 384, s, false, 1)).toBe(true);
    expect(useCompactStore(1_000_000, 384, { ann: { M: 16 } }, false, 1)).toBe(false);
    expect(useCompactStore(1_000_000, 384, s, true, 1)).toBe(false);
    expect(useCompactStore(1_000_000, 384, s, false, 2)).toBe(false);
    expect(useCompactStore(20_000, 384, { compactFrom: 20_000 }, false, 1)).toBe(true);
  });

  it('names the index in the run’s description and TREC tag', () => {
    const c: RetrieverConfig = {
      kind: 'dense',
      modelId: 'loupe-test/bert-tiny-random',
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
      index: compactIndex(100),
    };
    expect(describeConfig(c)).toBe(
      'loupe-test/bert-tiny-random (fp32, wasm) · 4-bit scan, int8 rescoring of the best 2000, exact rescoring of top 100',
    );
    expect(runTag(c)).toBe('loupe-dense-loupe-test_bert-tiny-random-fp32-4b2000-int8r100');
    // A deeper run rescores its whole depth.
    expect(compactIndex(1000)).toEqual({
      kind: 'int8-rescore',
      rerank: 1000,
      firstPass: { bits: 4, candidates: 2000 },
    });
    expect(compactIndex(5000).firstPass).toEqual({ bits: 4, candidates: 5000 });
    // Runs stored before the two-pass scan keep their description and tag.
    const old: RetrieverConfig = { ...c, index: { kind: 'int8-rescore', rerank: 100 } };
    expect(describeConfig(old)).toBe(
      'loupe-test/bert-tiny-random (fp32, wasm) · int8 scan + exact rescoring of top 100',
    );
    expect(runTag(old)).toBe('loupe-dense-loupe-test_bert-tiny-random-fp32-int8r100');
  });
});
