// The researcher's retrievers: their settings, and running them over every query of a task into a
// stored run (BM25 in the retrieval worker; dense and CLIP models in the encoder worker; cross-encoder
// reranking is rerank.svelte.ts). A configuration that was already run for the task is found, not run and stored again.
import type { Bm25Params } from '../core/retrieval/bm25';
import type { Run, TaskInfo } from '../core/types';
import { describeVectorIndex, type RetrieverConfig } from '../core/retrieval/runs';
import { supportsPart, type Dtype, type ModelSpec } from '../core/retrieval/models';
import { specMatches, type RunSpec } from '../core/eval/permalink';
import type { Device } from '../platform/gpu/backend';
import { bm25ReloadNote, bm25StoppedNote, prepareBm25, runBm25Task } from '../clients/retrieval-client';
import { MODEL_REGISTRY, registryModel, type LoadedEncoder } from '../clients/encoder-client';
import { INDEX_DEFAULTS } from '../clients/index-client';
import {
  DEFAULT_CHUNK_OVERLAP,
  describeChunking,
  isChunked,
  type Chunking,
} from '../core/retrieval/chunking';
import { describeMultiImage, hasMultiImageItems, type MultiImage } from '../core/retrieval/multi-image';
import { denseTask, type DenseSettings } from './dense';
import { ReferenceMismatchError } from './dense-sets';
import type { ReferenceCheck } from '../core/retrieval/reference-check';
import { densePlan } from '../core/retrieval/dense-plan';
import { ivfBytes } from '../core/retrieval/ivf-report';
import { hubFallback } from './hub-fallback';
import type { Jobs } from './jobs.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { RunStore } from './runs.svelte';
import type { StorageState } from './storage.svelte';
import type { AppPhase } from './phase';
import type { RunResult } from './runs.svelte';

/** What this module needs of the page's state (App composes it and passes itself). */
export interface RetrieversHost {
  phase: AppPhase;
  failedPhase(): AppPhase;
  readonly jobs: Jobs;
  readonly library: Library;
  readonly messages: Messages;
  readonly runs: RunStore;
  readonly storage: StorageState;
}

/** Default BM25 parameters: Pyserini/Anserini's BEIR baselines (Lucene BM25, k1=0.9, b=0.4). */
export const DEFAULT_BM25: Bm25Params = { k1: 0.9, b: 0.4, lossyLengths: true };
/** Default run depth (documents kept per query); trec_eval measures up to @100 need 100. */
export const DEFAULT_DEPTH = 100;

export class Retrievers {
  /** Which retriever the run button uses. */
  kind = $state<'bm25' | 'dense'>('bm25');
  bm25 = $state<Bm25Params>({ ...DEFAULT_BM25 });
  depth = $state(DEFAULT_DEPTH);
  /** Key of the BM25 index ready in the worker (shard hash + params), null when none. */
  preparedKey = $state<string | null>(null);
  indexedDocs = $state<number | null>(null);
  readyMs = $state<number | null>(null);
  /** Dense settings: model (registry id or a custom entry), backend, dtype, query fusion. */
  /** The model the user picked (a link, the picker); null: the default for the task (`denseModelId`). */
  #denseModelId = $state<string | null>(null);
  device = $state<'auto' | Device>('auto');
  dtype = $state<'auto' | Dtype>('auto');
  textWeight = $state(0.5);
  fusionMode = $state<'both' | 'score' | 'feature'>('both');
  /** Exact dense search, or HNSW with these parameters (the exact run is kept too, as ground truth). */
  denseSearch = $state<'exact' | 'hnsw'>('exact');
  ann = $state<{ M: number; efConstruction: number; efSearch: number }>({
    M: INDEX_DEFAULTS.M,
    efConstruction: INDEX_DEFAULTS.efConstruction,
    efSearch: INDEX_DEFAULTS.efSearch,
  });
  /** Texts longer than the model's window: truncated (first), or every window averaged (mean) or max-scored. */
  chunking = $state<Chunking>({ aggregate: 'first', overlap: DEFAULT_CHUNK_OVERLAP });
  /** Multi-image items: every image by mean or max; null = the shard's default (mean when it has such items). */
  #multiImage = $state<MultiImage | 'first' | null>(null);
  customModels = $state.raw<ModelSpec[]>([]);
  /** Debug switch from the URL (`simulate-webgpu-failure=1`): WebGPU loads fail, to show the fallback. */
  simulateWebGpuFailure = false;
  /** URL `compact-from=N`: exact runs over N or more documents take the compact store (clients/index-client.ts, its compact store section). */
  compactFrom: number | undefined = undefined;
  /** A packed IVF index: lists probed, or skipped for exact search (the approximation table's runs). */
  packed: { nprobe?: number; skip?: boolean; cold?: boolean } | undefined = undefined;
  /** Debug switch from the URL (`simulate-parity-mismatch=1`): the WebGPU parity check fails, to show its fallback. */
  simulateParityMismatch = false;
  /** The encoder in use: model, device, dtype, threads and why (shown in the UI). */
  encoder = $state.raw<LoadedEncoder | null>(null);
  /** The last dense run stopped by the check of the shard's reference vectors (Run anyway offers it again). */
  refused = $state.raw<{ check: ReferenceCheck; taskId: string } | null>(null);
  #anyway = false;

