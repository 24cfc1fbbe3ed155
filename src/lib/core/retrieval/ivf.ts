// A packed IVF index with int8 codes, laid out for HTTP Range reads from a static host. Pure: the
// format (write and parse), the spherical k-means that trains it, and the search math; fetching,
// caching and byte counting live in workers/index/ivf-remote.ts.
//
// One file, `ivf-<part>.bin`, beside the float16 `<part>.npy` of a precomputed set
// (embeddings/<model-id>/<dtype>/), all numbers little-endian:
//
//   fixed part, 64 bytes
//     0   8 bytes  magic "LOUPEIVF"
//     8   u32      format version (IVF_VERSION)
//     12  u32      header bytes H (fixed + variable part, a multiple of 8) = byte offset of list 0
//     16  u32      dim
//     20  u32      nlist
//     24  u32      n, rows of the .npy (every row is in exactly one list)
//     28  u32      byte offset of row 0's data in the .npy (rows are dim float16 values each)
//     32  u32      FNV-1a (32-bit) of every byte after the fixed part: a content key for caches
//     36  28 bytes zero
//   variable part
//     f64[nlist + 1]  byte offset of each list in this file; the last is the file's length
//     f32[dim]        quantiser scales s_d: code = clamp(round(x_d / s_d), -127, 127)
//     f32[nlist·dim]  centroids (unit length; a row goes to the list of its highest inner product,
//                     exactly: see assignRows)
//     zero padding to H
//   list l, bytes offsets[l] … offsets[l+1], m = (offsets[l+1] − offsets[l]) / (4 + dim) rows:
//     u32[m]          row numbers in the .npy, ascending (row r is the sidecar's doc_ids[r])
//     i8[m·dim]       their int8 codes, row-major
//
// A query's int8 score of row x is Σ_d (q_d·s_d)·c_d; the top `rerank` candidates of the probed lists
// are rescored exactly from their float16 rows (one Range read per run of consecutive rows), and
// the final order is exact score descending, then row ascending. Vectors are expected unit length
// (cosine = inner product); pack-shard's sets are.
import { Xoshiro128 } from '../eval/random';

export const IVF_MAGIC = 'LOUPEIVF';
export const IVF_VERSION = 1;
export const IVF_FIXED_BYTES = 64;

/** The fixed part: enough to know how much header to read, and to key a cache. */
export interface IvfFixed {
  version: number;
  headerBytes: number;
  dim: number;
  nlist: number;
  n: number;
  npyDataOffset: number;
  checksum: number;
}

export interface IvfHeader extends IvfFixed {
  /** nlist + 1 byte offsets (absolute in the file). */
  offsets: Float64Array;
  scales: Float32Array;
  centroids: Float32Array;
}

/** One decoded list. */
export interface IvfList {
  rows: Uint32Array;
  codes: Int8Array;
}

export class IvfFormatError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'IvfFormatError';
  }
}

/** FNV-1a, 32 bits, continued from `h`. */
export function fnv1a(bytes: Uint8Array, h = 0x811c9dc5): number {
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193) >>> 0;
  return h >>> 0;
}

/** Bytes of one list of `m` rows. */
export function listBytes(m: number, dim: number): number {
  return m * (4 + dim);
}

/** Header bytes (fixed + variable, padded to 8) for a dimension and list count. */
export function ivfHeaderBytes(dim: number, nlist: number): number {
  const raw = IVF_FIXED_BYTES + 8 * (nlist + 1) + 4 * dim + 4 * nlist * dim;
  return Math.ceil(raw / 8) * 8;
}

/** Rows of list `l`. */
export function listCount(h: IvfHeader, l: number): number {
  return (h.offsets[l + 1] - h.offsets[l]) / (4 + h.dim);
}

// --- Training ---------------------------------------------------------------------------------------

function normalise(v: Float32Array, o: number, dim: number): void {
  let s = 0;
  for (let j = 0; j < dim; j++) s += v[o + j] * v[o + j];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) v[o + j] *= inv;
  }
}

