// The paired bootstrap and the randomization test for many columns at once (every measure and system
// of a comparison), fast enough for 100,000 queries, with results identical to the bit to the
// one-column functions of stats.ts for the same seed (tests/unit/resampling.test.ts checks that).
//
// Two facts make this possible:
// - For a given seed and n, stats.ts draws the same resamples whatever the values: every column of a
//   comparison over the same queries shares one stream of bootstrap indices and one of sign flips.
// - A percentile interval reads two order statistics of the B resampled means, and the test only asks
//   whether |S*| reaches a threshold. So every resample is first computed cheaply with a bounded error
//   (bootstrap: multinomial counts times float32 copies of the values; randomization: sums of
//   per-byte subset-sum tables), and only the few resamples that the bound cannot place are recomputed
//   exactly as stats.ts does (a replay of that resample's draws, summed in draw order).
import { compareUtf8 } from '../retrieval/topk';
import { seedState } from './random';
import { percentile, intervalPercentiles, type ConfidenceInterval } from './stats';

const TWO32 = 4294967296;
/** 2^-32: m · INV32 truncated is ⌊m / 2^32⌋ for 0 ≤ m < 2^53 (a power of two scales exactly). */
const INV32 = 2 ** -32;
/** Unit roundoff of binary64. */
const U = 2 ** -53;

function sequentialMean(x: Float64Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s / x.length;
}

/** One column of a bootstrap: its values (n of them) and the central coverage of its interval. */
export interface BootstrapColumn {
  values: Float64Array;
  confidence: number;
}

/**
 * For each column, the mean and percentile bootstrap interval that `pairedBootstrap` (stats.ts) gives
 * for it with the same resamples and seed (its `a` for the column as baseline). All columns have the
 * same length n (1 ≤ n ≤ 2^21) and finite values.
 */
