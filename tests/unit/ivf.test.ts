// The packed IVF-int8 format (src/lib/core/retrieval/ivf.ts): header and list layout read back
// field by field, codes against the quantiser's definition, bad files named with what is wrong, and
// search on small seeded sets against brute force over the same float16 rows.
import { describe, expect, it } from 'vitest';
import { clusteredVectors } from '../../src/lib/core/retrieval/exact';
import {
  IVF_FIXED_BYTES,
  IvfFormatError,
  buildIvf,
  assignRows,
  defaultNprobe,
  Candidates,
  int8Candidates,
  scaledQuery,
  scoreList,
  fnv1a,
  ivfHeaderBytes,
  listCount,
  parseIvfFixed,
  parseIvfHeader,
  parseIvfList,
  probeLists,
  rowRuns,
  searchIvf,
  trainCentroids,
  type IvfHeader,
} from '../../src/lib/core/retrieval/ivf';
import { f16ToF32, f32ToF16 } from '../../src/lib/core/shard/vector-files';

const N = 4000;
const DIM = 32;
const NLIST = 40;
const { data: raw } = clusteredVectors(DIM, { clusters: 60, rank: 8, noise: 0.3, seed: 7 }).generate(N + 200);
/** Rows as the .npy holds them: float16, and the float32 values those halves stand for. */
const bits = Uint16Array.from(raw.subarray(0, N * DIM), (x) => f32ToF16(x));
const rows = Float32Array.from(bits, (b) => f16ToF32(b));
const queries = raw.subarray(N * DIM);
const file = buildIvf(rows, N, DIM, { nlist: NLIST, npyDataOffset: 128, seed: 3, iterations: 6 });
const header = parseIvfHeader(file, 'ivf-text.bin', file.length);
const list = (l: number) =>
  parseIvfList(header, l, file.subarray(header.offsets[l], header.offsets[l + 1]), 'ivf-text.bin');
const row = (r: number) => bits.subarray(r * DIM, r * DIM + DIM);

/** Brute force: every row's exact score (float64 sum, rounded to float32), score desc then row asc. */
function brute(q: Float32Array, k: number): number[] {
  const s = Array.from({ length: N }, (_, r) => {
    let t = 0;
    for (let j = 0; j < DIM; j++) t += q[j] * rows[r * DIM + j];
    return Math.fround(t);
  });
  return Array.from({ length: N }, (_, r) => r)
    .sort((a, b) => s[b] - s[a] || a - b)
    .slice(0, k);
}