/**
 * The exact nearest centroid of every row of `data` (n × dim): highest inner product, lowest index on
 * ties (each score one float64 chain over j, so the answer does not depend on blocking). Rows are
 * taken four at a time against two centroids at a time: eight sums in registers, each value loaded
 * once per block, about four times the speed of one row against one centroid in V8 (1M rows × 2,000
 * lists × 384 dims is 1.5·10¹² flops: minutes, not the quarter hour of the plain loop).
 */
export function assignRows(
  centroids: Float32Array,
  nlist: number,
  data: Float32Array,
  n: number,
  dim: number,
  out: Int32Array = new Int32Array(n),
): Int32Array {
  const best = new Float64Array(4);
  const arg = new Int32Array(4);
  const c2 = nlist - (nlist % 2);
  for (let r = 0; r < n; r += 4) {
    const rows = Math.min(4, n - r);
    // A short last block repeats its last row (its answers are not written twice).
    const o0 = r * dim;
    const o1 = (r + Math.min(1, rows - 1)) * dim;
    const o2 = (r + Math.min(2, rows - 1)) * dim;
    const o3 = (r + Math.min(3, rows - 1)) * dim;
    best.fill(-Infinity);
    arg.fill(0);
    const take = (i: number, s: number, c: number) => {
      if (s > best[i]) {
        best[i] = s;
        arg[i] = c;
      }
    };
    for (let c = 0; c < c2; c += 2) {
      const a = c * dim;
      const b = a + dim;
      let s00 = 0;
      let s01 = 0;
      let s10 = 0;
      let s11 = 0;
      let s20 = 0;
      let s21 = 0;
      let s30 = 0;
      let s31 = 0;
      for (let j = 0; j < dim; j++) {
        const x = centroids[a + j];
        const y = centroids[b + j];
        const r0 = data[o0 + j];
        const r1 = data[o1 + j];
        const r2 = data[o2 + j];
        const r3 = data[o3 + j];
        s00 += x * r0;
        s01 += y * r0;
        s10 += x * r1;
        s11 += y * r1;
        s20 += x * r2;
        s21 += y * r2;
        s30 += x * r3;
        s31 += y * r3;
      }
      take(0, s00, c);
      take(0, s01, c + 1);
      take(1, s10, c);
      take(1, s11, c + 1);
      take(2, s20, c);
      take(2, s21, c + 1);
      take(3, s30, c);
      take(3, s31, c + 1);
    }
    if (c2 < nlist) {
      const a = c2 * dim;
      const offs = [o0, o1, o2, o3];
      for (let i = 0; i < 4; i++) {
        let s = 0;
        for (let j = 0; j < dim; j++) s += centroids[a + j] * data[offs[i] + j];
        take(i, s, c2);
      }
    }
    for (let i = 0; i < rows; i++) out[r + i] = arg[i];
  }
  return out;
}

export interface KmeansOptions {
  /** Rows sampled for training (default 20,000, or all when fewer). */
  sample?: number;
  iterations?: number;
  seed?: number;
}

/**
 * Spherical k-means (inner product, unit centroids) on a seeded sample of the rows of `data`
 * (n × dim, row-major). A list left empty by an iteration is re-seeded with a random sample row.
 */