export function bootstrapIntervals(
  columns: readonly BootstrapColumn[],
  resamples: number,
  seed: number,
): ConfidenceInterval[] {
  const C = columns.length;
  if (C === 0) return [];
  const n = columns[0].values.length;
  const B = resamples;
  let maxAbs = 0;
  for (const { values } of columns) {
    if (values.length !== n) throw new RangeError('bootstrap columns differ in length');
    for (let i = 0; i < n; i++) maxAbs = Math.max(maxAbs, Math.abs(values[i]));
  }
  // Float32 copies, interleaved four columns to a block: one pass over a block serves four columns
  // of two resamples.
  const blocks = Math.ceil(C / 4);
  const approx = new Float32Array(blocks * n * 4);
  columns.forEach(({ values }, c) => {
    const base = (c >> 2) * n * 4 + (c & 3);
    for (let i = 0; i < n; i++) approx[base + 4 * i] = values[i];
  });
  // |approximate sum − stats.ts's sum| ≤ δ: the float32 rounding of each value (relative 2^-24, or
  // 2^-149 absolute below float32's normal range), plus both sums' own rounding (n·u of Σ|x| each).
  // Values beyond float32's range (never a retrieval measure) leave every resample to the replay.
  const all = !(maxAbs <= 1e30);
  const delta = 1.01 * (n * maxAbs * (2 ** -24 + 2 * n * U) + n * 2 ** -149) + Number.MIN_VALUE;

  const sums = new Float64Array(C * B);
  const states = new Int32Array(4 * B);
  const countsA = new Float64Array(n);
  const countsB = new Float64Array(n);
  let [s0, s1, s2, s3] = seedState(seed);
  const threshold = TWO32 % n;
  for (let r = 0; r < B; r += 2) {
    // Resamples r and r + 1 (if any), drawn in order, as multinomial counts.
    for (let h = 0; h < 2; h++) {
      const counts = h ? countsB : countsA;
      counts.fill(0);
      if (r + h >= B) break;
      states[4 * (r + h)] = s0;
      states[4 * (r + h) + 1] = s1;
      states[4 * (r + h) + 2] = s2;
      states[4 * (r + h) + 3] = s3;
      for (let i = 0; i < n;) {
        // xoshiro128** (random.ts), then Lemire's exactly uniform integer below n (random.ts).
        const m5 = Math.imul(s1, 5);
        const u = Math.imul((m5 << 7) | (m5 >>> 25), 9) >>> 0;
        const t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = (s3 << 11) | (s3 >>> 21);
        const m = u * n;
        const hi = (m * INV32) | 0;
        if (m - hi * TWO32 >= threshold) {
          counts[hi]++;
          i++;
        }
      }
    }
    for (let b = 0; b < blocks; b++) {
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      let b0 = 0;
      let b1 = 0;
      let b2 = 0;
      let b3 = 0;
      for (let i = 0, o = b * n * 4; i < n; i++, o += 4) {
        const k = countsA[i];
        const l = countsB[i];
        const x0 = approx[o];
        const x1 = approx[o + 1];
        const x2 = approx[o + 2];
        const x3 = approx[o + 3];
        a0 += k * x0;
        a1 += k * x1;
        a2 += k * x2;
        a3 += k * x3;
        b0 += l * x0;
        b1 += l * x1;
        b2 += l * x2;
        b3 += l * x3;
      }
      const lanes = [a0, a1, a2, a3, b0, b1, b2, b3];
      for (let l = 0; l < 4 && 4 * b + l < C; l++) {
        sums[(4 * b + l) * B + r] = lanes[l];
        if (r + 1 < B) sums[(4 * b + l) * B + r + 1] = lanes[4 + l];
      }
    }
  }

  // Which order statistics each interval reads (percentile reads sorted[lo] and sorted[lo + 1], or
  // the maximum), and which resamples could hold them.
  interface Target {
    rank: number;
    below: number;
    candidates: number[];
  }
  const targets: Target[][] = [];
  /** Resample → the columns that need its exact sum. */
  const replay = new Map<number, number[]>();
  columns.forEach(({ confidence }, c) => {
    const own = sums.subarray(c * B, (c + 1) * B);
    const sorted = Float64Array.from(own).sort();
    const ranks = new Set<number>();
    for (const q of intervalPercentiles(confidence)) {
      const h = (B - 1) * (q / 100);
      if (h >= B - 1) ranks.add(B - 1);
      else {
        ranks.add(Math.floor(h));
        ranks.add(Math.floor(h) + 1);
      }
    }
    targets.push(
      [...ranks].map((rank) => {
        const v = sorted[rank];
        let below = 0;
        const candidates: number[] = [];
        for (let r = 0; r < B; r++) {
          if (!all && own[r] < v - 2 * delta) below++;
          else if (all || own[r] <= v + 2 * delta) {
            candidates.push(r);
            const cs = replay.get(r) ?? [];
            if (cs.at(-1) !== c) cs.push(c);
            replay.set(r, cs);
          }
        }
        return { rank, below, candidates };
      }),
    );
  });

  // Replays: the resample's n draws again, each column summed in draw order as stats.ts sums it.
  const exact = new Map<number, Float64Array>();
  const drawn = new Int32Array(n);
  for (const [r, cs] of replay) {
    [s0, s1, s2, s3] = [states[4 * r], states[4 * r + 1], states[4 * r + 2], states[4 * r + 3]];
    for (let i = 0; i < n;) {
      const m5 = Math.imul(s1, 5);
      const u = Math.imul((m5 << 7) | (m5 >>> 25), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      const m = u * n;
      const hi = (m * INV32) | 0;
      if (m - hi * TWO32 >= threshold) drawn[i++] = hi;
    }
    const out = new Float64Array(C);
    for (const c of cs) {
      const x = columns[c].values;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += x[drawn[i]];
      out[c] = sum;
    }
    exact.set(r, out);
  }

  return columns.map(({ values, confidence }, c) => {
    // Division by n is monotone, so the order statistics of the means are those of the sums over n.
    const at: Record<number, number> & { length: number } = { length: B };
    for (const { rank, below, candidates } of targets[c]) {
      const vals = Float64Array.from(candidates, (r) => exact.get(r)![c] / n).sort();
      at[rank] = vals[rank - below];
    }
    const [qLo, qHi] = intervalPercentiles(confidence);
    return { mean: sequentialMean(values), lower: percentile(at, qLo), upper: percentile(at, qHi) };
  });
}

/**
 * For each column of differences d (all of length n ≥ 1), how many of `resamples` random sign flips
 * reach its threshold (|S*| ≥ thresholds[c]) — the `extreme` count `randomizationTest` (stats.ts)
 * finds with the same seed.
 */
export function randomizationCounts(
  columns: readonly Float64Array[],
  thresholds: readonly number[],
  resamples: number,
  seed: number,
): number[] {
  const M = columns.length;
  if (M === 0) return [];
  const n = columns[0].length;
  const W = Math.ceil(n / 32);
  const B = resamples;
  // |table sum − stats.ts's sequential sum| ≤ ε: each sum rounds at most (n + 64)·u of Σ|d|.
  const eps = columns.map((d) => {
    let abs = 0;
    for (let i = 0; i < n; i++) abs += Math.abs(d[i]);
    return 1.01 * (2 * n + 64) * U * abs + Number.MIN_VALUE;
  });
  const counts = new Array<number>(M).fill(0);
  // Sign bits of a chunk of resamples (about 32 MB at most), then per 32-query word the subset sums
  // of each byte: table[(byte·256 + v)·M + c] = Σ over the byte's 8 queries of (bit set ? −d : d).
  const chunk = Math.max(1, Math.min(B, Math.floor((8 << 20) / W)));
  const bits = new Int32Array(chunk * W);
  const S = new Float64Array(chunk * M);
  const table = new Float64Array(4 * 256 * M);
  let [s0, s1, s2, s3] = seedState(seed);
  for (let r0 = 0; r0 < B; r0 += chunk) {
    const R = Math.min(chunk, B - r0);
    for (let k = 0; k < R * W; k++) {
      const m5 = Math.imul(s1, 5);
      bits[k] = Math.imul((m5 << 7) | (m5 >>> 25), 9);
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
    }
    S.fill(0);
    for (let w = 0; w < W; w++) {
      for (let byte = 0; byte < 4; byte++) {
        const first = w * 32 + byte * 8;
        const t0 = byte * 256 * M;
        for (let c = 0; c < M; c++) {
          const d = columns[c];
          let all = 0;
          for (let k = 0; k < 8 && first + k < n; k++) all += d[first + k];
          table[t0 + c] = all;
          for (let v = 1; v < 256; v++) {
            const low = 31 - Math.clz32(v & -v);
            const dl = first + low < n ? d[first + low] : 0;
            table[t0 + v * M + c] = table[t0 + (v & (v - 1)) * M + c] - 2 * dl;
          }
        }
      }
      for (let r = 0; r < R; r++) {
        const u = bits[r * W + w];
        const o0 = (u & 255) * M;
        const o1 = (256 + ((u >>> 8) & 255)) * M;
        const o2 = (512 + ((u >>> 16) & 255)) * M;
        const o3 = (768 + (u >>> 24)) * M;
        const so = r * M;
        for (let c = 0; c < M; c++)
          S[so + c] += table[o0 + c] + table[o1 + c] + table[o2 + c] + table[o3 + c];
      }
    }
    for (let r = 0; r < R; r++)
      for (let c = 0; c < M; c++) {
        const a = Math.abs(S[r * M + c]);
        if (a >= thresholds[c] + eps[c]) counts[c]++;
        else if (a > thresholds[c] - eps[c]) {
          // Too close to call: the sum exactly as stats.ts forms it.
          const d = columns[c];
          let s = 0;
          let word = 0;
          for (let i = 0; i < n; i++) {
            if ((i & 31) === 0) word = bits[r * W + (i >> 5)];
            s += word & 1 ? -d[i] : d[i];
            word >>>= 1;
          }
          if (Math.abs(s) >= thresholds[c]) counts[c]++;
        }
      }
  }
  return counts;
}

/** Query ids in byte order (stats.ts's `alignByQuery` order). */
export function byteOrder(ids: Iterable<string>): string[] {
  return [...ids].sort(compareUtf8);
}
