// Page-side helpers for tests/e2e/compact-store.test.ts and scripts/bench-vectors.ts (called through
// page.evaluate): corpora generated here or streamed from a float16 .npy in pieces (never held whole
// unless asked), the exact reference top-k (core exactSearch's arithmetic: float64 sums rounded to
// float32, index order on ties) computed piece by piece, and the four dense searches measured per
// query: float32 exact in the retrieval worker (what a dense run does today), the compact store
// (int8 scan + exact rescoring from OPFS), HNSW in the index worker, and IVF-int8 (ivf.ts) in the
// page. Served by the Vite dev server at /tests/browser/vectors-harness.html; never part of the build.
import {
  addToCompactStore,
  buildIndex,
  closeCompactStore,
  compactStoreInfo,
  finishCompactStore,
  indexWasmHeapBytes,
  openCompactStore,
  searchCompactStore,
  searchIndex,
  stopIndexWorker,
  type CompactOptions,
  type RowStoreKind,
} from '../../src/lib/clients/index-client';
import type { CompactScan } from '../../workers/index/compact-types';
import { resetRetrieval, runDense, setDenseDocs } from '../../src/lib/clients/retrieval-client';
import {
  clusteredVectors,
  indexTieBreak,
  mulberry32,
  normalizeRows,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import {
  buildIvf,
  parseIvfHeader,
  parseIvfList,
  searchIvf,
  type IvfList,
} from '../../src/lib/core/retrieval/ivf';
import { nibbleQmax, scanNibblesJs } from '../../src/lib/core/retrieval/nibble-scan';
import { TopK } from '../../src/lib/core/retrieval/topk';
import { NIBBLE_KERNEL_WASM, nibbleKernel, nibbleKernelSupported } from '../../workers/kernels/nibble-kernel';
import { f16ToF32 } from '../../src/lib/core/shard/vector-files';

const state: {
  n: number;
  dim: number;
  queries?: Matrix;
  /** The whole corpus, when kept (small rungs; float32 exact, HNSW and IVF need it). */
  docs?: Matrix;
  /** Exact top-k of every query (indices, best first). */
  ref?: { k: number; ids: number[][]; scores: number[][] };
  ivf?: { header: ReturnType<typeof parseIvfHeader>; lists: IvfList[] };
  /** The corpus the retrieval worker holds (floatExact). */
  floatDocs?: Matrix;
} = { n: 0, dim: 0 };

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
};

/** recall@k of `got` (ids per query) against the reference. */
function recall(got: number[][], k: number): number {
  const ref = state.ref;
  if (!ref) throw new Error('no reference: stream or generate with a reference first');
  let sum = 0;
  got.forEach((ids, q) => {
    const truth = ref.ids[q].slice(0, k);
    const g = new Set(ids.slice(0, k));
    sum += truth.filter((d) => g.has(d)).length / truth.length;
  });
  return sum / got.length;
}

/** Unit random queries (seeded), or clustered ones from `gen`. */
function makeQueries(nq: number, dim: number, seed: number): Matrix {
  const rnd = mulberry32(seed);
  const data = new Float32Array(nq * dim);
  for (let i = 0; i < data.length; i++) data[i] = rnd() - 0.5;
  return normalizeRows({ data, n: nq, dim });
}

