// The compact store's two-pass scan, pure parts (src/lib/core/retrieval/nibble-scan.ts) and its
// plain-SIMD kernel in Node (workers/kernels/nibble-kernel.ts; the relaxed kernel is checked in Chromium by
// tests/e2e/compact-store.test.ts): the planes hold int8-scan's codes exactly (16 · (u − 8) + l =
// encodeRows's code), the plane sums combine into the int8 score, the kernel gives the JS
// reference's integers, and the two passes + exact rescoring give exact search's top 10
// (exactSearch over the float32 rows, the outside reference).
import { describe, expect, it } from 'vitest';
import { clusteredVectors, exactSearch, indexTieBreak, mulberry32 } from '../../src/lib/core/retrieval/exact';
import {
  ScaleAccumulator,
  encodeRows,
  int8Width,
  rescoreCandidates,
} from '../../src/lib/core/retrieval/int8-scan';
import {
  FIRST_PASS_CANDIDATES,
  combinePlanes,
  encodeNibbleRows,
  nibbleAt,
  nibbleCode,
  nibbleQmax,
  nibbleWidth,
  quantiseQueryNibbles,
  scanNibblesJs,
} from '../../src/lib/core/retrieval/nibble-scan';
import { NIBBLE_KERNEL_WASM, nibbleKernel, nibbleKernelSupported } from '../../workers/kernels/nibble-kernel';
import { LO_SCRATCH_ROWS, NibblePlanes, planeRows, planesLayout } from '../../workers/index/nibble-planes';
import { MemoryRows } from '../../workers/index/chunked-exact';

describe('4-bit planes of the int8 codes', () => {
  it('puts dimension d of group g in byte 16g + (d mod 16), low half then high half', () => {
    expect(nibbleWidth(384)).toBe(192);
    expect(nibbleWidth(40)).toBe(32);
    expect(nibbleWidth(32)).toBe(16);
    expect(nibbleAt(0)).toEqual({ byte: 0, shift: 0 });
    expect(nibbleAt(15)).toEqual({ byte: 15, shift: 0 });
    expect(nibbleAt(16)).toEqual({ byte: 0, shift: 4 });
    expect(nibbleAt(31)).toEqual({ byte: 15, shift: 4 });
    expect(nibbleAt(32)).toEqual({ byte: 16, shift: 0 });
    expect(nibbleAt(383)).toEqual({ byte: 191, shift: 4 });
  });

  it.each([40, 64, 100])(
    'hold encodeRows’s int8 codes exactly at %i dimensions, padding as code 0',
    (dim) => {
      const n = 200;
      const { data } = clusteredVectors(dim, { seed: dim }).generate(n);
      // Extreme values too: ±max of a dimension encodes to ±127.
      data[0] = 5;
      data[1] = -5;
      const acc = new ScaleAccumulator(dim);
      acc.observe(data);
      const s = acc.scales();
      const P = int8Width(dim);
      const codes = new Int8Array(n * P);
      encodeRows(data, dim, s, codes, 0);
      const W = nibbleWidth(dim);
      const hi = new Uint8Array((n + 1) * W).fill(0x33);
      const lo = new Uint8Array((n + 1) * W).fill(0x33);
      encodeNibbleRows(data, dim, s, hi, lo, 1);
      expect(hi.subarray(0, W).every((b) => b === 0x33)).toBe(true);
      const seen = new Set<number>();
      for (let r = 0; r < n; r++)
        for (let d = 0; d < 2 * W; d++) {
          const c = nibbleCode(hi, lo, W, r + 1, d);
          seen.add(c);
          expect(c).toBe(d < dim ? codes[r * P + d] : 0);
        }
      expect(seen.has(127) && seen.has(-127)).toBe(true);
    },
  );

  it('keeps the relaxed kernel’s int16 lanes from wrapping: 4 · (W / 16) · 15 · qmax ≤ 32,767', () => {
    for (const dim of [16, 64, 96, 128, 384, 768, 1024]) {
      const W = nibbleWidth(dim);
      const qmax = nibbleQmax(W);
      expect(4 * (W / 16) * 15 * qmax).toBeLessThanOrEqual(32_767);
      expect(qmax === 127 || 4 * (W / 16) * 15 * (qmax + 1) > 32_767).toBe(true);
    }
    expect(nibbleQmax(192)).toBe(45);
    expect(nibbleQmax(48)).toBe(127);
  });

  it('quantises a query to integers within half a step of q_d · s_d, at most qmax', () => {
    const dim = 384;
    const { data } = clusteredVectors(dim, { seed: 4 }).generate(50);
    const acc = new ScaleAccumulator(dim);
    acc.observe(data);
    const s = acc.scales();
    const out = new Int8Array(2 * nibbleWidth(dim)).fill(9);
    const t = quantiseQueryNibbles(data, 7 * dim, dim, s, out);
    expect(Math.max(...Array.from(out, Math.abs))).toBe(45);
    for (let j = 0; j < dim; j++)
      expect(Math.abs(out[j] * t - data[7 * dim + j] * s[j])).toBeLessThanOrEqual(t / 2 + 1e-12);
    expect(Array.from(out.subarray(dim)).every((v) => v === 0)).toBe(true);
    expect(quantiseQueryNibbles(new Float32Array(dim), 0, dim, s, out)).toBe(0);
    expect(out.every((v) => v === 0)).toBe(true);
  });

  it('plane sums combine into the int8 score: 16 · A + B = Σ q_d · c_d + 128 · Σ q_d', () => {
    const dim = 70;
    const n = 300;
    const { data } = clusteredVectors(dim, { seed: 8 }).generate(n);
    const acc = new ScaleAccumulator(dim);
    acc.observe(data);
    const s = acc.scales();
    const P = int8Width(dim);
    const codes = new Int8Array(n * P);
    encodeRows(data, dim, s, codes, 0);
    const W = nibbleWidth(dim);
    const hi = new Uint8Array(n * W);
    const lo = new Uint8Array(n * W);
    encodeNibbleRows(data, dim, s, hi, lo, 0);
    const rand = mulberry32(3);
    const q = Int8Array.from({ length: 2 * W }, (_, j) => (j < dim ? Math.floor(rand() * 91) - 45 : 0));
    const a = new Int32Array(n);
    const b = new Int32Array(n);
    scanNibblesJs(hi, 0, n, W, q, a);
    scanNibblesJs(lo, 0, n, W, q, b);
    combinePlanes(a, b, n);
    const sumQ = q.reduce((x, v) => x + v, 0);
    for (let r = 0; r < n; r++) {
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += q[d] * codes[r * P + d];
      expect(a[r]).toBe(dot + 128 * sumQ);
    }
  });
});

