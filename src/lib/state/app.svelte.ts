// The page's state: which shards exist (demo + cached), the open shard, jobs with progress/cancel,
// runs and their reports. Components read this and call its methods; they never touch a worker.
import type { Bm25Params } from '../core/bm25';
import { formatQrels, formatRun } from '../core/trec';
import { buildTaskReport, qrelsFor, type TaskReport } from '../core/report';
import { measureLabel, standardMeasures } from '../core/metrics';
import type { Doc, Qrels, Query, Run, TaskInfo } from '../core/types';
import type { ShardIssue } from '../core/source';
import { openShardStore, type ShardSummary } from '../adapters/shard-store';
import { importShard, type SourceDescriptor } from '../adapters/shard-client';
import {
  explainBm25Doc,
  prepareBm25,
  resetRetrieval,
  runBm25Task,
  searchBm25Adhoc,
} from '../adapters/retrieval-client';
import { Job, isAbortError } from './jobs.svelte';
import {
  decodeRun,
  describeConfig,
  encodeRun,
  runTag,
  type RetrieverConfig,
  type RunMeta,
  type StoredRun,
} from '../core/runs';
import { parseRun } from '../core/trec';
import { queryFacets } from '../core/report';
import type { Comparison } from '../core/compare';
import { describeFusion, fuse, fusionLabel, type FusionOptions } from '../core/fusion';
import { compareInWorker, curvesInWorker } from '../adapters/stats-client';
import {
  MODEL_REGISTRY,
  RERANKER_REGISTRY,
  encoderBackend,
  loadEncoder,
  registryModel,
  rerankPairs,
  rerankerModel,
  type LoadOptions,
  type LoadedEncoder,
} from '../adapters/encoder-client';
import { pairText, rerankRun as rerankTopN } from '../core/rerank';
import type { Dtype, ModelSpec } from '../core/models';
import type { Device } from '../adapters/backend';
import { denseAdhoc, densePlan, denseTask, type DenseSettings } from './dense';
import { INDEX_DEFAULTS } from '../adapters/index-client';
import {
  formatFuseSpec,
  formatRunSpec,
  parseFuseSpec,
  parseRunSpecs,
  specMatches,
  specOf,
  type FuseSpec,
  type RunSpec,
} from '../core/permalink';

/** Default BM25 parameters: Pyserini/Anserini's BEIR baselines (Lucene BM25, k1=0.9, b=0.4). */
export const DEFAULT_BM25: Bm25Params = { k1: 0.9, b: 0.4, lossyLengths: true };
/** Cutoffs every report shows. */
export const REPORT_KS = [1, 5, 10, 100];
/** Default run depth (documents kept per query); trec_eval measures up to @100 need 100. */
export const DEFAULT_DEPTH = 100;

export interface OpenShard {
  summary: ShardSummary;
  docs: Doc[];
  queries: Query[];
  qrels: Qrels;
  docById: Map<string, Doc>;
  queryById: Map<string, Query>;
}

/** A run with its report; `meta` is what is stored (with the ranked lists) in IndexedDB. */
export interface RunResult {
  meta: RunMeta;
  run: Run;
  report: TaskReport;
}

export type AppPhase =
  'starting' | 'idle' | 'importing' | 'preparing' | 'ready' | 'running' | 'done' | 'error';

export class AppState {
  phase = $state<AppPhase>('starting');
  demoShards = $state<{ name: string; url: string }[]>([]);
  cached = $state<ShardSummary[]>([]);
  estimate = $state<{ usage?: number; quota?: number; persisted?: boolean } | null>(null);
  /** The open shard: big arrays, so not deeply reactive. */
  shard = $state.raw<OpenShard | null>(null);
  job = $state<Job | null>(null);
  issues = $state.raw<ShardIssue[] | null>(null);
  message = $state<string | null>(null);
  taskId = $state('');
  bm25 = $state<Bm25Params>({ ...DEFAULT_BM25 });
  depth = $state(DEFAULT_DEPTH);
  /** Key of the BM25 index ready in the worker (shard hash + params), null when none. */
  preparedKey = $state<string | null>(null);
  indexedDocs = $state<number | null>(null);
  runs = $state.raw<RunResult[]>([]);
  currentRunId = $state<string | null>(null);
  selectedQueryId = $state<string | null>(null);
  readyMs = $state<number | null>(null);
  /** Which retriever the run button uses. */
  retriever = $state<'bm25' | 'dense'>('bm25');
  /** Dense settings: model (registry id or a custom entry), backend, dtype, query fusion. */
  denseModelId = $state(MODEL_REGISTRY.models[0]?.id ?? '');
  denseDevice = $state<'auto' | Device>('auto');
  denseDtype = $state<'auto' | Dtype>('auto');
  textWeight = $state(0.5);
  fusionMode = $state<'both' | 'score' | 'feature'>('both');
  /** Exact dense search, or HNSW with these parameters (the exact run is kept too, as ground truth). */
  denseSearch = $state<'exact' | 'hnsw'>('exact');
  ann = $state<{ M: number; efConstruction: number; efSearch: number }>({
    M: INDEX_DEFAULTS.M,
    efConstruction: INDEX_DEFAULTS.efConstruction,
    efSearch: INDEX_DEFAULTS.efSearch,
  });
  customModels = $state.raw<ModelSpec[]>([]);
  /** Reranking settings: cross-encoder (registry id) and how many documents per query it reorders. */
  rerankModelId = $state(RERANKER_REGISTRY[0]?.id ?? '');
  rerankTopN = $state(20);
  /** Debug switch from the URL (`simulate-webgpu-failure=1`): WebGPU loads fail, to show the fallback. */
  simulateWebGpuFailure = false;
  /** The encoder in use: model, device, dtype, threads and why (shown in the UI). */
  encoder = $state.raw<LoadedEncoder | null>(null);
  /** Runs picked for comparison (ids) and the baseline among them. */
  compareIds = $state<string[]>([]);
  baselineId = $state<string | null>(null);
  comparison = $state.raw<Comparison | null>(null);
  curves = $state.raw<{ id: string; curves: Record<string, number[]> }[] | null>(null);
  /** Recall@10 vs queries/s of the last HNSW run's index over ef (shown with the comparison plots). */
  annCurve = $state.raw<{
    label: string;
    points: { efSearch: number; recall: number; qps: number }[];
  } | null>(null);
  #imageUrls = new Map<string, string>();

