// Page-side helpers for tests/e2e/index.test.ts and scripts/bench-index.ts (called through
// page.evaluate). Served by the Vite dev server at /tests/browser/index-harness.html; never part of
// the app build.
import {
  addToExactCorpus,
  buildIndex,
  closeExactCorpus,
  exactCorpusInfo,
  exactSearchIndex,
  openExactCorpus,
  searchExactCorpus,
  indexInfo,
  indexWasmHeapBytes,
  recallAgainstExact,
  searchIndex,
  stopIndexWorker,
  type BuildRequest,
  type ExactBackend,
  type IndexArtifact,
  type RowStoreKind,
  type WasmKernel,
} from '../../src/lib/clients/index-client';
import { probeWebGpu } from '../../src/lib/platform/gpu/gpu-exact';
import { openShardStore } from '../../src/lib/platform/storage/shard-store';
import { putShard } from '../../src/lib/platform/storage/shard-stream-store';
import {
  clusteredVectors,
  exactSearch,
  indexTieBreak,
  trecTieBreak,
  mulberry32,
  type KnnResult,
  type Matrix,
} from '../../src/lib/core/retrieval/exact';
import { parseNpy } from '../../src/lib/core/shard/vector-files';
import type { ParsedShard, Progress } from '../../src/lib/core/types';
import { TopK } from '../../src/lib/core/retrieval/topk';

/** Vectors held by the page between calls. */
const state: {
  docs?: Matrix;
  queries?: Matrix;
  docIds?: string[];
  /** The 1M run: its queries and the JS reference top-k of the first `sample`. */
  million?: { queries: Matrix; k: number; sample: number; refIds: number[]; refScores: number[] };
} = {};

/** A KnnResult as plain arrays (page.evaluate cannot return typed arrays faithfully). */
export interface PlainKnn {
  k: number;
  nq: number;
  indices: number[];
  scores: number[];
  counts: number[];
}

const plain = (r: KnnResult): PlainKnn => ({
  k: r.k,
  nq: r.nq,
  indices: Array.from(r.indices),
  scores: Array.from(r.scores),
  counts: Array.from(r.counts),
});

type Failure = { ok: false; name: string; message: string };
const failure = (e: unknown): Failure => ({
  ok: false,
  name: (e as Error)?.name ?? 'Error',
  message: (e as Error)?.message ?? String(e),
});

const docs = () => {
  if (!state.docs) throw new Error('call generate() or loadNpy() first');
  return state.docs;
};