  constructor(private app: RetrieversHost) {
    app.library.onShardChange(() => {
      this.preparedKey = null;
      this.indexedDocs = null;
    });
  }

  get bm25Key(): string | null {
    const s = this.app.library.shard;
    return s ? `${s.summary.hash}|${this.bm25.k1}|${this.bm25.b}|${this.bm25.lossyLengths}` : null;
  }

  /**
   * The dense model: the one picked, else the registry's first model of the kind the selected task
   * needs (image–text when its queries or documents are images), or, when that cannot load now (no
   * hub, files not served), one of the same kind that can.
   */
  get denseModelId(): string {
    return this.#denseModelId ?? this.defaultDenseModel(this.app.library.task)?.id ?? '';
  }

  /** Picks a model ('' goes back to the default). */
  set denseModelId(id: string) {
    this.#denseModelId = id || null;
  }

  /** The model picked by the user (null while the default is shown). */
  get pickedDenseModel(): string | null {
    return this.#denseModelId;
  }

  /** The default dense model for a task (see `denseModelId`). */
  defaultDenseModel(task: TaskInfo | null): ModelSpec | null {
    const images = !!task && (task.queryModality !== 'text' || task.corpusModality !== 'text');
    const models = MODEL_REGISTRY.models;
    const preferred = images ? models.find((m) => supportsPart(m, 'image')) : models[0];
    return this.app.storage.usable(preferred);
  }

  /** The dense model picked (registry or custom), if any. */
  get denseSpec(): ModelSpec | undefined {
    return modelSpec(this.denseModelId, this.customModels);
  }

  /** Why the selected retriever cannot run a task (null when it can). */
  blocker(task: TaskInfo | null = this.app.library.task): string | null {
    if (!task) return 'open a shard and pick a task.';
    // A shard read from its host on demand (not imported): runs are stored with the cached shard.
    if (this.app.library.remote)
      return 'benchmark runs need the shard imported (its documents are read from the host on demand): Import in the Shards view.';
    if (this.kind === 'bm25')
      return task.queryModality === 'image'
        ? `BM25 reads query text, and the queries of ${task.id} are images only.`
        : null;
    const spec = this.denseSpec;
    if (!spec) return 'pick a model.';
    const plan = densePlan(spec, task);
    return plan.canRun ? null : `${spec.label ?? spec.id} ${plan.notes.join('; ')}.`;
  }

