// Page-side helpers for tests/e2e/encoders.test.ts (called through page.evaluate). Served by the
// Vite dev server at /tests/browser/encoder-harness.html; never part of the app build.
import { openDB } from 'idb';
import { importShard } from '../../src/lib/clients/shard-client';
import { DB_NAME, hashRange } from '../../src/lib/platform/storage/shard-store';
import {
  MODEL_REGISTRY,
  cacheModelFiles,
  embedCorpus,
  embedImages,
  embedTextChunks,
  embedTexts,
  encoderBackend,
  encoderCounters,
  loadEncoder,
  registryModel,
  simulateGpuDeviceLoss,
  stopEncoder,
  type LoadOptions,
} from '../../src/lib/clients/encoder-client';
import { detectBackend } from '../../src/lib/platform/gpu/backend';
import type { EmbedPart, EmbedRole, ModelSpec } from '../../src/lib/core/retrieval/models';
import type { TaskInfo } from '../../src/lib/core/types';
import { meanOfChunks, type Chunking } from '../../src/lib/core/retrieval/chunking';
import { denseAdhoc } from '../../src/lib/state/dense';
import { readShardSets } from '../../src/lib/state/dense-sets';
import type { Progress } from '../../src/lib/core/types';
import type { ParquetMapping } from '../../src/lib/core/media/parquet/mapping';

type Failure = { ok: false; error: { name: string; message: string } };

function failure(e: unknown): Failure {
  const err = e as Error;
  return { ok: false, error: { name: err?.name ?? 'Error', message: err?.message ?? String(e) } };
}

/** A registry entry, optionally with test-only changes (e.g. a shorter maxTokens to keep CI fast). */
function spec(id: string, overrides: Partial<ModelSpec> = {}): ModelSpec {
  const s = registryModel(id);
  if (!s) throw new Error(`${id} is not in models/registry.json`);
  return { ...s, ...overrides };
}

/** Rows of a (n × dim) matrix as plain arrays (page.evaluate returns JSON). */
function rows(m: Float32Array, n: number): number[][] {
  if (n === 0) return [];
  const dim = m.length / n;
  return Array.from({ length: n }, (_, i) => Array.from(m.subarray(i * dim, (i + 1) * dim)));
}

function progressLabel(p: Progress): string {
  switch (p.kind) {
    case 'download':
      return `download:${p.file}:${p.loaded}/${p.total ?? '?'}`;
    case 'embed':
      return `embed:${p.done}/${p.total}`;
    case 'status':
      return `status:${p.message}`;
    case 'compile':
      return `compile:${p.model}:${p.device}`;
    default:
      return p.kind;
  }
}

/** Tasks of the shards imported by importShard, by content hash. */
const shardTasks = new Map<string, TaskInfo[]>();

/** State of a corpus run started with startCorpus (survives only until the page reloads). */
const runs = new Map<string, { progress: string[]; done?: unknown }>();

async function summarize(
  hash: string,
  id: string,
  part: EmbedPart,
  batchSize: number,
  load: LoadOptions,
  overrides: Partial<ModelSpec>,
  signal?: AbortSignal,
  onTick?: (p: Progress) => void,
) {
  const progress: string[] = [];
  const r = await embedCorpus(
    { shardHash: hash, spec: spec(id, overrides), part, batchSize, load },
    {
      signal,
      onProgress: (p) => {
        progress.push(progressLabel(p));
        onTick?.(p);
      },
    },
  );
  const missing = new Set(r.missing);
  let presentMin = Infinity;
  let presentMax = -Infinity;
  let missingMaxAbs = 0;
  let checksum = 0;
  r.docIds.forEach((docId, i) => {
    let s = 0;
    for (let j = i * r.dim; j < (i + 1) * r.dim; j++) {
      s += r.embeddings[j] * r.embeddings[j];
      checksum += r.embeddings[j] * ((j % 7) + 1);
      if (missing.has(docId)) missingMaxAbs = Math.max(missingMaxAbs, Math.abs(r.embeddings[j]));
    }
    if (!missing.has(docId)) {
      presentMin = Math.min(presentMin, Math.sqrt(s));
      presentMax = Math.max(presentMax, Math.sqrt(s));
    }
  });
  return {
    ok: true as const,
    dim: r.dim,
    docs: r.docIds.length,
    bufferBytes: r.embeddings.byteLength,
    missing: r.missing,
    key: r.key,
    batchSize: r.batchSize,
    tokenBudget: r.tokenBudget,
    totalBatches: r.totalBatches,
    computedBatches: r.computedBatches,
    reusedBatches: r.reusedBatches,
    notSaved: r.notSaved ?? null,
    ms: r.ms,
    backend: r.backend,
    presentNorm: { min: presentMin, max: presentMax },
    missingMaxAbs,
    checksum,
    progress,
  };
}