describe('nibble scan kernel (plain wasm SIMD, in Node)', () => {
  it('is valid here and gives scanNibblesJs’s integers, at the largest magnitudes too', () => {
    expect(WebAssembly.validate(NIBBLE_KERNEL_WASM['wasm-simd'])).toBe(true);
    expect(['wasm-relaxed-simd', 'wasm-simd']).toContain(nibbleKernelSupported());
    for (const W of [16, 48, 192]) {
      const n = 301;
      const memory = new WebAssembly.Memory({ initial: Math.ceil((n * W + 4 * W + 4 * n) / 65536) + 1 });
      const plane = new Uint8Array(memory.buffer, 0, n * W);
      const q16 = new Int16Array(memory.buffer, n * W, 2 * W);
      const out = new Int32Array(memory.buffer, n * W + 4 * W, n);
      const rand = mulberry32(W);
      for (let i = 0; i < plane.length; i++) plane[i] = Math.floor(rand() * 256);
      plane.fill(0xff, 0, W);
      const qmax = nibbleQmax(W);
      const q8 = Int8Array.from({ length: 2 * W }, () => Math.floor(rand() * (2 * qmax + 1)) - qmax);
      const scan = nibbleKernel(memory, 'wasm-simd');
      const ref = new Int32Array(n);
      for (const fill of [null, qmax, -qmax]) {
        if (fill !== null) q8.fill(fill);
        q16.set(q8);
        scan(0, q16.byteOffset, out.byteOffset, n, W);
        scanNibblesJs(plane, 0, n, W, q8, ref);
        expect(Array.from(out)).toEqual(Array.from(ref));
        if (fill !== null) expect(out[0]).toBe(2 * W * 15 * fill);
      }
    }
  });
});