describe('IVF-int8 file layout', () => {
  it('writes the fixed header fields at their documented offsets', () => {
    const dv = new DataView(file.buffer, file.byteOffset);
    expect(new TextDecoder().decode(file.subarray(0, 8))).toBe('LOUPEIVF');
    expect(dv.getUint32(8, true)).toBe(1);
    expect(dv.getUint32(12, true)).toBe(ivfHeaderBytes(DIM, NLIST));
    expect(ivfHeaderBytes(DIM, NLIST) % 8).toBe(0);
    expect([dv.getUint32(16, true), dv.getUint32(20, true), dv.getUint32(24, true)]).toEqual([DIM, NLIST, N]);
    expect(dv.getUint32(28, true)).toBe(128);
    expect(dv.getUint32(32, true)).toBe(fnv1a(file.subarray(IVF_FIXED_BYTES)));
    expect(parseIvfFixed(file.subarray(0, IVF_FIXED_BYTES), 'x')).toMatchObject({
      dim: DIM,
      nlist: NLIST,
      n: N,
    });
  });

  it('puts every row in exactly one list, ascending, with its int8 codes, contiguous lists to the end of the file', () => {
    const seen = new Int32Array(N);
    let total = 0;
    for (let l = 0; l < NLIST; l++) {
      expect(header.offsets[l + 1] - header.offsets[l]).toBe(listCount(header, l) * (4 + DIM));
      const { rows: ids, codes } = list(l);
      total += ids.length;
      for (let i = 0; i < ids.length; i++) {
        seen[ids[i]]++;
        if (i) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
        for (let j = 0; j < DIM; j++)
          // The definition: round(x / s), clamped to ±127 (| 0 turns a rounded −0 into the code 0).
          expect(codes[i * DIM + j]).toBe(
            Math.max(-127, Math.min(127, Math.round(rows[ids[i] * DIM + j] / header.scales[j]))) | 0,
          );
      }
    }
    expect(total).toBe(N);
    expect(seen.every((c) => c === 1)).toBe(true);
    expect(header.offsets[0]).toBe(header.headerBytes);
    expect(header.offsets[NLIST]).toBe(file.length);
  });

  it('decodes codes to within half a quantiser step of each value', () => {
    const { rows: ids, codes } = list(0);
    for (let j = 0; j < DIM; j++) {
      const x = rows[ids[0] * DIM + j];
      expect(Math.abs(codes[j] * header.scales[j] - x)).toBeLessThanOrEqual(header.scales[j] / 2 + 1e-7);
    }
  });

  it('puts a row in the list of its nearest centroid', () => {
    const { rows: ids } = list(5);
    for (const r of ids.slice(0, 20)) {
      const best = probeLists(header, rows.subarray(r * DIM, r * DIM + DIM), 1)[0];
      expect(best).toBe(5);
    }
  });

  it('refuses bad files, saying what is wrong', () => {
    const bad = file.slice(0, 200);
    bad[0] = 0x58;
    expect(() => parseIvfHeader(bad, 'a/ivf-text.bin')).toThrow(/a\/ivf-text\.bin: not a Loupe IVF index/);
    const v2 = file.slice(0, header.headerBytes);
    new DataView(v2.buffer).setUint32(8, 2, true);
    expect(() => parseIvfHeader(v2, 'f')).toThrow(/format version 2/);
    expect(() => parseIvfHeader(file.subarray(0, 100), 'f')).toThrow(/header cut short: 100 of/);
    expect(() => parseIvfHeader(file, 'f', file.length + 1)).toThrow(/the file has/);
    expect(() =>
      parseIvfList(header, 1, file.subarray(header.offsets[1], header.offsets[2] - 1), 'f'),
    ).toThrow(IvfFormatError);
    const swapped = file.slice(header.offsets[2], header.offsets[3]);
    if (listCount(header, 2) > 1) {
      new DataView(swapped.buffer).setUint32(4, 0, true);
      expect(() => parseIvfList(header, 2, swapped, 'f')).toThrow(/list 2: row number 0 at position 1/);
    }
  });

  it('assigns every row to its exact nearest centroid (any row count, odd list count)', () => {
    for (const [rows_, lists] of [
      [N, 255],
      [N - 3, 8],
      [5, 1],
    ] as const) {
      const centroids = trainCentroids(rows, N, DIM, lists, { seed: 5, iterations: 3 });
      const got = assignRows(centroids, lists, rows, rows_, DIM);
      expect(got.length).toBe(rows_);
      for (let r = 0; r < rows_; r++) {
        const dot = (c: number) => {
          let s = 0;
          for (let j = 0; j < DIM; j++) s += centroids[c * DIM + j] * rows[r * DIM + j];
          return s;
        };
        let best = 0;
        for (let c = 1; c < lists; c++) if (dot(c) > dot(best)) best = c;
        expect(got[r], `row ${r} of ${rows_}, ${lists} lists`).toBe(best);
      }
    }
  });

  it('groups sorted rows into runs of consecutive rows', () => {
    expect(rowRuns([1, 2, 3, 7, 9, 10])).toEqual([
      [1, 3],
      [7, 1],
      [9, 2],
    ]);
    expect(rowRuns([])).toEqual([]);
  });
});