const indexHarness = {
  /** Seeded clustered corpus and queries (same clusters), kept in the page. */
  generate(n: number, nq: number, dim: number, seed = 7): { n: number; nq: number; dim: number } {
    const gen = clusteredVectors(dim, { seed });
    state.docs = gen.generate(n);
    state.queries = gen.generate(nq);
    state.docIds = Array.from({ length: n }, (_, i) => `doc-${String(i).padStart(6, '0')}`);
    return { n, nq, dim };
  },

  /** Reads corpus and query matrices from .npy URLs (the benchmark serves them). */
  async loadNpy(
    docsUrl: string,
    queriesUrl: string,
  ): Promise<{ n: number; nq: number; dim: number; ms: number }> {
    const t0 = performance.now();
    const get = async (u: string) => parseNpy(new Uint8Array(await (await fetch(u)).arrayBuffer()), u);
    const [d, q] = await Promise.all([get(docsUrl), get(queriesUrl)]);
    state.docs = { data: d.data, n: d.n, dim: d.dim };
    state.queries = { data: q.data, n: q.n, dim: q.dim };
    state.docIds = undefined;
    return { n: d.n, nq: q.n, dim: d.dim, ms: performance.now() - t0 };
  },

  /**
   * One random unit direction plus `spread` × uniform noise per row, normalised: every score is
   * nearly the same, which makes approximate candidate cuts too close to call (spread 0: identical rows).
   */
  nearDuplicates(n: number, nq: number, dim: number, spread: number, seed = 5): number {
    const rnd = mulberry32(seed);
    const base = Array.from({ length: dim }, () => rnd() - 0.5);
    const rows = (count: number) => {
      const data = new Float32Array(count * dim);
      for (let r = 0; r < count; r++) {
        let norm = 0;
        for (let j = 0; j < dim; j++) {
          const v = base[j] + spread * (rnd() - 0.5);
          data[r * dim + j] = v;
          norm += v * v;
        }
        for (let j = 0; j < dim; j++) data[r * dim + j] /= Math.sqrt(norm);
      }
      return { data, n: count, dim };
    };
    state.docs = rows(n);
    state.queries = rows(nq);
    state.docIds = Array.from({ length: n }, (_, i) => `doc-${String(i).padStart(6, '0')}`);
    return n;
  },

  /** Repeats the whole corpus `times` times (row i + c·n = row i): exact ties for every query. */
  repeatRows(times: number): number {
    const d = docs();
    const data = new Float32Array(d.data.length * times);
    for (let c = 0; c < times; c++) data.set(d.data, c * d.data.length);
    state.docs = { data, n: d.n * times, dim: d.dim };
    state.docIds = Array.from({ length: d.n * times }, (_, i) => `doc-${String(i).padStart(6, '0')}`);
    return d.n * times;
  },

  /** A cached (complete) synthetic shard whose documents are the generated rows, for artifacts. */
  async createShard(): Promise<string> {
    const ids = state.docIds ?? [];
    const hashBytes = new Uint8Array(
      await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`index-harness:${ids.length}`)),
    );
    const hash = Array.from(hashBytes, (b) => b.toString(16).padStart(2, '0')).join('');
    const parsed: ParsedShard = {
      manifest: { name: 'synthetic-vectors', format: 'beir', tasks: [] },
      hash,
      docs: ids.map((id) => ({ id, title: '', text: id, meta: {} })),
      queries: [],
      qrels: new Map(),
      images: [],
      warnings: [],
      bytes: 0,
    };
    const store = await openShardStore();
    try {
      await putShard(store, parsed, new Map(), 'index-harness');
    } finally {
      await store.close();
    }
    return hash;
  },

  /**
   * Builds through the index worker; `cancelAt`: abort once a progress tick reports at least that
   * many vectors inserted. Returns the result or the error, and the progress ticks seen.
   */
  async build(
    opts: Omit<BuildRequest, 'vectors' | 'dim' | 'docIds'> & { cancelAt?: number; useDocIds?: boolean },
  ) {
    const d = docs();
    const { cancelAt, useDocIds, ...req } = opts;
    const ticks: string[] = [];
    const ac = new AbortController();
    const onProgress = (p: Progress) => {
      ticks.push(p.kind === 'index' ? `index:${p.done}/${p.total}` : p.kind);
      if (cancelAt !== undefined && p.kind === 'index' && p.done >= cancelAt) ac.abort();
    };
    const t0 = performance.now();
    try {
      const r = await buildIndex(
        {
          ...req,
          // A copy: the original is transferred (detached) by the call.
          vectors: d.data.slice(),
          dim: d.dim,
          docIds: useDocIds ? state.docIds : undefined,
        },
        { signal: ac.signal, onProgress },
      );
      return { ok: true as const, ...r, ticks, wallMs: performance.now() - t0 };
    } catch (e) {
      return { ...failure(e), ticks, wallMs: performance.now() - t0 };
    }
  },

  /** HNSW search of the held queries (or the first `nq`); exclusions per query. */
  async search(
    k: number,
    efSearch?: number,
    opts: { exclude?: number[][]; nq?: number; rescore?: boolean } = {},
  ) {
    const q = state.queries!;
    const nq = opts.nq ?? q.n;
    const t0 = performance.now();
    const r = await searchIndex(q.data.slice(0, nq * q.dim), k, efSearch, {
      exclude: opts.exclude,
      rescore: opts.rescore,
    });
    return { ...plain(r.result), efSearch: r.efSearch, ms: r.ms, wallMs: performance.now() - t0 };
  },

  /** Exact search of the held queries through the worker. */
  async exact(
    k: number,
    opts: {
      backend?: 'auto' | ExactBackend;
      exclude?: number[][];
      nq?: number;
      maxChunkDocs?: number;
      wasmKernel?: WasmKernel;
    } = {},
  ) {
    const q = state.queries!;
    const nq = opts.nq ?? q.n;
    try {
      const t0 = performance.now();
      const r = await exactSearchIndex(q.data.slice(0, nq * q.dim), k, {
        backend: opts.backend,
        exclude: opts.exclude,
        maxChunkDocs: opts.maxChunkDocs,
        wasmKernel: opts.wasmKernel,
      });
      const { result, ...rest } = r;
      return { ok: true as const, ...plain(result), ...rest, wallMs: performance.now() - t0 };
    } catch (e) {
      return failure(e);
    }
  },

  /** Recall of HNSW vs exact on the held queries (`useQueries`) or on a corpus sample. */
  recall(k: number, efSearch?: number[], useQueries = true, backend: 'auto' | ExactBackend = 'auto') {
    return recallAgainstExact(k, {
      efSearch,
      backend,
      queries: useQueries ? state.queries!.data.slice() : undefined,
    });
  },

  /** The JS reference (core exactSearch) on the page, over the held corpus and queries. */
  jsExact(k: number, opts: { exclude?: number[][]; useDocIds?: boolean; nq?: number } = {}): PlainKnn {
    const q = state.queries!;
    const nq = opts.nq ?? q.n;
    const queries = { data: q.data.subarray(0, nq * q.dim), n: nq, dim: q.dim };
    const tieBreak = opts.useDocIds && state.docIds ? trecTieBreak(state.docIds) : indexTieBreak;
    return plain(exactSearch(docs(), queries, { k, exclude: opts.exclude, tieBreak }));
  },

  /**
   * The held corpus through the index worker's chunked exact corpus: opened with `chunkRows` and
   * `store`, fed in `pieces` uneven parts (so pieces straddle chunks), then searched with progress.
   * `cancelAtStep`: abort at the first 'search' tick with at least that many steps done.
   */
  async chunkedExact(
    k: number,
    opts: {
      chunkRows?: number;
      store?: 'auto' | RowStoreKind;
      pieces?: number;
      exclude?: number[][];
      useDocIds?: boolean;
      nq?: number;
      cancelAtStep?: number;
    } = {},
  ) {
    const d = docs();
    const q = state.queries!;
    const nq = opts.nq ?? q.n;
    const ticks: string[] = [];
    const ac = new AbortController();
    try {
      const opened = await openExactCorpus({
        dim: d.dim,
        space: 'ip',
        chunkRows: opts.chunkRows,
        store: opts.store,
        docIds: opts.useDocIds ? state.docIds : undefined,
      });
      const pieces = opts.pieces ?? 3;
      // Uneven cuts: the first piece is small, the rest split what is left.
      const cuts = [0, Math.floor(d.n / (2 * pieces))];
      for (let p = 1; p < pieces; p++) cuts.push(Math.floor(cuts[1] + ((d.n - cuts[1]) * p) / pieces));
      cuts.push(d.n);
      for (let p = 0; p + 1 < cuts.length; p++)
        if (cuts[p + 1] > cuts[p]) await addToExactCorpus(d.data.slice(cuts[p] * d.dim, cuts[p + 1] * d.dim));
      const info = await exactCorpusInfo();
      const t0 = performance.now();
      const r = await searchExactCorpus(q.data.slice(0, nq * q.dim), k, {
        exclude: opts.exclude,
        signal: ac.signal,
        onProgress: (p) => {
          if (p.kind !== 'search') return;
          ticks.push(`search:${p.done}/${p.total}`);
          if (opts.cancelAtStep !== undefined && p.done >= opts.cancelAtStep) ac.abort();
        },
      });
      const wallMs = performance.now() - t0;
      await closeExactCorpus();
      return { ok: true as const, ...plain(r.result), stats: r.stats, ms: r.ms, opened, info, ticks, wallMs };
    } catch (e) {
      return { ...failure(e), ticks };
    }
  },

  exactCorpusInfo: () => exactCorpusInfo(),

  /** The errors the chunked corpus gives for bad calls, in order. */
  async badCorpusCalls(): Promise<string[]> {
    const errs: string[] = [];
    const keep = (e: unknown) => errs.push((e as Error).message);
    await closeExactCorpus();
    await searchExactCorpus(new Float32Array(4), 1).catch(keep);
    await openExactCorpus({ dim: 4, space: 'ip', chunkRows: 0 }).catch(keep);
    await openExactCorpus({ dim: 4, space: 'ip', store: 'memory' });
    await addToExactCorpus(new Float32Array(6)).catch(keep);
    await addToExactCorpus(new Float32Array(8));
    await searchExactCorpus(new Float32Array(6), 1).catch(keep);
    await closeExactCorpus();
    return errs;
  },

  /**
   * Loads the 1M-scale exact run of scripts/bench-index.ts: the queries from `${base}/million-queries.npy`,
   * then the `n` rows from `${base}/million/<first row>` in pieces of `piece` rows, each handed to the
   * index worker's chunked corpus (the page never holds more than one piece). The JS reference (core
   * exactSearch, piece by piece, merged) is computed on the way for the first `sample` queries.
   */
  async millionLoad(
    base: string,
    n: number,
    dim: number,
    k: number,
    opts: { piece?: number; sample?: number; chunkRows?: number; store?: 'auto' | RowStoreKind } = {},
  ) {
    const piece = opts.piece ?? 50_000;
    const get = async (u: string) => {
      const r = await fetch(u);
      if (!r.ok) throw new Error(`${u}: HTTP ${r.status}`);
      return new Uint8Array(await r.arrayBuffer());
    };
    const q = parseNpy(await get(`${base}/million-queries.npy`), 'million-queries.npy');
    const queries = { data: q.data, n: q.n, dim: q.dim };
    const sample = Math.min(q.n, opts.sample ?? 10);
    const sampleQ = { data: queries.data.slice(0, sample * dim), n: sample, dim };
    const refTops = Array.from({ length: sample }, () => new TopK(k, indexTieBreak));
    const opened = await openExactCorpus({ dim, space: 'ip', chunkRows: opts.chunkRows, store: opts.store });
    let fetchMs = 0;
    let referenceMs = 0;
    let addMs = 0;
    for (let s = 0; s < n; s += piece) {
      let t = performance.now();
      const bytes = await get(`${base}/million/${s}`);
      const rows = Math.min(piece, n - s);
      if (bytes.byteLength !== rows * dim * 4)
        throw new Error(`piece at row ${s}: ${bytes.byteLength} bytes`);
      const m = { data: new Float32Array(bytes.buffer, bytes.byteOffset, rows * dim), n: rows, dim };
      fetchMs += performance.now() - t;
      t = performance.now();
      const ref = exactSearch(m, sampleQ, { k });
      for (let i = 0; i < sample; i++)
        for (let j = 0; j < ref.counts[i]; j++)
          refTops[i].push(ref.scores[i * k + j], s + ref.indices[i * k + j]);
      referenceMs += performance.now() - t;
      t = performance.now();
      await addToExactCorpus(m.data);
      addMs += performance.now() - t;
    }
    const refIds: number[] = [];
    const refScores: number[] = [];
    for (const top of refTops)
      for (const h of top.drain()) {
        refIds.push(h.index);
        refScores.push(h.score);
      }
    state.million = { queries, k, sample, refIds, refScores };
    return { opened, info: await exactCorpusInfo(), fetchMs, referenceMs, addMs, sample };
  },

  /** Searches the loaded 1M corpus in the worker; compares the sample with the JS reference. */
  async millionSearch() {
    const mm = state.million;
    if (!mm) throw new Error('call millionLoad() first');
    let ticks = 0;
    const t0 = performance.now();
    const r = await searchExactCorpus(mm.queries.data.slice(), mm.k, { onProgress: () => ticks++ });
    const wallMs = performance.now() - t0;
    const n = mm.sample * mm.k;
    const ids = r.result.indices.subarray(0, n);
    const scores = r.result.scores.subarray(0, n);
    return {
      ms: r.ms,
      wallMs,
      stats: r.stats,
      progressTicks: ticks,
      sameIdsAsJs: ids.length === mm.refIds.length && ids.every((x, i) => x === mm.refIds[i]),
      sameScoresAsJs: scores.every((x, i) => x === mm.refScores[i]),
      indices: Array.from(r.result.indices),
    };
  },

  info: () => indexInfo(),
  wasmHeapBytes: () => indexWasmHeapBytes(),
  stop: () => stopIndexWorker(),

  async gpuProbe() {
    const p = await probeWebGpu();
    return p.ok
      ? {
          ok: true as const,
          fallbackAdapter: p.fallbackAdapter,
          description: p.description,
          maxStorageBufferBindingSize: p.adapter.limits.maxStorageBufferBindingSize,
        }
      : { ok: false as const, reason: p.reason };
  },

  /** The stored artifact's header and size (what the worker persisted). */
  async artifact(shard: string, key: string) {
    const store = await openShardStore({ sweep: false });
    try {
      const a = await store.getArtifact<IndexArtifact>(shard, 'hnsw', key);
      return a ? { header: a.header, byteLength: a.bytes.byteLength } : null;
    } finally {
      await store.close();
    }
  },

  /** Damages the stored artifact behind the worker's back. */
  async corruptArtifact(shard: string, key: string, how: 'flip' | 'truncate' | 'header' | 'garbage') {
    const store = await openShardStore({ sweep: false });
    try {
      const a = await store.getArtifact<IndexArtifact>(shard, 'hnsw', key);
      if (!a) throw new Error('no artifact to corrupt');
      if (how === 'flip') {
        const b = new Uint8Array(a.bytes);
        b[Math.floor(b.length / 2)] ^= 0x40; // one bit in the middle of the graph
      } else if (how === 'truncate') {
        a.bytes = a.bytes.slice(0, a.bytes.byteLength - 100);
        a.header.byteLength = a.bytes.byteLength;
      } else if (how === 'header') {
        a.header.count += 1;
      }
      await store.putArtifact(shard, 'hnsw', key, how === 'garbage' ? { nonsense: true } : a);
    } finally {
      await store.close();
    }
  },

  /** Memory as the browser measures it (all of this page's agents, workers included), when it can. */
  async memory(): Promise<{ uaBytes?: number; workerBytes?: number; jsHeapBytes?: number; error?: string }> {
    const out: { uaBytes?: number; workerBytes?: number; jsHeapBytes?: number; error?: string } = {};
    const perf = performance as Performance & {
      measureUserAgentSpecificMemory?: () => Promise<{
        bytes: number;
        breakdown: { bytes: number; types: string[]; attribution: { scope?: string }[] }[];
      }>;
      memory?: { usedJSHeapSize: number };
    };
    if (perf.memory) out.jsHeapBytes = perf.memory.usedJSHeapSize;
    if (perf.measureUserAgentSpecificMemory && crossOriginIsolated) {
      try {
        const m = await perf.measureUserAgentSpecificMemory();
        out.uaBytes = m.bytes;
        out.workerBytes = m.breakdown
          .filter((b) => b.attribution.some((a) => a.scope === 'DedicatedWorkerGlobalScope'))
          .reduce((s, b) => s + b.bytes, 0);
      } catch (e) {
        out.error = (e as Error).message;
      }
    } else out.error = crossOriginIsolated ? 'not supported' : 'not cross-origin isolated';
    return out;
  },
};

export type IndexHarness = typeof indexHarness;

declare global {
  interface Window {
    indexHarness: IndexHarness;
  }
}

window.indexHarness = indexHarness;
document.getElementById('status')!.textContent = 'ready';