const encoderHarness = {
  registryIds: () => MODEL_REGISTRY.models.map((m) => m.id),
  registryErrors: () => MODEL_REGISTRY.errors,

  async probe() {
    return detectBackend({ available: ['fp32', 'fp16'] });
  },

  async load(id: string, opts: LoadOptions = {}) {
    const progress: string[] = [];
    try {
      const info = await loadEncoder(spec(id), {
        ...opts,
        onProgress: (p) => progress.push(progressLabel(p)),
      });
      return { ok: true as const, info, progress };
    } catch (e) {
      return { ...failure(e), progress };
    }
  },

  async embedTexts(texts: string[], role: EmbedRole, batchSize = 8): Promise<number[][]> {
    const m = await embedTexts(texts, role, { batchSize });
    return rows(m, texts.length);
  },

  /** Chunk vectors of texts (chunking mean/max) as rows, with chunks per text and token spans. */
  async embedTextChunks(texts: string[], role: EmbedRole, chunking: Chunking, batchSize = 8) {
    const r = await embedTextChunks(texts, role, chunking, { batchSize });
    const n = r.spans.length / 2;
    return {
      rows: rows(r.vectors, n),
      counts: [...r.counts],
      spans: [...r.spans],
      mean: rows(r.mean, texts.length),
    };
  },

  /**
   * A corpus's text chunked by `mean`: the worker's pooled rows (`pool`) against the mean of the
   * chunk rows it returns without pooling, computed here.
   */
  async pooledChunks(
    hash: string,
    id: string,
    load: LoadOptions,
    overrides: Partial<ModelSpec>,
    overlap = 8,
  ) {
    const m = spec(id, overrides);
    const req = { shardHash: hash, spec: m, part: 'text' as const, batchSize: 64, load };
    const chunked = await embedCorpus({ ...req, chunking: { aggregate: 'mean', overlap } });
    const pooled = await embedCorpus({ ...req, chunking: { aggregate: 'mean', overlap }, pool: true });
    const counts = new Uint32Array(chunked.docIds.length);
    for (const d of chunked.chunks!.rowDoc) counts[d]++;
    const mean = meanOfChunks(chunked.embeddings, counts, chunked.dim, m.normalize);
    let maxDiff = mean.length === pooled.embeddings.length ? 0 : Infinity;
    mean.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - pooled.embeddings[i]))));
    return {
      docs: chunked.docIds.length,
      chunkRows: chunked.chunks!.rowDoc.length,
      severalChunks: counts.filter((c) => c > 1).length,
      pooledRows: pooled.embeddings.length / pooled.dim,
      pooledChunkRows: pooled.chunks?.rowDoc.length,
      reused: pooled.computedBatches === 0,
      maxDiff,
    };
  },

  /** Fetches images of a demo shard (/shards/<name>/<path>) and embeds them with the active model. */
  async embedShardImages(name: string, paths: string[], batchSize = 4): Promise<number[][]> {
    const blobs = await Promise.all(
      paths.map(async (p) => {
        const res = await fetch(`/shards/${name}/${p}`);
        if (!res.ok) throw new Error(`HTTP ${res.status} for ${p}`);
        return res.blob();
      }),
    );
    return rows(await embedImages(blobs, { batchSize }), paths.length);
  },

  /** Imports /shards/<name>/ through the shard worker; returns its content hash. */
  async importShard(name: string): Promise<string> {
    const r = await importShard({ kind: 'url', url: new URL(`/shards/${name}/`, location.href).href });
    if (!r.ok) throw new Error(`import of ${name} failed: ${JSON.stringify(r.issues.slice(0, 3))}`);
    shardTasks.set(r.summary.hash, r.summary.manifest.tasks);
    return r.summary.hash;
  },

  /**
   * Embeds a shard's corpus and summarises the result. `abortAtDone`: cancel (terminate the
   * worker) once a progress tick reports at least that many documents done.
   */
  async embedCorpus(
    hash: string,
    id: string,
    part: EmbedPart,
    batchSize: number,
    load: LoadOptions,
    opts: { abortAtDone?: number; overrides?: Partial<ModelSpec> } = {},
  ) {
    const ac = new AbortController();
    const { abortAtDone, overrides = {} } = opts;
    try {
      return await summarize(hash, id, part, batchSize, load, overrides, ac.signal, (p) => {
        if (abortAtDone !== undefined && p.kind === 'embed' && p.done >= abortAtDone) ac.abort();
      });
    } catch (e) {
      return failure(e);
    }
  },

  /** Starts a corpus embedding without waiting (for a reload half way); see runStatus. */
  startCorpus(
    runId: string,
    hash: string,
    id: string,
    part: EmbedPart,
    batchSize: number,
    load: LoadOptions,
    overrides: Partial<ModelSpec> = {},
  ) {
    const run: { progress: string[]; done?: unknown } = { progress: [] };
    runs.set(runId, run);
    void summarize(hash, id, part, batchSize, load, overrides, undefined, (p) =>
      run.progress.push(progressLabel(p)),
    ).then(
      (r) => (run.done = r),
      (e) => (run.done = failure(e)),
    );
  },

  runStatus(runId: string) {
    const r = runs.get(runId);
    return r ? { progress: r.progress.slice(-3), done: r.done ?? null } : null;
  },

  /** The stored embedding records (kind `emb`) of a shard, without their vectors. */
  async embRecords(hash: string) {
    const db = await openDB(DB_NAME);
    try {
      const all = (await db.getAll('artifacts', hashRange(hash, 'emb'))) as {
        key: string;
        value: {
          batchNo?: number;
          writtenAt?: number;
          ids?: string[];
          complete?: boolean;
          totalBatches?: number;
        };
      }[];
      return all.map(({ key, value }) => ({
        key,
        batchNo: value.batchNo ?? null,
        writtenAt: value.writtenAt ?? null,
        firstId: value.ids?.[0] ?? null,
        size: value.ids?.length ?? null,
        complete: value.complete ?? null,
        totalBatches: value.totalBatches ?? null,
      }));
    } finally {
      db.close();
    }
  },

  /**
   * Ad-hoc dense text queries as the Search view runs them (state/dense.ts denseAdhoc, one call per
   * query, in order): wall ms of each and its ranked documents.
   */
  async adhocDense(hash: string, taskId: string, id: string, texts: string[], load: LoadOptions, k = 20) {
    const task = shardTasks.get(hash)?.find((t) => t.id === taskId);
    if (!task) throw new Error(`no task ${taskId} in shard ${hash} (importShard first)`);
    const out: { ms: number; hits: { docId: string; score: number }[] }[] = [];
    for (const text of texts) {
      const t0 = performance.now();
      const r = await denseAdhoc({
        sets: await readShardSets(hash),
        task,
        text,
        image: null,
        settings: {
          spec: spec(id),
          device: load.device ?? 'auto',
          dtype: load.dtype ?? 'auto',
          textWeight: 0.5,
          fusion: 'both',
          depth: k,
        },
        k,
        job: {},
      });
      out.push({ ms: performance.now() - t0, hits: r[0]?.hits ?? [] });
    }
    return out;
  },

  /**
   * Imports a shard from a URL path (e.g. /generated-shards/x/) through the shard worker, a Parquet
   * dataset with its file list and mapping; the outcome as data (its tasks kept for adhocDense).
   */
  async importUrl(path: string, opts: { files?: string[]; parquet?: ParquetMapping } = {}) {
    const r = await importShard(
      { kind: 'url', url: new URL(path, location.href).href, ...(opts.files ? { files: opts.files } : {}) },
      opts.parquet ? { parquet: opts.parquet } : {},
    );
    if (!r.ok) return { ok: false as const, issues: r.issues };
    shardTasks.set(r.summary.hash, r.summary.manifest.tasks);
    return { ok: true as const, hash: r.summary.hash, name: r.summary.name, precomputed: r.precomputed };
  },

  /** The text vectors of a shard's documents that have text (shard order), embedded here. */
  async corpusTextRows(hash: string, id: string, load: LoadOptions) {
    const s = spec(id);
    const r = await embedCorpus({ shardHash: hash, spec: s, part: 'text', batchSize: 16, load });
    const missing = new Set(r.missing);
    const keep = r.docIds.flatMap((d, i) => (missing.has(d) ? [] : [i]));
    return {
      spec: s,
      dtype: r.backend.dtype,
      ids: keep.map((i) => r.docIds[i]),
      rows: keep.map((i) => Array.from(r.embeddings.subarray(i * r.dim, (i + 1) * r.dim))),
    };
  },

  counters: () => encoderCounters(),

  /** What IndexedDB holds: the shards (name, hash; complete or not), doc chunks and every artifact key. */
  async stored() {
    const db = await openDB(DB_NAME);
    try {
      const shards = (await db.getAll('shards')) as {
        hash: string;
        name?: string;
        manifest?: { name: string };
      }[];
      const artifacts = (await db.getAllKeys('artifacts')) as string[][];
      return {
        shards: shards.map((x) => ({ hash: x.hash, name: x.name ?? x.manifest?.name ?? '' })),
        docChunks: await db.count('docs'),
        artifacts: artifacts.map((k) => k.join('|')),
      };
    } finally {
      db.close();
    }
  },

  backend: () => encoderBackend(),
  loseGpuDevice: () => simulateGpuDeviceLoss(),

  /** Ends the encoder worker on purpose (its downloaded model files are cached first). */
  stop: () => stopEncoder(),

  /** Cancels a call as a user would (its worker is terminated at once, queued cache writes and all). */
  async cancelEmbed(): Promise<string> {
    const ctl = new AbortController();
    const p = embedTexts(['cancelled'], 'query', { signal: ctl.signal });
    ctl.abort();
    return p.then(
      () => 'finished',
      (e: unknown) => (e as Error)?.name ?? 'error',
    );
  },

  /** Writes the worker's queued model files now. */
  cacheModelFiles: () => cacheModelFiles(),

  /** transformers.js's cache entries of a model (`part` of their URL): path and body size. */
  async cachedModelFiles(part: string): Promise<{ path: string; bytes: number }[]> {
    if (!(await caches.has('transformers-cache'))) return [];
    const cache = await caches.open('transformers-cache');
    const out: { path: string; bytes: number }[] = [];
    for (const req of await cache.keys()) {
      if (!req.url.includes(part)) continue;
      const res = await cache.match(req);
      out.push({ path: new URL(req.url).pathname, bytes: (await res!.arrayBuffer()).byteLength });
    }
    return out.sort((a, b) => a.path.localeCompare(b.path));
  },

  /** Empties transformers.js's cache (a fresh profile's state for model files). */
  clearModelCache: () => caches.delete('transformers-cache'),
};

export type EncoderHarness = typeof encoderHarness;

declare global {
  interface Window {
    encoderHarness: EncoderHarness;
  }
}

window.encoderHarness = encoderHarness;
document.getElementById('status')!.textContent = 'ready';