  get currentRun(): RunResult | null {
    return this.runs.find((r) => r.meta.id === this.currentRunId) ?? null;
  }

  get task(): TaskInfo | null {
    return this.shard?.summary.manifest.tasks.find((t) => t.id === this.taskId) ?? null;
  }

  get measures(): string[] {
    return standardMeasures(REPORT_KS);
  }

  get crossOriginIsolated(): boolean {
    return globalThis.crossOriginIsolated === true;
  }

  /** Page start: demo shard list, cached shards, then whatever the URL asks for. */
  async start(params: URLSearchParams) {
    await Promise.all([this.refreshCache(), this.loadDemoList()]);
    this.phase = 'idle';
    const k1 = Number(params.get('k1'));
    const b = Number(params.get('b'));
    if (params.has('k1') && Number.isFinite(k1)) this.bm25.k1 = k1;
    if (params.has('b') && Number.isFinite(b)) this.bm25.b = b;
    const depth = Number(params.get('depth'));
    if (params.has('depth') && Number.isInteger(depth) && depth > 0) this.depth = depth;
    if (params.get('retriever') === 'dense') this.retriever = 'dense';
    this.simulateWebGpuFailure = params.get('simulate-webgpu-failure') === '1';
    const model = params.get('model');
    if (model) this.denseModelId = model;
    const device = params.get('device');
    if (device === 'webgpu' || device === 'wasm' || device === 'auto') this.denseDevice = device;
    const dtype = params.get('dtype');
    if (dtype) this.denseDtype = dtype as Dtype;
    const fusion = params.get('fusion');
    if (fusion === 'score' || fusion === 'feature' || fusion === 'both') this.fusionMode = fusion;
    if (params.get('index') === 'hnsw') this.denseSearch = 'hnsw';
    for (const k of ['M', 'efConstruction', 'efSearch'] as const) {
      const v = Number(params.get(k));
      if (params.has(k) && Number.isInteger(v) && v > 0) this.ann[k] = v;
    }
    const alpha = Number(params.get('alpha'));
    if (params.has('alpha') && alpha >= 0 && alpha <= 1) this.textWeight = alpha;
    const url = params.get('shard');
    const cachedHash = params.get('cached');
    if (cachedHash && !url) {
      if (!this.cached.some((c) => c.hash === cachedHash)) {
        this.message = 'The shard of this link is not cached in this browser; load it first.';
        return;
      }
      await this.open(cachedHash);
    }
    if (url || (cachedHash && this.shard)) {
      if (url) {
        const absolute = new URL(url, location.href).href;
        const hit = this.cached.find((s) => s.sourceLabel === absolute);
        if (hit) await this.open(hit.hash);
        else await this.importFrom({ kind: 'url', url: absolute });
      }
      if (!this.shard) return;
      const task = params.get('task');
      if (task && this.shard.summary.manifest.tasks.some((t) => t.id === task)) this.taskId = task;
      await this.prepare();
      // `phase` changed inside the awaits above; TypeScript's narrowing from `= 'idle'` does not know.
      if (params.has('runs')) await this.openPermalink(params);
      else if (params.get('run') === '1' && (this.phase as AppPhase) === 'ready') await this.runSelected();
    }
  }

  async loadDemoList() {
    try {
      const res = await fetch('shards/index.json');
      if (res.ok) this.demoShards = (await res.json()).shards ?? [];
    } catch {
      // A static deployment without demo shards: the list stays empty.
    }
  }

  async refreshCache() {
    const store = await openShardStore();
    this.cached = await store.list();
    this.estimate = await store.estimate();
  }