export function trainCentroids(
  data: Float32Array,
  n: number,
  dim: number,
  nlist: number,
  opts: KmeansOptions = {},
): Float32Array {
  if (!Number.isInteger(nlist) || nlist < 1 || nlist > n)
    throw new RangeError(`nlist must be a whole number from 1 to the row count ${n}, got ${nlist}`);
  const rng = new Xoshiro128(opts.seed ?? 1);
  const m = Math.min(n, opts.sample ?? 20_000);
  // A seeded sample without repeats (partial Fisher–Yates over row numbers).
  const order = Int32Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < m; i++) {
    const j = i + Math.floor(rng.nextFloat() * (n - i));
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  const sample = new Float32Array(m * dim);
  for (let i = 0; i < m; i++) sample.set(data.subarray(order[i] * dim, order[i] * dim + dim), i * dim);
  const centroids = sample.slice(0, nlist * dim);
  const assign = new Int32Array(m);
  const sums = new Float64Array(nlist * dim);
  const counts = new Int32Array(nlist);
  for (let it = 0; it < (opts.iterations ?? 8); it++) {
    sums.fill(0);
    counts.fill(0);
    assignRows(centroids, nlist, sample, m, dim, assign);
    for (let i = 0; i < m; i++) {
      const c = assign[i];
      counts[c]++;
      for (let j = 0; j < dim; j++) sums[c * dim + j] += sample[i * dim + j];
    }
    for (let c = 0; c < nlist; c++) {
      if (counts[c] === 0) {
        const r = Math.floor(rng.nextFloat() * m);
        centroids.set(sample.subarray(r * dim, r * dim + dim), c * dim);
      } else for (let j = 0; j < dim; j++) centroids[c * dim + j] = sums[c * dim + j];
      normalise(centroids, c * dim, dim);
    }
  }
  return centroids;
}

/** Per-dimension scales s_d = max |x_d| / 127 (1 where a dimension is all zero). */
export function quantiserScales(data: Float32Array, n: number, dim: number): Float32Array {
  const s = new Float32Array(dim);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < dim; j++) {
      const a = Math.abs(data[i * dim + j]);
      if (a > s[j]) s[j] = a;
    }
  for (let j = 0; j < dim; j++) s[j] = s[j] > 0 ? s[j] / 127 : 1;
  return s;
}

/** int8 code of value `x` at scale `s`. */
export function encodeValue(x: number, s: number): number {
  return Math.max(-127, Math.min(127, Math.round(x / s)));
}

export interface BuildOptions extends KmeansOptions {
  nlist: number;
  /** Byte offset of row 0 in the .npy the rows came from. */
  npyDataOffset: number;
}

/** Builds the whole file from the rows (n × dim, unit length). */
export function buildIvf(data: Float32Array, n: number, dim: number, opts: BuildOptions): Uint8Array {
  if (data.length !== n * dim) throw new RangeError(`(${n}, ${dim}) needs ${n * dim} values`);
  const { nlist } = opts;
  const centroids = trainCentroids(data, n, dim, nlist, opts);
  const scales = quantiserScales(data, n, dim);
  const list = new Int32Array(n);
  const counts = new Int32Array(nlist);
  assignRows(centroids, nlist, data, n, dim, list);
  for (let i = 0; i < n; i++) counts[list[i]]++;
  const H = ivfHeaderBytes(dim, nlist);
  const offsets = new Float64Array(nlist + 1);
  offsets[0] = H;
  for (let l = 0; l < nlist; l++) offsets[l + 1] = offsets[l] + listBytes(counts[l], dim);
  const total = offsets[nlist];
  if (total > 2 ** 31)
    throw new RangeError(`an IVF file of ${total} bytes is over the 2 GiB this writer holds`);
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  out.set(new TextEncoder().encode(IVF_MAGIC), 0);
  dv.setUint32(8, IVF_VERSION, true);
  dv.setUint32(12, H, true);
  dv.setUint32(16, dim, true);
  dv.setUint32(20, nlist, true);
  dv.setUint32(24, n, true);
  dv.setUint32(28, opts.npyDataOffset, true);
  let at = IVF_FIXED_BYTES;
  for (let l = 0; l <= nlist; l++, at += 8) dv.setFloat64(at, offsets[l], true);
  for (let j = 0; j < dim; j++, at += 4) dv.setFloat32(at, scales[j], true);
  for (let v = 0; v < nlist * dim; v++, at += 4) dv.setFloat32(at, centroids[v], true);
  // Rows in ascending order within each list.
  const fill = new Int32Array(nlist);
  for (let i = 0; i < n; i++) {
    const l = list[i];
    const m = counts[l];
    const base = offsets[l];
    const slot = fill[l]++;
    dv.setUint32(base + 4 * slot, i, true);
    const co = base + 4 * m + slot * dim;
    for (let j = 0; j < dim; j++) dv.setInt8(co + j, encodeValue(data[i * dim + j], scales[j]));
  }
  dv.setUint32(32, fnv1a(out.subarray(IVF_FIXED_BYTES)), true);
  return out;
}