const vectorsHarness = {
  /**
   * Streams a corpus of float16 rows from `url` (the server answers `${url}/${first}/${count}` with
   * rows first … first + count − 1): each piece decoded, normalised, folded into the exact reference of
   * `nq` seeded random queries, added to the compact store when `compact` and kept when `keep`.
   */
  async stream(
    url: string,
    n: number,
    dim: number,
    opts: {
      piece: number;
      nq: number;
      k: number;
      seed?: number;
      compact?: { store?: 'auto' | RowStoreKind; scan?: CompactOptions['scan'] } | null;
      keep?: boolean;
    },
  ) {
    const t0 = performance.now();
    state.n = n;
    state.dim = dim;
    state.docs = undefined;
    state.ivf = undefined;
    const queries = (state.queries = makeQueries(opts.nq, dim, opts.seed ?? 1));
    const tops = Array.from({ length: opts.nq }, () => new TopK(opts.k, indexTieBreak));
    const kept = opts.keep ? new Float32Array(n * dim) : null;
    if (opts.compact)
      await openCompactStore({ dim, space: 'ip', store: opts.compact.store, scan: opts.compact.scan });
    let refMs = 0;
    let addMs = 0;
    for (let first = 0; first < n; first += opts.piece) {
      const count = Math.min(opts.piece, n - first);
      const bits = new Uint16Array(await (await fetch(`${url}/${first}/${count}`)).arrayBuffer());
      if (bits.length !== count * dim)
        throw new Error(`piece ${first}: ${bits.length} values, not ${count * dim}`);
      const rows = normalizeRows({ data: Float32Array.from(bits, f16ToF32), n: count, dim }).data;
      const tr = performance.now();
      foldReference(rows, first, count, queries, tops);
      refMs += performance.now() - tr;
      kept?.set(rows, first * dim);
      const ta = performance.now();
      if (opts.compact) await addToCompactStore(rows);
      addMs += performance.now() - ta;
    }
    const tf = performance.now();
    const info = opts.compact ? await finishCompactStore() : null;
    const finishMs = performance.now() - tf;
    if (kept) state.docs = { data: kept, n, dim };
    setReference(tops, opts.k);
    return { ms: performance.now() - t0, refMs, addMs, finishMs, info };
  },

  /** Seeded clustered corpus and queries made here (kept), with their exact reference. */
  async generate(n: number, nq: number, dim: number, k: number, seed = 7) {
    const gen = clusteredVectors(dim, { seed });
    state.docs = gen.generate(n);
    state.queries = gen.generate(nq);
    state.n = n;
    state.dim = dim;
    state.ivf = undefined;
    const tops = Array.from({ length: nq }, () => new TopK(k, indexTieBreak));
    foldReference(state.docs.data, 0, n, state.queries, tops);
    setReference(tops, k);
    return { n, nq, dim };
  },

  /** The kept corpus into the compact store, in pieces of `piece` rows. */
  async compactBuild(
    opts: { store?: 'auto' | RowStoreKind; piece?: number; scan?: CompactOptions['scan'] } = {},
  ) {
    const d = state.docs;
    if (!d) throw new Error('no corpus kept');
    const t0 = performance.now();
    const opened = await openCompactStore({ dim: d.dim, space: 'ip', store: opts.store, scan: opts.scan });
    const piece = opts.piece ?? 4096;
    for (let s = 0; s < d.n; s += piece)
      await addToCompactStore(d.data.slice(s * d.dim, Math.min(d.n, s + piece) * d.dim));
    const info = await finishCompactStore();
    return { opened, info, ms: performance.now() - t0 };
  },

  /**
   * Each query alone through the compact store (`scan`: the store's default scan, or the one named):
   * latency per query, ids and scores, what was read.
   */
  async compactQueries(k: number, rerank?: number, nq?: number, scan?: CompactScan) {
    const q = state.queries!;
    const m = nq ?? q.n;
    const ms: number[] = [];
    const workerMs: number[] = [];
    const ids: number[][] = [];
    const scores: number[][] = [];
    let rowsRead = 0;
    let reads = 0;
    const scanMs: number[] = [];
    const rescoreMs: number[] = [];
    let kernel = '';
    let store = '';
    let method = '';
    let candidates = 0;
    for (let i = 0; i < m; i++) {
      const t0 = performance.now();
      const r = await searchCompactStore(q.data.slice(i * q.dim, (i + 1) * q.dim), k, { rerank, scan });
      ms.push(performance.now() - t0);
      workerMs.push(r.ms);
      ids.push(Array.from(r.result.indices.subarray(0, r.result.counts[0])));
      scores.push(Array.from(r.result.scores.subarray(0, r.result.counts[0])));
      rowsRead += r.stats.rowsRead;
      scanMs.push(r.stats.scanMs);
      rescoreMs.push(r.stats.rescoreMs);
      reads += r.stats.reads;
      kernel = r.stats.kernel;
      store = r.stats.store;
      method = r.stats.scan;
      candidates = r.stats.candidates;
    }
    return {
      p50: percentile(ms, 0.5),
      p95: percentile(ms, 0.95),
      workerP50: percentile(workerMs, 0.5),
      /** Median per query of the int8 scan + candidate selection, and of reading + rescoring the R rows. */
      scanP50: percentile(scanMs, 0.5),
      rescoreP50: percentile(rescoreMs, 0.5),
      recall: recall(ids, k),
      sameTop: ids.filter((x, i) => x.join() === state.ref!.ids[i].slice(0, k).join()).length,
      ids,
      scores,
      refIds: state.ref!.ids.slice(0, m).map((x) => x.slice(0, k)),
      refScores: state.ref!.scores.slice(0, m).map((x) => x.slice(0, k)),
      rowsRead,
      reads,
      kernel,
      store,
      scan: method,
      candidates,
      info: await compactStoreInfo(),
    };
  },

  async compactClose() {
    await closeCompactStore();
    return compactStoreInfo();
  },

  /**
   * Float32 exact search as a dense run does it today: the matrix in the retrieval worker (sent on
   * the first call for this corpus), one query at a time.
   */
  async floatExact(k: number, nq?: number) {
    const d = state.docs;
    if (!d) throw new Error('no corpus kept');
    const t0 = performance.now();
    if (state.floatDocs !== d) {
      const docIds = Array.from({ length: d.n }, (_, i) => String(i));
      await setDenseDocs(`bench-${d.n}-${Date.now()}`, d.data.slice(), d.dim, docIds, []);
      state.floatDocs = d;
    }
    const loadMs = performance.now() - t0;
    const q = state.queries!;
    const m = nq ?? q.n;
    const ms: number[] = [];
    const ids: number[][] = [];
    for (let i = 0; i < m; i++) {
      const t1 = performance.now();
      const lists = await runDense(
        {
          ids: ['q'],
          dim: q.dim,
          text: q.data.slice(i * q.dim, (i + 1) * q.dim),
          image: null,
          hasText: new Uint8Array([1]),
          hasImage: new Uint8Array([0]),
          exclude: [undefined],
        },
        { mode: 'feature' },
        k,
      );
      ms.push(performance.now() - t1);
      ids.push(lists[0].docIds.map(Number));
    }
    return { loadMs, p50: percentile(ms, 0.5), p95: percentile(ms, 0.95), recall: recall(ids, k) };
  },

  async floatExactClose() {
    state.floatDocs = undefined;
    await resetRetrieval();
  },

  /** HNSW over the kept corpus in the index worker (hnswlib wasm): build time and heap. */
  async hnswBuild(opts: { M?: number; efConstruction?: number } = {}) {
    const d = state.docs;
    if (!d) throw new Error('no corpus kept');
    const t0 = performance.now();
    const built = await buildIndex({
      key: 'bench-vectors',
      vectors: d.data.slice(),
      dim: d.dim,
      space: 'ip',
      M: opts.M,
      efConstruction: opts.efConstruction,
      force: true,
    });
    return { ms: performance.now() - t0, addMs: built.timings.addMs, heapBytes: await indexWasmHeapBytes() };
  },

  /** Each query alone through the built HNSW index, at each efSearch. */
  async hnswQueries(k: number, efSearch: number[], nq?: number) {
    const q = state.queries!;
    const m = nq ?? q.n;
    const points = [];
    for (const ef of efSearch) {
      const ms: number[] = [];
      const ids: number[][] = [];
      for (let i = 0; i < m; i++) {
        const t1 = performance.now();
        const r = await searchIndex(q.data.slice(i * q.dim, (i + 1) * q.dim), k, ef);
        ms.push(performance.now() - t1);
        ids.push(Array.from(r.result.indices.subarray(0, r.result.counts[0])));
      }
      points.push({
        efSearch: ef,
        p50: percentile(ms, 0.5),
        p95: percentile(ms, 0.95),
        recall: recall(ids, k),
      });
    }
    return points;
  },

  hnswClose() {
    stopIndexWorker();
  },

  /** IVF-int8 (ivf.ts) over the kept corpus, built and searched in the page; rescoring from the float32 rows. */
  ivfBuild(nlist: number) {
    const d = state.docs;
    if (!d) throw new Error('no corpus kept');
    const t0 = performance.now();
    const file = buildIvf(d.data, d.n, d.dim, { nlist, npyDataOffset: 0, seed: 1 });
    const header = parseIvfHeader(file, 'in-tab', file.length);
    const lists = Array.from({ length: nlist }, (_, l) =>
      parseIvfList(header, l, file.subarray(header.offsets[l], header.offsets[l + 1]), 'in-tab'),
    );
    state.ivf = { header, lists };
    return { ms: performance.now() - t0, bytes: file.length };
  },

  ivfQueries(k: number, nprobe: number, rerank: number, nq?: number) {
    const d = state.docs!;
    const ivf = state.ivf;
    if (!ivf) throw new Error('call ivfBuild() first');
    const q = state.queries!;
    const m = nq ?? q.n;
    const ms: number[] = [];
    const ids: number[][] = [];
    // searchIvf reads float16 rows through toF32; here the rows are already float32: identity.
    const getRow = (r: number) => d.data.subarray(r * d.dim, (r + 1) * d.dim) as unknown as Uint16Array;
    for (let i = 0; i < m; i++) {
      const t0 = performance.now();
      const r = searchIvf(
        ivf.header,
        (l) => ivf.lists[l],
        getRow,
        (x) => x,
        q.data.subarray(i * q.dim, (i + 1) * q.dim),
        {
          k,
          nprobe,
          rerank,
        },
      );
      ms.push(performance.now() - t0);
      ids.push(r.rows);
    }
    return { nprobe, rerank, p50: percentile(ms, 0.5), p95: percentile(ms, 0.95), recall: recall(ids, k) };
  },

  /** Names of the files in this origin's OPFS root. */
  async opfsFiles(): Promise<string[]> {
    const dir = await navigator.storage.getDirectory();
    const names: string[] = [];
    for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name);
    return names;
  },

  /** compactBuild, with the error's message instead of a rejection. */
  async compactBuildError(
    opts: { store?: 'auto' | RowStoreKind; piece?: number; scan?: CompactOptions['scan'] } = {},
  ) {
    try {
      await vectorsHarness.compactBuild(opts);
      return null;
    } catch (e) {
      return (e as Error)?.message ?? String(e);
    }
  },

  /**
   * The two-pass scan's wasm kernels in this browser against scanNibblesJs, on `n` seeded plane rows
   * W bytes wide with query codes up to nibbleQmax(W), and on the largest magnitudes (every nibble
   * 15 and every query code ±qmax): which kernels ran, and whether each gave the same integers.
   */
  nibbleKernels(n: number, W: number, seed: number) {
    const qmax = nibbleQmax(W);
    const rows = Math.ceil((n + 2) / 4) * 4;
    const memory = new WebAssembly.Memory({ initial: Math.ceil((rows * W + 6 * W + 4 * rows) / 65536) + 1 });
    const plane = new Uint8Array(memory.buffer, 0, rows * W);
    const q8 = new Int8Array(memory.buffer, rows * W, 2 * W);
    const q16 = new Int16Array(memory.buffer, rows * W + 2 * W, 2 * W);
    const outAt = rows * W + 6 * W;
    const out = new Int32Array(memory.buffer, outAt, rows);
    const rand = mulberry32(seed);
    for (let i = 0; i < plane.length; i++) plane[i] = Math.floor(rand() * 256);
    plane.fill(0xff, n * W, (n + 2) * W);
    for (let j = 0; j < 2 * W; j++) q8[j] = Math.floor(rand() * (2 * qmax + 1)) - qmax;
    const ref = new Int32Array(rows);
    const runs: { kernel: string; same: boolean; extremes: number[] }[] = [];
    for (const kernel of ['wasm-relaxed-simd', 'wasm-simd'] as const) {
      if (!WebAssembly.validate(NIBBLE_KERNEL_WASM[kernel])) continue;
      const scan = nibbleKernel(memory, kernel);
      const qAt = kernel === 'wasm-simd' ? q16.byteOffset : q8.byteOffset;
      const extremes: number[] = [];
      let same = true;
      const seeded = Int8Array.from(q8);
      for (const fill of [null, qmax, -qmax]) {
        if (fill === null) q8.set(seeded);
        else q8.fill(fill);
        for (let j = 0; j < 2 * W; j++) q16[j] = q8[j];
        out.fill(-1);
        scan(0, qAt, outAt, rows, W);
        scanNibblesJs(plane, 0, rows, W, q8, ref);
        same &&= out.every((v, i) => v === ref[i]);
        // Row n: every nibble 15.
        if (fill !== null) extremes.push(out[n]);
      }
      q8.set(seeded);
      runs.push({ kernel, same, extremes });
    }
    return { qmax, supported: nibbleKernelSupported(), runs };
  },

  /** Drops the kept corpus and the IVF lists (before measuring the compact path's memory). */
  dropCorpus() {
    state.docs = undefined;
    state.ivf = undefined;
  },
};

/** Exact scores of `rows` (rows first … first + count − 1 of the corpus) folded into each query's top k. */
function foldReference(rows: Float32Array, first: number, count: number, q: Matrix, tops: TopK[]) {
  const dim = q.dim;
  for (let i = 0; i < q.n; i++) {
    const top = tops[i];
    const qo = i * dim;
    for (let r = 0; r < count; r++) {
      let s = 0;
      for (let j = 0, o = r * dim; j < dim; j++) s += q.data[qo + j] * rows[o + j];
      top.push(Math.fround(s), first + r);
    }
  }
}

function setReference(tops: TopK[], k: number) {
  const drained = tops.map((t) => t.drain());
  state.ref = {
    k,
    ids: drained.map((h) => h.map((e) => e.index)),
    scores: drained.map((h) => h.map((e) => e.score)),
  };
}

export type VectorsHarness = typeof vectorsHarness;

declare global {
  interface Window {
    vectorsHarness: VectorsHarness;
  }
}

window.vectorsHarness = vectorsHarness;
document.getElementById('status')!.textContent = 'ready';