  /** Makes the BM25 index of the open shard ready (cached artifact or a fresh build). */
  prepare(): Promise<boolean> {
    const key = this.bm25Key;
    if (!key) return Promise.resolve(false);
    // A shard read from its host, not imported, has no corpus here to index (the Shards view offers it).
    if (this.app.library.remote) {
      if (this.app.phase === 'idle') this.app.phase = 'ready';
      return Promise.resolve(false);
    }
    if (this.preparedKey === key) {
      if (this.app.phase === 'idle') this.app.phase = 'ready';
      return Promise.resolve(true);
    }
    // One build per key at a time: the Search view and a run can both ask for it.
    if (this.#preparing?.key !== key) {
      const p = this.#prepare(key).finally(() => {
        if (this.#preparing?.promise === p) this.#preparing = null;
      });
      this.#preparing = { key, promise: p };
    }
    return this.#preparing!.promise;
  }

  #preparing: { key: string; promise: Promise<boolean> } | null = null;
  /** The retrieval worker was stopped by a dense run (freeBm25): the next prepare notes what it cost… */
  #bm25Stopped = false;
  /** …said with the next BM25 run. */
  #bm25Note: string | null = null;

  async #prepare(key: string): Promise<boolean> {
    const s = this.app.library.shard;
    if (!s) return false;
    this.app.phase = 'preparing';
    const ok = await this.app.jobs.run('Preparing BM25 index', 'Building the BM25 index', async (job) => {
      const res = await prepareBm25(s.summary.hash, $state.snapshot(this.bm25), {
        signal: job.signal,
        onProgress: job.onProgress,
      });
      this.preparedKey = key;
      this.indexedDocs = res.indexedDocs;
      if (this.#bm25Stopped) {
        this.#bm25Stopped = false;
        this.#bm25Note = bm25StoppedNote(res);
      }
      this.readyMs = performance.now();
      performance.mark('loupe:ready');
      return true;
    });
    if (!ok) this.preparedKey = null;
    if (this.app.library.shard === s) this.app.phase = ok ? 'ready' : this.app.failedPhase();
    return ok === true;
  }

  /** Runs the selected retriever on a task (default: the selected one). */
  run(taskId = this.app.library.taskId) {
    return this.kind === 'dense' ? this.runDense(taskId) : this.runBm25(taskId);
  }

  /**
   * Runs the selected retriever on every task it can serve, one after another (each task is shown
   * while it runs); then the view is back on the user's task, and one line says which tasks ran and
   * which were skipped, with the reason.
   */
  async runAll() {
    const lib = this.app.library;
    const home = lib.taskId;
    // One model for every task (a default would follow each task's kind).
    if (this.kind === 'dense' && this.denseModelId) this.denseModelId = this.denseModelId;
    const ran: string[] = [];
    const skipped: string[] = [];
    let stopped: string | null = null;
    for (const t of lib.tasks) {
      const why = this.blocker(t);
      if (why) {
        skipped.push(`${t.id} (${why.replace(/\.$/, '')})`);
        continue;
      }
      lib.selectTask(t.id);
      await this.run(t.id);
      if (this.app.phase !== 'done') {
        stopped = t.id;
        break;
      }
      ran.push(t.id);
    }
    if (lib.taskId !== home) {
      const phase = this.app.phase;
      // Back on the user's task; a failed run's error stays on screen.
      const errors = this.app.messages.list.filter((m) => m.kind === 'error');
      lib.selectTask(home);
      for (const m of errors) if (!this.app.messages.list.includes(m)) this.app.messages.post(m.kind, m.text);
      this.app.phase = phase;
    }
    // Named after the runs: a model that could not be downloaded was replaced by the first of them.
    const name = this.kind === 'bm25' ? 'BM25' : (this.denseSpec?.label ?? this.denseModelId);
    const list = (xs: string[]) => (xs.length ? xs.join(', ') : 'none');
    this.app.messages.post(
      stopped ? 'warning' : 'info',
      `Run all tasks with ${name}: ran ${list(ran)}` +
        (stopped ? `; stopped at ${stopped} (it did not finish)` : '') +
        `; skipped ${list(skipped)}.`,
    );
  }

  /** The stored run of this configuration, shown instead of running it again. */
  #reuse(found: RunResult[], label: string): boolean {
    if (!found.length) return false;
    for (const r of found.slice().reverse()) this.app.runs.select(r.meta.id);
    this.app.messages.info(
      `${label} was already run on ${found[0].meta.taskId} with these settings: showing the stored run` +
        `${found.length > 1 ? 's' : ''} (${found.map((r) => r.meta.name).join('; ')}).`,
    );
    this.app.phase = 'done';
    return true;
  }

  /** Runs BM25 over every query of a task and scores the run. */
  async runBm25(taskId = this.app.library.taskId) {
    const s = this.app.library.shard;
    if (!s) return;
    const params = $state.snapshot(this.bm25);
    const config: RetrieverConfig = { kind: 'bm25', ...params };
    const same = this.app.runs.findSame(config, taskId, this.depth);
    if (same && this.#reuse([same], 'BM25')) return;
    if (!(await this.prepare())) return;
    this.app.phase = 'running';
    const t0 = performance.now();
    const ok = await this.app.jobs.run(
      `Running BM25 on ${taskId}`,
      'Running BM25',
      async (job) => {
        const lists = await runBm25Task(taskId, this.depth, {
          signal: job.signal,
          onProgress: job.onProgress,
        });
        // Released during a dense run and read back first: said with the run.
        const reloaded = (await bm25ReloadNote()) ?? this.#bm25Note;
        this.#bm25Note = null;
        if (reloaded) this.app.messages.info(reloaded);
        await this.app.runs.add(
          this.app.runs.meta({
            name: `BM25 k1=${params.k1} b=${params.b}`,
            taskId,
            config,
            depth: this.depth,
            ms: performance.now() - t0,
          }),
          listsToRun(lists),
        );
        performance.mark('loupe:done');
        return true;
      },
      { cancelled: 'Run cancelled.' },
    );
    // A cancel terminated the worker: its index must be prepared again.
    if (!ok) this.preparedKey = null;
    this.app.phase = ok ? 'done' : this.app.failedPhase();
  }

  /** Whether the open shard has documents or queries with several images. */
  get hasMultiImage(): boolean {
    const s = this.app.library.shard;
    return !!s && (s.docs.facts.multiImageDocs > 0 || hasMultiImageItems(s.queries));
  }

  /** How multi-image items are scored: `first` (their first image only), `mean` or `max`. */
  get multiImageMode(): MultiImage | 'first' {
    return this.#multiImage ?? (this.hasMultiImage ? 'mean' : 'first');
  }

  set multiImageMode(v: MultiImage | 'first') {
    this.#multiImage = v;
  }

  /** The multi-image setting a dense run uses (none on shards without multi-image items). */
  get multiImage(): MultiImage | undefined {
    const m = this.multiImageMode;
    return this.hasMultiImage && m !== 'first' ? m : undefined;
  }

  /** The permalink spec of the current dense settings (to find a stored run of them). */
  get denseRunSpec(): RunSpec {
    return {
      kind: 'dense',
      model: this.denseModelId,
      dtype: this.dtype,
      device: this.device,
      fusion: this.fusionMode,
      alpha: this.textWeight,
      ...(isChunked(this.chunking)
        ? { chunks: this.chunking.aggregate, overlap: this.chunking.overlap }
        : {}),
      ...(this.multiImage ? { images: this.multiImage } : {}),
    };
  }

  /**
   * Dense run of a task with the selected model: corpus embeddings from cache (or computed and
   * cached), queries embedded, exact cosine ranking; for image + text queries one run per fusion
   * (one when both fusions rank identically), and with HNSW an approximate run beside the exact one.
   * `reuse` false runs it even when an exact run of these settings is stored (the compact store's scan
   * of the same settings, for the approximation table).
   */
  async runDense(taskId = this.app.library.taskId, fellBack = false, reuse = true): Promise<void> {
    const s = this.app.library.shard;
    const task = s?.summary.manifest.tasks.find((t) => t.id === taskId);
    const spec = this.denseSpec;
    if (!s || !task || !spec) return;
    this.refused = null;
    if (this.denseSearch === 'exact' && reuse && !this.#anyway) {
      const spec0 = this.denseRunSpec;
      const found = this.app.runs.all.filter(
        (r) => r.meta.taskId === taskId && r.meta.depth === this.depth && specMatches(spec0, r.meta.config),
      );
      const twoParts = task.queryModality === 'image+text' && densePlan(spec, task).queryParts.length === 2;
      const complete =
        !twoParts ||
        this.fusionMode !== 'both' ||
        found.length >= 2 ||
        found.some((r) => r.meta.config.kind === 'dense' && r.meta.config.fusion?.sameAsScore);
      if (complete && this.#reuse(found, spec.label ?? spec.id)) return;
    }
    this.app.phase = 'running';
    const t0 = performance.now();
    let retry = false;
    const ok = await this.app.jobs.run(
      `Dense retrieval with ${spec.label ?? spec.id}`,
      `Dense retrieval with ${spec.label ?? spec.id}`,
      async (job) => {
        const docImageRow = new Map(s.docs.facts.queryImageDocs.map(([path, id]) => [path, id]));
        const settings: DenseSettings = {
          spec,
          device: this.device,
          dtype: this.dtype,
          textWeight: this.textWeight,
          fusion: this.fusionMode,
          depth: this.depth,
          simulateWebGpuFailure: this.simulateWebGpuFailure,
          simulateParityMismatch: this.simulateParityMismatch,
          ...(this.compactFrom ? { compactFrom: this.compactFrom } : {}),
          ...(this.packed ? { packed: { ...this.packed } } : {}),
          ...(this.denseSearch === 'hnsw' ? { ann: $state.snapshot(this.ann) } : {}),
          ...(isChunked(this.chunking) ? { chunking: $state.snapshot(this.chunking) } : {}),
          ...(this.multiImage
            ? { multiImage: this.multiImage, multiImageDocs: s.docs.facts.multiImageDocs > 0 }
            : {}),
        };
        let out: Awaited<ReturnType<typeof denseTask>>;
        try {
          out = await denseTask({
            sets: this.app.library.sets!,
            task,
            queries: s.queries.filter((q) => q.task === taskId),
            docImageRow,
            docCount: s.summary.counts.docs,
            docs: s.docs,
            ...(this.#anyway ? { reference: 'skip' as const } : {}),
            settings,
            job: { signal: job.signal, onProgress: job.onProgress },
            onEncoder: (e) => (this.encoder = e),
            onWarning: (text) => this.app.messages.warn(text),
            // The BM25 worker went for the compact store: the next BM25 call prepares again (says so once).
            onBm25Stopped: () => ((this.preparedKey = null), (this.#bm25Stopped = true)),
          });
        } catch (e) {
          // Stopped by the check of the shard's reference vectors: the Benchmark view offers Run anyway.
          if (e instanceof ReferenceMismatchError) this.refused = { check: e.check, taskId };
          // The hub did not answer: once, the same run with a model that loads without it.
          const alt = fellBack ? null : await hubFallback(this.app.storage, e, spec);
          if (!alt) throw e;
          if (this.#denseModelId !== null) this.#denseModelId = alt.id;
          retry = true;
          return false;
        }
        this.encoder = out.encoder;
        const outRuns = collapseIdenticalFusions(out.runs);
        let added = 0;
        for (const r of outRuns) {
          const config: RetrieverConfig = {
            kind: 'dense',
            modelId: spec.id,
            revision: spec.revision,
            dtype: out.encoder.dtype,
            device: out.encoder.device,
            ...(out.encoder.deviceReason ? { deviceReason: out.encoder.deviceReason } : {}),
            ...(r.fusion ? { fusion: r.fusion } : {}),
            ...(out.chunking ? { chunking: out.chunking } : {}),
            ...(out.multiImage ? { multiImage: out.multiImage } : {}),
            ...(out.ivf ? { ivf: out.ivf } : {}),
            ...(out.compact ? { index: out.compact } : {}),
            ...(r.latency ? { latency: r.latency } : {}),
            plan: out.plan,
            ...(out.reference ? { reference: out.reference } : {}),
            ...(r.ann
              ? {
                  ann: {
                    kind: 'hnsw' as const,
                    ...r.ann,
                    ...(out.annCurve ? { curve: out.annCurve.points } : {}),
                  },
                }
              : {}),
          };
          const fusionName = !r.fusion
            ? ''
            : r.fusion.sameAsScore
              ? ` · feature fusion (= score fusion ${r.fusion.textWeight})`
              : r.fusion.mode === 'score'
                ? ` · score fusion ${r.fusion.textWeight}`
                : ' · feature fusion';
          const annName = r.ann
            ? ` · HNSW ef=${r.ann.efSearch} (recall@10 vs exact ${r.ann.recallAt10.toFixed(3)})`
            : out.ivf
              ? ` · IVF nprobe=${out.ivf.nprobe}`
              : out.compact
                ? ` · ${describeVectorIndex(out.compact)}`
                : '';
          const { added: isNew } = await this.app.runs.add(
            this.app.runs.meta({
              name: `${spec.label ?? spec.id}${fusionName}${annName}${out.chunking ? ` · ${describeChunking(out.chunking)}` : ''}${out.multiImage ? ` · ${describeMultiImage(out.multiImage)}` : ''}`,
              taskId,
              config,
              depth: this.depth,
              ms: performance.now() - t0,
            }),
            listsToRun(r.lists),
          );
          if (isNew) added++;
        }
        const computed = out.embedded.reduce((a, e) => a + e.computedBatches, 0);
        const reused = out.embedded.reduce((a, e) => a + e.reusedBatches, 0);
        const kept = outRuns.length - added;
        const ch = out.chunks;
        this.app.messages.info(
          (out.ivf
            ? `Corpus vectors: none downloaded (packed index: ${ivfBytes(out.ivf.totalBytes)} transferred).`
            : `Corpus embeddings: ${reused} batches from cache, ${computed} computed.`) +
            (ch
              ? ` Long texts: ${ch.rows} chunks for ${ch.docs} documents (${ch.multiChunkDocs} longer than one window).`
              : '') +
            (kept ? ` ${kept} of the runs already existed with these settings and are shown instead.` : '') +
            (outRuns.length < out.runs.length
              ? ' Score fusion and feature fusion ranked every query identically, so they are stored as one run.'
              : '') +
            (out.notes.length ? ` ${spec.label ?? spec.id} ${out.notes.join('; ')}.` : ''),
        );
        // The model's files and the corpus embeddings are cached now: ask to keep them offline.
        void this.app.storage.cached();
        performance.mark('loupe:done');
        return true;
      },
      { cancelled: 'Dense run cancelled; the corpus batches embedded so far are kept and reused next time.' },
    );
    if (retry) return this.runDense(taskId, true, reuse);
    if (ok) this.app.storage.succeeded({ fellBack });
    this.app.phase = ok ? 'done' : this.app.failedPhase();
  }

  /** The refused run again without the check: its run is recorded as unchecked. */
  async runDenseAnyway(): Promise<void> {
    const taskId = this.refused?.taskId;
    if (!taskId) return;
    this.#anyway = true;
    try {
      await this.runDense(taskId);
    } finally {
      this.#anyway = false;
    }
  }
}

/** The spec of a registry or custom model id. */
export function modelSpec(id: string, custom: readonly ModelSpec[] = []): ModelSpec | undefined {
  return registryModel(id) ?? custom.find((m) => m.id === id);
}

type DenseRuns = Awaited<ReturnType<typeof denseTask>>['runs'];

/**
 * Score fusion and feature fusion can rank every query identically (against one document vector,
 * score fusion at text weight 0.5 is a per-query rescaling of feature fusion): then one run is kept,
 * the feature fusion run, marked as standing for both.
 */
function collapseIdenticalFusions(runs: DenseRuns) {
  type Out = Omit<DenseRuns[number], 'fusion'> & {
    fusion?: { mode: 'score' | 'feature'; textWeight: number; sameAsScore?: boolean };
  };
  const out: Out[] = runs.map((r) => ({
    ...r,
    fusion: r.fusion
      ? {
          mode: r.fusion.mode,
          textWeight: r.fusion.mode === 'score' ? r.fusion.textWeight : 0.5,
        }
      : undefined,
  }));
  for (const ann of [false, true]) {
    const group = out.filter((r) => !!r.ann === ann);
    const score = group.find((r) => r.fusion?.mode === 'score');
    const feature = group.find((r) => r.fusion?.mode === 'feature');
    if (!score || !feature || !sameRankings(score.lists, feature.lists)) continue;
    feature.fusion = { mode: 'feature', textWeight: score.fusion!.textWeight, sameAsScore: true };
    out.splice(out.indexOf(score), 1);
  }
  return out;
}

function sameRankings(a: DenseRuns[number]['lists'], b: DenseRuns[number]['lists']): boolean {
  if (a.length !== b.length) return false;
  const byId = new Map(b.map((l) => [l.queryId, l.docIds]));
  return a.every((l) => {
    const other = byId.get(l.queryId);
    return !!other && other.length === l.docIds.length && other.every((d, i) => d === l.docIds[i]);
  });
}

/** Ranked lists from a worker (parallel id/score arrays) as a Run. */
export function listsToRun(lists: { queryId: string; docIds: string[]; scores: ArrayLike<number> }[]): Run {
  return new Map(lists.map((l) => [l.queryId, l.docIds.map((docId, i) => ({ docId, score: l.scores[i] }))]));
}