describe('two passes + exact rescoring (workers/index/nibble-planes.ts)', () => {
  const dim = 64;
  const n = 20_001; // not a multiple of 4: the planes pad to 20,004 rows
  const nq = 60;
  const gen = clusteredVectors(dim, { seed: 31 });
  const docs = gen.generate(n);
  const queries = gen.generate(nq);
  const ref = exactSearch(docs, queries, { k: 10, tieBreak: indexTieBreak });
  const acc = new ScaleAccumulator(dim);
  acc.observe(docs.data);
  const s = acc.scales();
  const layout = planesLayout(n, dim, 0);
  const outAt = Math.ceil((layout.hiAt + layout.bytes) / 16) * 16;
  const memory = new WebAssembly.Memory({ initial: Math.ceil((outAt + 4 * 4096) / 65536) });
  const planes = new NibblePlanes(memory, layout, n, dim);
  planes.encode(docs.data, s, 0);
  const block = new Int32Array(memory.buffer, outAt, 4096);

  it('lays the planes out for n rounded up to 4, and names its kernel', () => {
    expect(planeRows(n)).toBe(20_004);
    expect(planes.bytes()).toBe(2 * 20_004 * 32);
    expect(layout.loAt - layout.hiAt).toBe(20_004 * 32);
    expect(planes.kernel).toBe(nibbleKernelSupported());
  });

  it('gives exact search’s top 10 (ids and scores) with 2000 candidates and R = 100', () => {
    expect(FIRST_PASS_CANDIDATES).toBe(2000);
    for (let q = 0; q < nq; q++) {
      const cand = planes.select(queries.data, q * dim, s, FIRST_PASS_CANDIDATES, 100, null, block, outAt);
      expect(cand.length).toBe(100);
      expect(Array.from(cand)).toEqual(Array.from(cand).sort((a, b) => a - b));
      const rows = new Float32Array(cand.length * dim);
      cand.forEach((r, i) => rows.set(docs.data.subarray(r * dim, (r + 1) * dim), i * dim));
      const top = rescoreCandidates(queries.data, q * dim, dim, cand, rows, 10, indexTieBreak);
      expect(top.map((e) => e.index)).toEqual(Array.from(ref.indices.subarray(q * 10, q * 10 + 10)));
      expect(top.map((e) => e.score)).toEqual(Array.from(ref.scores.subarray(q * 10, q * 10 + 10)));
    }
  });

  it('selects the same rows with the JS scans (an engine without wasm SIMD)', () => {
    const js = new NibblePlanes(memory, layout, n, dim, 'js');
    expect(js.kernel).toBe('js');
    for (const q of [0, 1, 2]) {
      const want = Array.from(planes.select(queries.data, q * dim, s, 500, 100, null, block, outAt));
      expect(Array.from(js.select(queries.data, q * dim, s, 500, 100, null, block, outAt))).toEqual(want);
    }
  });

  it('keeps the best by int8 score among the candidates, skipping exclusions', () => {
    const q = 3;
    const int8 = planes.select(queries.data, q * dim, s, FIRST_PASS_CANDIDATES, 20, null, block, outAt);
    // The reference: the JS scans of both planes over every row, ranked by 16 · A + B.
    const W = nibbleWidth(dim);
    const q8 = new Int8Array(2 * W);
    quantiseQueryNibbles(queries.data, q * dim, dim, s, q8);
    const a = new Int32Array(n);
    const b = new Int32Array(n);
    scanNibblesJs(planes.hi, 0, n, W, q8, a);
    scanNibblesJs(planes.lo, 0, n, W, q8, b);
    combinePlanes(a, b, n);
    const byScore = Array.from({ length: n }, (_, r) => r).sort((x, y) => a[y] - a[x] || x - y);
    expect(Array.from(int8)).toEqual(byScore.slice(0, 20).sort((x, y) => x - y));
    const ex = new Set(byScore.slice(0, 5));
    const without = planes.select(queries.data, q * dim, s, FIRST_PASS_CANDIDATES, 20, ex, block, outAt);
    expect(Array.from(without)).toEqual(byScore.slice(5, 25).sort((x, y) => x - y));
    // Fewer candidates than kept: the first pass's best `keep` go on as they are.
    expect(planes.select(queries.data, q * dim, s, 5, 20, null, block, outAt).length).toBe(20);
  });

  it('selects the same rows with the low plane in a row store, holding only the high plane in memory', () => {
    const W = nibbleWidth(dim);
    const split = planesLayout(n, dim, 0, false);
    expect(split.scratchRows).toBe(LO_SCRATCH_ROWS);
    expect(split.bytes).toBe(20_004 * W + 6 * W + LO_SCRATCH_ROWS * W);
    const at = Math.ceil((split.hiAt + split.bytes) / 16) * 16;
    const mem = new WebAssembly.Memory({ initial: Math.ceil((at + 4 * 4096) / 65536) });
    const lo = new MemoryRows(W / 4, 4096);
    for (const use of [undefined, 'js'] as const) {
      const p = new NibblePlanes(mem, split, n, dim, use, lo);
      // Out of order, in pieces larger than the scratch (as a streamed corpus's blocks may come).
      p.encode(docs.data.subarray(7_000 * dim), s, 7_000);
      p.encode(docs.data.subarray(0, 7_000 * dim), s, 0);
      expect(p.bytes()).toBe(20_004 * W);
      expect(p.hi).toEqual(planes.hi);
      const out = new Int32Array(mem.buffer, at, 4096);
      for (const q of [0, 1, 2, 3]) {
        const ex = q === 3 ? new Set([5, 17, 4000]) : null;
        for (const [cands, keep] of [
          [FIRST_PASS_CANDIDATES, 100],
          [3_000, 20],
        ])
          expect(Array.from(p.select(queries.data, q * dim, s, cands, keep, ex, out, at))).toEqual(
            Array.from(planes.select(queries.data, q * dim, s, cands, keep, ex, block, outAt)),
          );
      }
      // Each second pass read its candidates' low rows, W bytes each.
      expect(p.loBytesRead).toBe(4 * (FIRST_PASS_CANDIDATES + 3_000) * W);
    }
  });
});