// --- Parsing ----------------------------------------------------------------------------------------

/** Reads the fixed part (the first 64 bytes of the file). */
export function parseIvfFixed(bytes: Uint8Array, file: string): IvfFixed {
  if (bytes.length < IVF_FIXED_BYTES)
    throw new IvfFormatError(
      file,
      `${bytes.length} bytes, shorter than the ${IVF_FIXED_BYTES}-byte fixed header`,
    );
  if (new TextDecoder().decode(bytes.subarray(0, 8)) !== IVF_MAGIC)
    throw new IvfFormatError(file, `not a Loupe IVF index (no "${IVF_MAGIC}" magic)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, IVF_FIXED_BYTES);
  const f: IvfFixed = {
    version: dv.getUint32(8, true),
    headerBytes: dv.getUint32(12, true),
    dim: dv.getUint32(16, true),
    nlist: dv.getUint32(20, true),
    n: dv.getUint32(24, true),
    npyDataOffset: dv.getUint32(28, true),
    checksum: dv.getUint32(32, true),
  };
  if (f.version !== IVF_VERSION)
    throw new IvfFormatError(file, `format version ${f.version}; this Loupe reads version ${IVF_VERSION}`);
  if (f.dim < 1 || f.nlist < 1 || f.n < f.nlist)
    throw new IvfFormatError(file, `bad sizes: dim ${f.dim}, nlist ${f.nlist}, rows ${f.n}`);
  if (f.headerBytes !== ivfHeaderBytes(f.dim, f.nlist))
    throw new IvfFormatError(
      file,
      `header length ${f.headerBytes} ≠ ${ivfHeaderBytes(f.dim, f.nlist)} for dim ${f.dim} and ${f.nlist} lists`,
    );
  return f;
}

/** Reads the whole header (its first `headerBytes` bytes); `fileBytes`, when known, is checked too. */
export function parseIvfHeader(bytes: Uint8Array, file: string, fileBytes?: number): IvfHeader {
  const f = parseIvfFixed(bytes, file);
  if (bytes.length < f.headerBytes)
    throw new IvfFormatError(file, `header cut short: ${bytes.length} of ${f.headerBytes} bytes`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, f.headerBytes);
  const { dim, nlist } = f;
  const offsets = new Float64Array(nlist + 1);
  let at = IVF_FIXED_BYTES;
  for (let l = 0; l <= nlist; l++, at += 8) offsets[l] = dv.getFloat64(at, true);
  const scales = new Float32Array(dim);
  for (let j = 0; j < dim; j++, at += 4) scales[j] = dv.getFloat32(at, true);
  const centroids = new Float32Array(nlist * dim);
  for (let v = 0; v < nlist * dim; v++, at += 4) centroids[v] = dv.getFloat32(at, true);
  if (offsets[0] !== f.headerBytes)
    throw new IvfFormatError(file, `list 0 starts at ${offsets[0]}, not ${f.headerBytes}`);
  let rows = 0;
  for (let l = 0; l < nlist; l++) {
    const len = offsets[l + 1] - offsets[l];
    if (!(len >= 0) || len % (4 + dim) !== 0)
      throw new IvfFormatError(
        file,
        `list ${l} has ${len} bytes, not a whole number of ${4 + dim}-byte rows`,
      );
    rows += len / (4 + dim);
  }
  if (rows !== f.n) throw new IvfFormatError(file, `the lists hold ${rows} rows, the header says ${f.n}`);
  if (fileBytes !== undefined && offsets[nlist] !== fileBytes)
    throw new IvfFormatError(file, `the lists end at byte ${offsets[nlist]}, the file has ${fileBytes}`);
  for (let j = 0; j < dim; j++)
    if (!(Number.isFinite(scales[j]) && scales[j] > 0))
      throw new IvfFormatError(file, `quantiser scale ${j} is ${scales[j]}, not a positive number`);
  return { ...f, offsets, scales, centroids };
}

/** Decodes list `l` from its bytes (offsets[l] … offsets[l+1]). */
export function parseIvfList(h: IvfHeader, l: number, bytes: Uint8Array, file: string): IvfList {
  const m = listCount(h, l);
  if (bytes.length !== listBytes(m, h.dim))
    throw new IvfFormatError(file, `list ${l}: ${bytes.length} bytes, expected ${listBytes(m, h.dim)}`);
  const copy = bytes.slice();
  const rows = new Uint32Array(copy.buffer, 0, m);
  for (let i = 0; i < m; i++)
    if (rows[i] >= h.n || (i > 0 && rows[i] <= rows[i - 1]))
      throw new IvfFormatError(
        file,
        `list ${l}: row number ${rows[i]} at position ${i} is out of range or out of order`,
      );
  return { rows, codes: new Int8Array(copy.buffer, 4 * m, m * h.dim) };
}

// --- Search -----------------------------------------------------------------------------------------

export interface IvfSearchOptions {
  k: number;
  /** Lists probed per query. */
  nprobe: number;
  /** Candidates rescored exactly per query (at least k). */
  rerank: number;
}

export const IVF_DEFAULTS = { nprobe: 16, rerankFactor: 4 } as const;

/**
 * Lists probed by default: 1.2 % of them, at least IVF_DEFAULTS.nprobe. With nlist = 2·√n that is
 * 16 below 1,375 lists (about 470k rows) and 24 at 1M × 384 (nlist 2,000), where 16 gave recall@10
 * 0.946 and 24 gave 0.956 at 2.5 MiB per later query (BENCHMARKS.md, bench:ivf).
 */
export function defaultNprobe(nlist: number): number {
  return Math.min(nlist, Math.max(IVF_DEFAULTS.nprobe, Math.round(nlist * 0.012)));
}

/** The `nprobe` lists whose centroids have the highest inner product with `q` (ties: lower list). */
export function probeLists(h: IvfHeader, q: Float32Array, nprobe: number): number[] {
  const scores = new Float64Array(h.nlist);
  for (let c = 0; c < h.nlist; c++) {
    let s = 0;
    for (let j = 0; j < h.dim; j++) s += h.centroids[c * h.dim + j] * q[j];
    scores[c] = s;
  }
  return Array.from({ length: h.nlist }, (_, c) => c)
    .sort((a, b) => scores[b] - scores[a] || a - b)
    .slice(0, Math.min(nprobe, h.nlist));
}

/** Bounded best-first list of (score, row): higher score first, then lower row. */
export class Candidates {
  readonly rows: number[] = [];
  readonly scores: number[] = [];
  constructor(readonly size: number) {}
  push(score: number, row: number): void {
    const { rows, scores, size } = this;
    const n = rows.length;
    if (n === size && (score < scores[n - 1] || (score === scores[n - 1] && row > rows[n - 1]))) return;
    let i = n;
    while (i > 0 && (scores[i - 1] < score || (scores[i - 1] === score && rows[i - 1] > row))) i--;
    rows.splice(i, 0, row);
    scores.splice(i, 0, score);
    if (rows.length > size) {
      rows.pop();
      scores.pop();
    }
  }
}

/** The query scaled by the quantiser, q_d·s_d in float32: what int8 codes are scored against. */
export function scaledQuery(h: IvfHeader, q: Float32Array): Float32Array {
  const qs = new Float32Array(h.dim);
  for (let j = 0; j < h.dim; j++) qs[j] = q[j] * h.scales[j];
  return qs;
}

/** The int8 score of row i of `codes` (float64 sum of float32 q_d·s_d times the code). */
function int8Score(qs: Float32Array, codes: Int8Array, i: number, dim: number): number {
  const o = i * dim;
  let s = 0;
  for (let j = 0; j < dim; j++) s += qs[j] * codes[o + j];
  return s;
}

/** Int8 scores of a list's rows for one query, pushed into `out`. */
export function scoreList(h: IvfHeader, list: IvfList, q: Float32Array, out: Candidates): void {
  const qs = scaledQuery(h, q);
  const { rows, codes } = list;
  for (let i = 0; i < rows.length; i++) out.push(int8Score(qs, codes, i, h.dim), rows[i]);
}

/**
 * Exactly the candidates scoreList gives for `lists`, from approximate int8 scores (`approx`: one per
 * row of the lists in order, each within `eps` of scoreList's; a GPU's float32 sums): the best
 * size + margin rows by approximate score are scored exactly and ranked; that is the answer when no
 * other row can reach the last candidate (the margin's score + eps below it). Otherwise null: the
 * caller scores the query with scoreList.
 */
export function int8Candidates(
  h: IvfHeader,
  lists: readonly IvfList[],
  q: Float32Array,
  approx: Float32Array,
  eps: number,
  size: number,
  margin = 16,
): Candidates | null {
  const total = lists.reduce((s, l) => s + l.rows.length, 0);
  if (approx.length !== total) throw new RangeError(`${approx.length} scores for ${total} rows`);
  const out = new Candidates(size);
  const qs = scaledQuery(h, q);
  const take = Math.min(total, size + margin);
  // Positions of the `take` best approximate scores (ties: any; the check below covers them).
  const order = Uint32Array.from({ length: total }, (_, i) => i).sort((a, b) => approx[b] - approx[a]);
  const listOf = new Int32Array(total);
  const rowOf = new Int32Array(total);
  let at = 0;
  lists.forEach((l, li) => {
    for (let i = 0; i < l.rows.length; i++, at++) {
      listOf[at] = li;
      rowOf[at] = i;
    }
  });
  for (let t = 0; t < take; t++) {
    const list = lists[listOf[order[t]]];
    const i = rowOf[order[t]];
    out.push(int8Score(qs, list.codes, i, h.dim), list.rows[i]);
  }
  if (take === total) return out;
  const rest = approx[order[take]];
  return out.rows.length === size && rest + eps < out.scores[size - 1] ? out : null;
}

/** Exact inner product of `q` with a row of float16 bits (`toF32` decodes one half). */
export function exactRowScore(
  q: Float32Array,
  bits: Uint16Array,
  o: number,
  dim: number,
  toF32: (b: number) => number,
): number {
  let s = 0;
  for (let j = 0; j < dim; j++) s += q[j] * toF32(bits[o + j]);
  return Math.fround(s);
}

/** Runs of consecutive row numbers in a sorted list: [first, count] pairs (one Range read each). */
export function rowRuns(sortedRows: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const r of sortedRows) {
    const last = runs.at(-1);
    if (last && last[0] + last[1] === r) last[1]++;
    else runs.push([r, 1]);
  }
  return runs;
}

/** Final top-k from exact scores: score descending, then row ascending. */
export function finalTopK(
  rows: readonly number[],
  scores: readonly number[],
  k: number,
): { rows: number[]; scores: number[] } {
  const idx = rows.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || rows[a] - rows[b]);
  const top = idx.slice(0, k);
  return { rows: top.map((i) => rows[i]), scores: top.map((i) => scores[i]) };
}

/**
 * The whole search for one query over lists and rows already at hand (tests, and the reference the
 * remote search must equal): probe, int8 scores, exact rescoring of the best `rerank`.
 */
export function searchIvf(
  h: IvfHeader,
  getList: (l: number) => IvfList,
  getRow: (row: number) => Uint16Array,
  toF32: (b: number) => number,
  q: Float32Array,
  opts: IvfSearchOptions,
): { rows: number[]; scores: number[]; probed: number[] } {
  const probed = probeLists(h, q, opts.nprobe);
  const cand = new Candidates(Math.max(opts.k, opts.rerank));
  for (const l of probed) scoreList(h, getList(l), q, cand);
  const exact = cand.rows.map((r) => exactRowScore(q, getRow(r), 0, h.dim, toF32));
  return { ...finalTopK(cand.rows, exact, opts.k), probed };
}