describe('IVF-int8 search against brute force', () => {
  const search = (q: Float32Array, nprobe: number, rerank: number, k = 10) =>
    searchIvf(header as IvfHeader, list, row, f16ToF32, q, { k, nprobe, rerank });
  const query = (i: number) => queries.subarray(i * DIM, i * DIM + DIM);

  it('equals brute force exactly when every list is probed and every row rescored', () => {
    for (let i = 0; i < 20; i++) expect(search(query(i), NLIST, N).rows).toEqual(brute(query(i), 10));
  });

  it('reaches recall@10 ≥ 0.95 probing a quarter of the lists with 4k rescored', () => {
    let hit = 0;
    for (let i = 0; i < 200; i++) {
      const truth = new Set(brute(query(i), 10));
      hit += search(query(i), NLIST / 4, 40).rows.filter((r) => truth.has(r)).length;
    }
    expect(hit / 2000).toBeGreaterThanOrEqual(0.95);
  });

  it('returns exact scores, best first, from the probed lists only', () => {
    const r = search(query(3), 4, 40);
    expect(r.probed).toHaveLength(4);
    const inProbed = new Set(r.probed.flatMap((l) => Array.from(list(l).rows)));
    for (let i = 0; i < r.rows.length; i++) {
      expect(inProbed.has(r.rows[i])).toBe(true);
      let t = 0;
      for (let j = 0; j < DIM; j++) t += query(3)[j] * rows[r.rows[i] * DIM + j];
      expect(r.scores[i]).toBe(Math.fround(t));
      if (i) expect(r.scores[i]).toBeLessThanOrEqual(r.scores[i - 1]);
    }
  });

  it('gives scoreList’s very candidates from approximate scores, or null when they cannot decide', () => {
    const probed = [0, 3, 7, 11].map(list);
    const total = probed.reduce((t, l) => t + l.rows.length, 0);
    let decided = 0;
    for (let qi = 0; qi < 20; qi++) {
      const q = queries.subarray(qi * DIM, (qi + 1) * DIM);
      const ref = new Candidates(40);
      for (const l of probed) scoreList(header, l, q, ref);
      const qs = scaledQuery(header, q);
      const l1 = qs.reduce((t, x) => t + Math.abs(x), 0);
      const eps = (DIM + 2) * 2 ** -23 * 127 * l1;
      // Each score moved by up to eps, as a float32 GPU sum may be.
      const exact: number[] = [];
      for (const l of probed)
        for (let i = 0; i < l.rows.length; i++) {
          let s = 0;
          for (let j = 0; j < DIM; j++) s += qs[j] * l.codes[i * DIM + j];
          exact.push(s);
        }
      const approx = Float32Array.from(exact, (s, i) => s + eps * Math.sin(i * 7.3 + qi));
      const got = int8Candidates(header, probed, q, approx, eps, 40);
      if (got) {
        decided++;
        expect(got.rows).toEqual(ref.rows);
        expect(got.scores).toEqual(ref.scores);
      }
      // An eps that covers every gap can never decide.
      expect(int8Candidates(header, probed, q, approx, 1e9, 40)).toBeNull();
    }
    expect(total).toBeGreaterThan(56);
    expect(decided).toBeGreaterThanOrEqual(15);
    // Fewer rows than size + margin: all are scored exactly, always decided.
    const one = [list(0)];
    const q0 = queries.subarray(0, DIM);
    const ref = new Candidates(one[0].rows.length);
    scoreList(header, one[0], q0, ref);
    const got = int8Candidates(header, one, q0, new Float32Array(one[0].rows.length), 0, one[0].rows.length);
    expect(got?.rows).toEqual(ref.rows);
  });

  it('probes 1.2 % of the lists by default, at least 16, never more than there are', () => {
    expect([8, 632, 1095, 1374, 2000, 4000].map(defaultNprobe)).toEqual([8, 16, 16, 16, 24, 48]);
  });
});