  /** Imports a shard from a source; on success opens it. Invalid shards leave nothing cached. */
  async importFrom(source: SourceDescriptor) {
    const label = source.kind === 'url' ? source.url : source.kind === 'zip' ? source.file.name : 'folder';
    const job = new Job(`Loading ${label}`);
    this.job = job;
    this.issues = null;
    this.message = null;
    this.phase = 'importing';
    try {
      const result = await importShard(source, { signal: job.signal, onProgress: job.onProgress });
      if (!result.ok) {
        this.issues = result.issues;
        this.phase = this.shard ? 'ready' : 'idle';
        return;
      }
      await this.refreshCache();
      await this.open(result.summary.hash);
    } catch (e) {
      this.fail(e, 'Loading the shard');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Opens a cached shard (documents, queries and qrels from IndexedDB). */
  async open(hash: string) {
    this.issues = null;
    this.message = null;
    try {
      const store = await openShardStore();
      const { summary, docs, queries, qrels } = await store.load(hash);
      this.#revokeImages();
      this.shard = {
        summary,
        docs,
        queries,
        qrels,
        docById: new Map(docs.map((d) => [d.id, d])),
        queryById: new Map(queries.map((q) => [q.id, q])),
      };
      this.taskId = summary.manifest.tasks[0]?.id ?? '';
      this.preparedKey = null;
      this.selectedQueryId = null;
      this.runs = await this.#loadRuns(hash);
      this.currentRunId = this.runs[0]?.meta.id ?? null;
      this.phase = 'idle';
    } catch (e) {
      this.fail(e, 'Opening the cached shard');
      await this.refreshCache();
    }
  }

  get bm25Key(): string | null {
    const s = this.shard;
    return s ? `${s.summary.hash}|${this.bm25.k1}|${this.bm25.b}|${this.bm25.lossyLengths}` : null;
  }

  /** Makes the BM25 index of the open shard ready (cached artifact or a fresh build). */
  async prepare() {
    const s = this.shard;
    if (!s) return;
    const key = this.bm25Key;
    if (this.preparedKey === key) {
      this.phase = 'ready';
      return;
    }
    const job = new Job('Preparing BM25 index');
    this.job = job;
    this.phase = 'preparing';
    try {
      const res = await prepareBm25(s.summary.hash, $state.snapshot(this.bm25), {
        signal: job.signal,
        onProgress: job.onProgress,
      });
      this.preparedKey = key;
      this.indexedDocs = res.indexedDocs;
      this.phase = 'ready';
      this.readyMs = performance.now();
      performance.mark('loupe:ready');
    } catch (e) {
      this.preparedKey = null;
      this.fail(e, 'Building the BM25 index');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Runs BM25 over every query of the selected task and scores the run. */
  async runTask(taskId = this.taskId) {
    const s = this.shard;
    if (!s) return;
    if (this.preparedKey !== this.bm25Key) await this.prepare();
    if (this.phase !== 'ready' && this.phase !== 'done') return;
    const job = new Job(`Running BM25 on ${taskId}`);
    this.job = job;
    this.phase = 'running';
    const t0 = performance.now();
    try {
      const lists = await runBm25Task(taskId, this.depth, { signal: job.signal, onProgress: job.onProgress });
      const run = listsToRun(lists);
      const params = $state.snapshot(this.bm25);
      const config: RetrieverConfig = { kind: 'bm25', ...params };
      const result = await this.addRun(
        this.#meta({
          name: describeConfig(config),
          taskId,
          config,
          depth: this.depth,
          ms: performance.now() - t0,
        }),
        run,
      );
      this.currentRunId = result.meta.id;
      this.selectedQueryId = null;
      this.phase = 'done';
      performance.mark('loupe:done');
    } catch (e) {
      if (isAbortError(e)) {
        // The worker was terminated; its index must be prepared again.
        this.preparedKey = null;
        this.message = 'Run cancelled.';
        this.phase = 'idle';
      } else this.fail(e, 'Running BM25');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** The dense model picked (registry or custom), if any. */
  get denseSpec(): ModelSpec | undefined {
    return registryModel(this.denseModelId) ?? this.customModels.find((m) => m.id === this.denseModelId);
  }

  /** Whether the selected retriever can run a task (BM25 needs query text; dense needs a part it can embed). */
  canRun(task: TaskInfo | null = this.task): boolean {
    if (!task) return false;
    if (this.retriever === 'bm25') return task.queryModality !== 'image';
    const spec = this.denseSpec;
    return !!spec && densePlan(spec, task).canRun;
  }

  /** Runs the selected retriever on a task. */
  runSelected(taskId = this.taskId) {
    return this.retriever === 'dense' ? this.runDenseTask(taskId) : this.runTask(taskId);
  }

  /** Runs the selected retriever on every task it can serve, one after another. */
  async runAllTasks() {
    for (const t of this.shard?.summary.manifest.tasks ?? []) {
      if (!this.canRun(t)) continue;
      this.taskId = t.id;
      await this.runSelected(t.id);
      if (this.phase !== 'done') return;
    }
  }

  /**
   * Dense run of a task with the selected model: corpus embeddings from cache (or computed and
   * cached), queries embedded, exact cosine ranking; for image + text queries one run per fusion.
   */
  async runDenseTask(taskId = this.taskId) {
    const s = this.shard;
    const task = s?.summary.manifest.tasks.find((t) => t.id === taskId);
    const spec = this.denseSpec;
    if (!s || !task || !spec) return;
    const job = new Job(`Dense retrieval with ${spec.label ?? spec.id}`);
    this.job = job;
    this.phase = 'running';
    this.message = null;
    const t0 = performance.now();
    try {
      const docImageRow = new Map(s.docs.filter((d) => d.image).map((d) => [d.image!, d.id]));
      const settings: DenseSettings = {
        spec,
        device: this.denseDevice,
        dtype: this.denseDtype,
        textWeight: this.textWeight,
        fusion: this.fusionMode,
        depth: this.depth,
        simulateWebGpuFailure: this.simulateWebGpuFailure,
        ...(this.denseSearch === 'hnsw' ? { ann: $state.snapshot(this.ann) } : {}),
      };
      const out = await denseTask({
        shardHash: s.summary.hash,
        task,
        queries: s.queries.filter((q) => q.task === taskId),
        docImageRow,
        settings,
        job: { signal: job.signal, onProgress: job.onProgress },
        onEncoder: (e) => (this.encoder = e),
      });
      this.encoder = out.encoder;
      if (out.annCurve)
        this.annCurve = { label: `${spec.label ?? spec.id} on ${taskId}`, points: out.annCurve.points };
      let last: RunResult | null = null;
      for (const r of out.runs) {
        const run = listsToRun(r.lists);
        const config: RetrieverConfig = {
          kind: 'dense',
          modelId: spec.id,
          revision: spec.revision,
          dtype: out.encoder.dtype,
          device: out.encoder.device,
          ...(r.fusion
            ? {
                fusion: {
                  mode: r.fusion.mode,
                  textWeight: r.fusion.mode === 'score' ? r.fusion.textWeight : 0.5,
                },
              }
            : {}),
          ...(r.ann
            ? {
                ann: {
                  kind: 'hnsw' as const,
                  M: r.ann.M,
                  efConstruction: r.ann.efConstruction,
                  efSearch: r.ann.efSearch,
                  recallAt10: r.ann.recallAt10,
                },
              }
            : {}),
        };
        last = await this.addRun(
          this.#meta({
            name: `${spec.label ?? spec.id}${r.fusion ? (r.fusion.mode === 'score' ? ` · score fusion ${r.fusion.textWeight}` : ' · feature fusion') : ''}${r.ann ? ` · HNSW ef=${r.ann.efSearch} (recall@10 vs exact ${r.ann.recallAt10.toFixed(3)})` : ''}`,
            taskId,
            config,
            depth: this.depth,
            ms: performance.now() - t0,
          }),
          run,
        );
      }
      const computed = out.embedded.reduce((a, e) => a + e.computedBatches, 0);
      const reused = out.embedded.reduce((a, e) => a + e.reusedBatches, 0);
      this.message =
        `Corpus embeddings: ${reused} batches from cache, ${computed} computed.` +
        (out.notes.length ? ` ${spec.label ?? spec.id} ${out.notes.join('; ')}.` : '');
      if (last) this.currentRunId = last.meta.id;
      this.selectedQueryId = null;
      this.phase = 'done';
      performance.mark('loupe:done');
    } catch (e) {
      if (isAbortError(e)) {
        this.message =
          'Dense run cancelled; the corpus batches embedded so far are kept and reused next time.';
        this.phase = 'idle';
      } else this.fail(e, 'Dense retrieval');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /**
   * Why a run cannot be reranked with a cross-encoder (null when it can): cross-encoders read
   * (query text, document text) pairs, so the run's task needs text queries and text documents.
   */
  rerankBlocker(r: RunResult | null): string | null {
    const s = this.shard;
    if (!s || !r) return 'open a shard and pick a run first.';
    if (RERANKER_REGISTRY.length === 0) return 'the model registry lists no cross-encoder.';
    const task = s.summary.manifest.tasks.find((t) => t.id === r.meta.taskId);
    if (!task) return `task ${r.meta.taskId} is not in this shard.`;
    if (task.queryModality !== 'text' || task.corpusModality !== 'text')
      return (
        `cross-encoders read text pairs, and task ${task.id} has ${task.queryModality} queries and ` +
        `${task.corpusModality} documents.`
      );
    return null;
  }

  /**
   * Reranks the top N documents of each query of a stored run with a cross-encoder (on the dense
   * backend setting) into a new stored run; documents below N keep their order after them
   * (core/rerank.ts). Progress counts (query, document) pairs; cancel stores nothing.
   */
  async rerankRun(runId: string, modelId: string, topN: number) {
    const s = this.shard;
    const input = this.runs.find((r) => r.meta.id === runId) ?? null;
    const spec = rerankerModel(modelId);
    const blocked = this.rerankBlocker(input);
    if (blocked || !s || !input) {
      this.message = `Cannot rerank: ${blocked}`;
      return;
    }
    if (!spec) {
      this.message = `Cannot rerank: ${modelId} is not a cross-encoder of the registry.`;
      return;
    }
    if (!Number.isInteger(topN) || topN < 1) {
      this.message = 'Cannot rerank: N must be a whole number of at least 1.';
      return;
    }
    const label = spec.label ?? spec.id;
    const job = new PairsJob(`Reranking with ${label}`);
    this.job = job;
    this.phase = 'running';
    this.message = null;
    const t0 = performance.now();
    try {
      const dtype =
        this.denseDtype === 'auto' || spec.dtypes.includes(this.denseDtype) ? this.denseDtype : 'auto';
      const encoder = await loadEncoder(spec, {
        device: this.denseDevice,
        dtype,
        simulateWebGpuFailure: this.simulateWebGpuFailure,
        signal: job.signal,
        onProgress: job.onProgress,
      });
      this.encoder = encoder;
      // Later loads (after a cancel or a WebGPU failure) keep what this one chose.
      const chosen: LoadOptions = { device: encoder.device, dtype: encoder.dtype };
      const t1 = performance.now();
      const result = await rerankTopN(input.run, {
        topN,
        queryText: (q) => s.queryById.get(q)?.text,
        docText: (d) => {
          const doc = s.docById.get(d);
          return doc ? pairText(doc) : undefined;
        },
        score: (q, docs) =>
          rerankPairs(
            spec,
            q.text,
            docs.map((d) => d.text),
            { signal: job.signal, load: chosen },
          ),
        onProgress: (done, total) => job.pairs(done, total, performance.now() - t1),
      });
      // A WebGPU failure during the run moved the model to WASM: record where it really ran.
      const backend = await encoderBackend().catch(() => null);
      const config: RetrieverConfig = {
        kind: 'rerank',
        modelId: spec.id,
        revision: spec.revision,
        dtype: backend?.dtype ?? encoder.dtype,
        device: backend?.device ?? encoder.device,
        topN,
        input: input.meta.id,
      };
      const added = await this.addRun(
        this.#meta({
          name: `${input.meta.name} · top ${topN} reranked by ${label}`,
          taskId: input.meta.taskId,
          config,
          depth: input.meta.depth,
          ms: performance.now() - t0,
        }),
        result.run,
      );
      const notes = [
        result.queriesWithoutText.length
          ? `${result.queriesWithoutText.length} queries without text kept as they were`
          : '',
        result.docsWithoutText
          ? `${result.docsWithoutText} top-${topN} documents without text kept below the reranked ones`
          : '',
      ].filter(Boolean);
      this.message =
        `Reranked ${result.pairs.toLocaleString('en')} pairs in ${((performance.now() - t1) / 1000).toFixed(1)} s.` +
        (notes.length ? ` ${notes.join('; ')}.` : '');
      this.currentRunId = added.meta.id;
      this.selectedQueryId = null;
      this.phase = 'done';
    } catch (e) {
      if (isAbortError(e)) {
        this.message = 'Reranking cancelled; no run was stored.';
        this.phase = 'idle';
      } else this.fail(e, 'Reranking');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  cancelJob() {
    this.job?.cancel();
  }

  async deleteShard(hash: string) {
    const store = await openShardStore();
    await store.delete(hash);
    if (this.shard?.summary.hash === hash) {
      this.shard = null;
      this.preparedKey = null;
      this.#revokeImages();
      resetRetrieval();
      this.phase = 'idle';
    }
    this.runs = this.runs.filter((r) => r.meta.shardHash !== hash);
    await this.refreshCache();
  }

  async adhocSearch(text: string, k = 20) {
    if (!this.shard || this.preparedKey !== this.bm25Key) await this.prepare();
    return searchBm25Adhoc(text, k);
  }

  /** Ad-hoc dense query (text, image or both) against the selected task's corpus. */
  async adhocDense(text: string, image: Blob | null, k = 20) {
    const s = this.shard;
    const task = this.task;
    const spec = this.denseSpec;
    if (!s || !task || !spec) throw new Error('open a shard and pick a model first');
    const job = new Job(`Searching with ${spec.label ?? spec.id}`);
    this.job = job;
    try {
      return await denseAdhoc({
        shardHash: s.summary.hash,
        task,
        text,
        image,
        settings: {
          spec,
          device: this.denseDevice,
          dtype: this.denseDtype,
          textWeight: this.textWeight,
          fusion: 'both',
          depth: k,
          simulateWebGpuFailure: this.simulateWebGpuFailure,
        },
        k,
        job: { signal: job.signal, onProgress: job.onProgress },
        onEncoder: (e) => (this.encoder = e),
      });
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  explain(text: string, docId: string) {
    return explainBm25Doc(text, docId);
  }

  /** Object URL of a shard image, created once and revoked when the shard closes. */
  async imageUrl(path: string): Promise<string | null> {
    const s = this.shard;
    if (!s) return null;
    const hit = this.#imageUrls.get(path);
    if (hit) return hit;
    const blob = await (await openShardStore()).getImage(s.summary.hash, path);
    if (!blob) return null;
    const url = URL.createObjectURL(blob);
    this.#imageUrls.set(path, url);
    return url;
  }

  #revokeImages() {
    for (const u of this.#imageUrls.values()) URL.revokeObjectURL(u);
    this.#imageUrls.clear();
  }

  fail(e: unknown, what: string) {
    if (isAbortError(e)) {
      this.message = `${what}: cancelled.`;
      this.phase = 'idle';
      return;
    }
    console.error(e);
    this.message = `${what} failed: ${e instanceof Error ? e.message : String(e)}`;
    this.phase = 'error';
  }

  // ---- exports (the headless runner downloads these through the same buttons) ----

  exportRunTrec(r: RunResult): string {
    return formatRun(r.run, r.meta.tag);
  }

  exportQrelsTrec(r: RunResult): string {
    const s = this.shard;
    if (!s) return '';
    const ids = s.queries.filter((q) => q.task === r.meta.taskId).map((q) => q.id);
    return formatQrels(qrelsFor(s.qrels, ids));
  }

  /** The run's configuration: the JSON sidecar of an exported TREC run. */
  exportRunSidecar(r: RunResult): string {
    return JSON.stringify({ tool: 'loupe', ...r.meta, queries: r.run.size }, null, 2);
  }

  exportMetricsJson(r: RunResult): string {
    const m = r.meta;
    return JSON.stringify(
      {
        tool: 'loupe',
        run: { id: m.id, name: m.name, tag: m.tag, config: m.config, depth: m.depth, createdAt: m.createdAt },
        shard: { name: m.shardName, hash: m.shardHash },
        task: m.taskId,
        evaluation: 'trec_eval -c semantics over the task qrels; trec_eval 10 tie order',
        queries: r.report.queries,
        overall: r.report.overall,
        facets: r.report.facets,
        perQuery: Object.fromEntries(r.report.perQuery),
      },
      null,
      2,
    );
  }

  exportMetricsCsv(r: RunResult): string {
    const ms = r.report.measures;
    const esc = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
    const rows = [['scope', 'value', 'queries', ...ms.map(measureLabel)].map(esc).join(',')];
    const line = (scope: string, value: string, n: number, m: Record<string, number>) =>
      [esc(scope), esc(value), String(n), ...ms.map((k) => String(m[k] ?? ''))].join(',');
    rows.push(line('overall', r.meta.taskId, r.report.queries, r.report.overall));
    for (const f of r.report.facets)
      for (const v of f.values) rows.push(line(f.key, v.value, v.queries, v.means));
    for (const [qid, m] of r.report.perQuery) rows.push(line('query', qid, 1, m));
    return rows.join('\n') + '\n';
  }

  // ---- permalinks ----

  /**
   * Reopens a shared comparison: each retriever of `runs=` is taken from the stored runs when one
   * with the same configuration exists, else run now; `fuse=` fuses them; `compare=1` compares them
   * against the run at index `baseline` (default 0).
   */
  async openPermalink(params: URLSearchParams) {
    let specs: RunSpec[];
    let fuseSpec: FuseSpec | null = null;
    try {
      specs = parseRunSpecs(params.get('runs') ?? '');
      if (params.get('fuse')) fuseSpec = parseFuseSpec(params.get('fuse')!);
    } catch (e) {
      this.fail(e, 'Reading the link');
      return;
    }
    const ids: string[] = [];
    const skipped: string[] = [];
    for (const spec of specs) {
      // A retriever that cannot serve this task (BM25 or a text encoder on image-only queries) is skipped.
      const task = this.task;
      const dense = spec.kind === 'dense' ? (registryModel(spec.model) ?? null) : null;
      if (
        task &&
        (spec.kind === 'bm25'
          ? task.queryModality === 'image'
          : dense
            ? !densePlan(dense, task).canRun
            : true)
      ) {
        skipped.push(formatRunSpec(spec));
        continue;
      }
      let found = this.taskRuns.filter((r) => specMatches(spec, r.meta.config));
      if (!found.length) {
        const before = new Set(this.runs.map((r) => r.meta.id));
        if (spec.kind === 'bm25') {
          this.retriever = 'bm25';
          this.bm25 = { ...this.bm25, k1: spec.k1, b: spec.b };
          await this.runTask();
        } else {
          this.retriever = 'dense';
          this.denseModelId = spec.model;
          this.denseDtype = spec.dtype as Dtype | 'auto';
          this.denseDevice = spec.device as Device | 'auto';
          this.fusionMode = spec.fusion;
          this.textWeight = spec.alpha;
          await this.runDenseTask();
        }
        if ((this.phase as AppPhase) !== 'done') return;
        found = this.runs.filter((r) => !before.has(r.meta.id));
      }
      // The newest run of each configuration (a dense `both` spec has a score and a feature run).
      const seen = new Set<string>();
      for (const r of found) {
        const key = JSON.stringify(r.meta.config);
        if (seen.has(key)) continue;
        seen.add(key);
        if (!ids.includes(r.meta.id)) ids.push(r.meta.id);
      }
    }
    this.compareIds = ids;
    if (fuseSpec && ids.length >= 2) {
      const method = fuseSpec.method;
      const existing = this.taskRuns.find(
        (r) =>
          r.meta.config.kind === 'fusion' &&
          r.meta.config.method === method &&
          (fuseSpec.k === undefined || r.meta.config.params.k === fuseSpec.k) &&
          r.meta.config.inputs.length === ids.length &&
          r.meta.config.inputs.every((x) => ids.includes(x)),
      );
      if (existing) ids.push(existing.meta.id);
      else {
        const before = new Set(this.runs.map((r) => r.meta.id));
        const norm = fuseSpec.normalization ?? 'minmax';
        await this.fuseRuns(
          method === 'rrf'
            ? { method, k: fuseSpec.k ?? 60 }
            : method === 'linear'
              ? { method, normalization: norm, weights: ids.map(() => 1 / ids.length) }
              : { method, normalization: norm },
        );
        ids.push(...this.runs.filter((r) => !before.has(r.meta.id)).map((r) => r.meta.id));
      }
      this.compareIds = ids;
    }
    // baseline=<a runs= spec> or baseline=fuse; default: the first run.
    const want = params.get('baseline');
    let baseline: string | undefined;
    if (want === 'fuse') baseline = ids.at(-1);
    else if (want) {
      try {
        const [spec] = parseRunSpecs(want);
        baseline = ids.find(
          (id) => spec && specMatches(spec, this.runs.find((r) => r.meta.id === id)!.meta.config),
        );
      } catch {
        // An unreadable baseline falls back to the first run.
      }
    }
    this.baselineId = baseline ?? ids[0] ?? null;
    if (ids.length) this.currentRunId = ids[0];
    this.phase = 'done';
    if (skipped.length)
      this.message = `Not run on ${this.taskId} (cannot serve its queries): ${skipped.join('; ')}.`;
    if (params.get('compare') === '1' && ids.length >= 2) await this.compare();
  }

  /** A URL that reopens the current comparison (null when a compared run cannot be described). */
  permalink(): string | null {
    const s = this.shard;
    if (!s) return null;
    const picked = this.taskRuns.filter((r) => this.compareIds.includes(r.meta.id));
    const specs: string[] = [];
    let fuse: string | null = null;
    for (const r of picked) {
      const c = r.meta.config;
      if (c.kind === 'fusion') {
        const k = c.params.k;
        fuse = formatFuseSpec({
          method: c.method as FuseSpec['method'],
          ...(typeof k === 'number' ? { k } : {}),
        });
        continue;
      }
      const spec = specOf(c);
      if (!spec) return null;
      const f = formatRunSpec(spec);
      if (!specs.includes(f)) specs.push(f);
    }
    const u = new URL(location.origin + location.pathname);
    // A URL shard reopens anywhere; a folder or zip shard only where it is cached (by content hash).
    if (/^https?:\/\//.test(s.summary.sourceLabel)) u.searchParams.set('shard', s.summary.sourceLabel);
    else u.searchParams.set('cached', s.summary.hash);
    u.searchParams.set('task', this.taskId);
    u.searchParams.set('runs', specs.join(';'));
    if (fuse) u.searchParams.set('fuse', fuse);
    const base = picked.find((r) => r.meta.id === this.baselineId);
    if (base) {
      const spec = specOf(base.meta.config);
      u.searchParams.set(
        'baseline',
        spec ? formatRunSpec(spec) : base.meta.config.kind === 'fusion' ? 'fuse' : '',
      );
    }
    u.searchParams.set('compare', '1');
    return u.href;
  }

  // ---- comparison and fusion ----

  /** Runs of the selected task, newest first. */
  get taskRuns(): RunResult[] {
    return this.runs.filter((r) => r.meta.taskId === this.taskId);
  }

  /** Measures compared; the first is the primary one (facets, changed queries). */
  get compareMeasures(): string[] {
    return ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map', 'P_10'];
  }

  /**
   * Compares the picked runs of the task against the baseline in the stats worker: bootstrap CIs,
   * paired randomization and t tests (Holm), facets, changed queries; then metric@k curves.
   */
  async compare() {
    const s = this.shard;
    const picked = this.taskRuns.filter((r) => this.compareIds.includes(r.meta.id));
    if (!s || picked.length < 2) {
      this.message = 'Pick at least two runs of this task to compare.';
      return;
    }
    const baselineId = picked.some((r) => r.meta.id === this.baselineId)
      ? this.baselineId!
      : picked.at(-1)!.meta.id;
    this.baselineId = baselineId;
    const job = new Job('Comparing runs (bootstrap and randomization tests)');
    this.job = job;
    try {
      const taskQueries = s.queries.filter((q) => q.task === this.taskId);
      const facets = new Map<string, Map<string, string>>();
      for (const [qid, f] of queryFacets(taskQueries, s.docs))
        facets.set(qid, new Map([...f].map(([k, v]) => [k, v.value])));
      this.comparison = await compareInWorker(
        {
          inputs: picked.map((r) => ({ id: r.meta.id, name: r.meta.name, perQuery: r.report.perQuery })),
          baselineId,
          measures: this.compareMeasures,
          facets,
          options: { seed: 42, bootstrapResamples: 2000, randomizationResamples: 10000 },
        },
        job.signal,
      );
      job.onProgress({ kind: 'status', message: 'Computing metric@k curves' });
      const qrels = qrelsFor(
        s.qrels,
        taskQueries.map((q) => q.id),
      );
      this.curves = await curvesInWorker(
        picked.map((r) => ({ id: r.meta.id, run: r.run })),
        qrels,
        ['ndcg_cut', 'recall'],
        100,
      );
      performance.mark('loupe:compared');
    } catch (e) {
      this.fail(e, 'Comparing runs');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Fuses the picked runs of the task into a new stored run. */
  async fuseRuns(opts: FusionOptions) {
    const s = this.shard;
    const picked = this.taskRuns.filter((r) => this.compareIds.includes(r.meta.id));
    if (!s || picked.length < 2) {
      this.message = 'Pick at least two runs of this task to fuse.';
      return;
    }
    try {
      const run = fuse(
        picked.map((r) => r.run),
        opts,
      );
      const d = describeFusion(
        opts,
        picked.map((r) => r.meta.name),
      );
      const params: Record<string, number | string> = {};
      for (const [k, v] of Object.entries(d))
        if (typeof v === 'number' || typeof v === 'string') params[k] = v;
        else if (Array.isArray(v) && k === 'weights') params.weights = v.join(',');
      const config: RetrieverConfig = {
        kind: 'fusion',
        method: opts.method,
        params,
        inputs: picked.map((r) => r.meta.id),
      };
      const result = await this.addRun(
        this.#meta({
          name: `${fusionLabel(d)} (${picked.map((r) => r.meta.name).join(' + ')})`,
          taskId: this.taskId,
          config,
          depth: Math.max(...[...run.values()].map((l) => l.length), 0),
          ms: 0,
        }),
        run,
      );
      this.currentRunId = result.meta.id;
      this.phase = 'done';
    } catch (e) {
      this.fail(e, 'Fusing runs');
    }
  }

  // ---- runs as stored objects ----

  /** Metadata of a new run of the open shard. */
  #meta(m: Pick<RunMeta, 'name' | 'taskId' | 'config' | 'depth' | 'ms'>): RunMeta {
    const s = this.shard!;
    return {
      id: newRunId(),
      shardHash: s.summary.hash,
      shardName: s.summary.name,
      createdAt: new Date().toISOString(),
      tag: runTag(m.config),
      ...m,
    };
  }

  #report(meta: RunMeta, run: Run): TaskReport {
    const s = this.shard!;
    return buildTaskReport({
      taskId: meta.taskId,
      queries: s.queries,
      docs: s.docs,
      qrels: s.qrels,
      run,
      measures: this.measures,
    });
  }

  /** Scores a run, stores it in IndexedDB and lists it first. */
  async addRun(meta: RunMeta, run: Run): Promise<RunResult> {
    const result: RunResult = { meta, run, report: this.#report(meta, run) };
    await (await openShardStore()).putArtifact(meta.shardHash, 'run', meta.id, encodeRun(meta, run));
    this.runs = [result, ...this.runs];
    return result;
  }

  /** Stored runs of a shard, re-scored with the current metric code; unreadable ones are dropped. */
  async #loadRuns(hash: string): Promise<RunResult[]> {
    const store = await openShardStore();
    const out: RunResult[] = [];
    for (const [key, stored] of await store.listArtifacts<StoredRun>(hash, 'run')) {
      try {
        const { meta, run } = decodeRun(stored);
        out.push({ meta, run, report: this.#report(meta, run) });
      } catch (e) {
        console.warn(`dropping unreadable stored run ${key}`, e);
        await store.deleteArtifact(hash, 'run', key);
      }
    }
    return out.sort((a, b) => (a.meta.createdAt < b.meta.createdAt ? 1 : -1));
  }

  async renameRun(id: string, name: string) {
    const r = this.runs.find((x) => x.meta.id === id);
    const clean = name.trim();
    if (!r || !clean) return;
    const meta = { ...r.meta, name: clean };
    await (await openShardStore()).putArtifact(meta.shardHash, 'run', id, encodeRun(meta, r.run));
    this.runs = this.runs.map((x) => (x.meta.id === id ? { ...x, meta } : x));
  }

  async deleteRun(id: string) {
    const r = this.runs.find((x) => x.meta.id === id);
    if (!r) return;
    await (await openShardStore()).deleteArtifact(r.meta.shardHash, 'run', id);
    this.runs = this.runs.filter((x) => x.meta.id !== id);
    if (this.currentRunId === id) this.currentRunId = this.runs[0]?.meta.id ?? null;
  }

  /**
   * Imports a TREC run file produced elsewhere (pyserini, MTEB, a paper's release) for the open
   * shard and the selected task. Lines of other queries are ignored; unknown document ids are kept
   * (they count as non-relevant, as in trec_eval) and reported.
   */
  async importRunFile(file: File, taskId = this.taskId) {
    const s = this.shard;
    if (!s) return;
    this.message = null;
    try {
      const all = parseRun(await file.text(), file.name);
      const taskQueries = new Set(s.queries.filter((q) => q.task === taskId).map((q) => q.id));
      const run: Run = new Map();
      let unknownDocs = 0;
      let tag = '';
      for (const [qid, list] of all) {
        if (!taskQueries.has(qid)) continue;
        run.set(qid, list);
        for (const d of list) if (!s.docById.has(d.docId)) unknownDocs++;
      }
      if (run.size === 0) {
        this.message = `${file.name}: none of its queries belong to task ${taskId}.`;
        return;
      }
      const firstLine = (await file.slice(0, 4096).text())
        .split('\n')
        .find((l) => l.trim() && !l.startsWith('#'));
      tag = firstLine?.trim().split(/\s+/)[5] ?? '';
      const depth = Math.max(...[...run.values()].map((l) => l.length));
      const config: RetrieverConfig = { kind: 'import', fileName: file.name, tag };
      const result = await this.addRun(
        this.#meta({ name: `${file.name} · ${taskId}`, taskId, config, depth, ms: 0 }),
        run,
      );
      this.currentRunId = result.meta.id;
      const skipped = all.size - run.size;
      const notes = [
        skipped ? `${skipped} queries of other tasks ignored` : '',
        unknownDocs ? `${unknownDocs} ranked documents are not in this shard (scored as non-relevant)` : '',
      ].filter(Boolean);
      if (notes.length) this.message = `Imported ${file.name}: ${notes.join('; ')}.`;
      this.phase = 'done';
    } catch (e) {
      this.fail(e, `Importing ${file.name}`);
    }
  }
}

/** A job whose bar follows (query, document) pairs scored once scoring starts (model loading before). */
class PairsJob extends Job {
  #done = $state(0);
  #total = $state(0);

  /** Scoring progress: pairs done of total, `ms` since scoring started. */
  pairs(done: number, total: number, ms: number) {
    this.#done = done;
    this.#total = total;
    const rate = ms > 0 ? (done / ms) * 1000 : 0;
    this.onProgress({
      kind: 'status',
      message:
        `Reranking: ${done.toLocaleString('en')} / ${total.toLocaleString('en')} pairs` +
        (rate > 0 ? ` · ${rate.toFixed(0)} pairs/s` : ''),
    });
  }

  override get fraction(): number | null {
    return this.#total > 0 ? this.#done / this.#total : super.fraction;
  }
}

/** Ranked lists from a worker (parallel id/score arrays) as a Run. */
function listsToRun(lists: { queryId: string; docIds: string[]; scores: ArrayLike<number> }[]): Run {
  return new Map(lists.map((l) => [l.queryId, l.docIds.map((docId, i) => ({ docId, score: l.scores[i] }))]));
}

function newRunId(): string {
  return `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
