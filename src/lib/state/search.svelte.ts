// The student's Search view: one query (text, an image, or both) against the open shard's corpus,
// ranked by BM25 or an encoder. With both parts and an image-text model, score fusion and feature
// fusion are shown side by side (one column, with a note, when they rank identically).
import type { ScoredDoc } from '../core/types';
import { supportsPart, type ModelSpec } from '../core/retrieval/models';
import { analyze } from '../core/retrieval/analyzer';
import { searchBm25Adhoc } from '../clients/retrieval-client';
import { denseAdhoc } from './dense';
import { QueryPrefetch } from './query-prefetch';
import { MODEL_REGISTRY, loadedEncoderKey, preloadEncoder } from '../clients/encoder-client';
import { describeChunking, isChunked } from '../core/retrieval/chunking';
import type { OpenedDicom } from '../platform/media/dicom-image';
import { modelSpec } from './retrievers.svelte';
import { ReferenceMismatchError, denseLoadOptions, setDtypesOf, shardSetDtypes } from './dense-sets';
import type { RemoteFirstSetName } from '../platform/sources/remote-shard';
import type { IvfRunInfo } from '../core/retrieval/ivf-report';
import type { ReferenceCheck } from '../core/retrieval/reference-check';
import { hubFallback } from './hub-fallback';
import { beginQuery, resultsSet, timeStage } from '../platform/page/query-timing';
import type { Job, Jobs } from './jobs.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { Retrievers } from './retrievers.svelte';
import type { StorageState } from './storage.svelte';

/** What this module needs of the page's state (App composes it and passes itself). */
export interface SearchHost {
  readonly jobs: Jobs;
  readonly library: Library;
  readonly messages: Messages;
  readonly retrievers: Retrievers;
  readonly storage: StorageState;
}

/** Image types the encoder's decoder handles (createImageBitmap in the worker). */
export const QUERY_IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp'];
/** When a running query starts showing "Searching…" (a typical one has its results by then). */
export const SEARCHING_SHOWN_AFTER_MS = 150;
/** Results per column. */
export const SEARCH_K = 20;

export interface ResultColumn {
  label: string;
  hits: ScoredDoc[];
  note?: string;
}

export interface SearchOutcome {
  /** The task whose documents were searched (results of another task are never shown). */
  taskId: string;
  /** What was asked (the query may change while the results are on screen). */
  text: string;
  hadImage: boolean;
  /** Query images (several: a multi-image query). */
  imageCount: number;
  retriever: string;
  columns: ResultColumn[];
  /** Analyzed query terms, for highlighting (BM25 only). */
  terms: Set<string> | null;
  ms: number;
  /** What else the query's time includes (a first query: loading the model, embedding the corpus). */
  setup?: string;
  randomWeights: boolean;
  /** Searched through the shard's packed IVF index: what this query transferred and probed. */
  ivf?: IvfRunInfo;
  /** The check of the shard's reference vectors this query's corpus came from. */
  reference?: ReferenceCheck;
  /** Counts the queries run on this page: tells one query's results from the previous one's. */
  seq: number;
}

/** The typing pause after which the query text is embedded ahead (QueryPrefetch). */
export const TEXT_PREFETCH_PAUSE_MS = 300;

export class SearchState {
  #text = $state('');
  #typing: ReturnType<typeof setTimeout> | undefined;
  /** The query's image and text, embedded ahead by the loaded model (latency hidden). */
  readonly prefetch = new QueryPrefetch();

  /** The query text; a pause in typing embeds it ahead. */
  get text(): string {
    return this.#text;
  }

  set text(v: string) {
    this.#text = v;
    clearTimeout(this.#typing);
    this.#typing = setTimeout(() => void this.#prefetchText(), TEXT_PREFETCH_PAUSE_MS);
  }
  /** Results per column (the embed may ask for fewer). */
  k = $state(SEARCH_K);
  image = $state.raw<Blob | null>(null);
  imageUrl = $state<string | null>(null);
  /** More query images after the first (a multi-image query: frontal and lateral views…). */
  more = $state.raw<{ blob: Blob; url: string; name: string }[]>([]);
  /** `bm25` or a model id; null = the shard's default (see `defaultRetriever`). */
  #retriever = $state<string | null>(null);
  #outcome = $state.raw<SearchOutcome | null>(null);
  #seq = 0;
  /**
   * Shown while a query runs, once it has taken longer than SEARCHING_SHOWN_AFTER_MS: a quick query
   * changes nothing on the page until its results (no flash, no repaint of the page at its start).
   */
  searching = $state(false);
  /** A query is running (the guard against a second submit; not shown). */
  #inFlight = false;
  error = $state<string | null>(null);
  /** The last query stopped by the check of the shard's reference vectors (Run anyway asks it again). */
  refused = $state.raw<ReferenceCheck | null>(null);
  #anyway = false;
  /** The document opened from the results. */
  openDocId = $state<string | null>(null);

  /** The last results, when they belong to the selected task (after a task switch: none). */
  get outcome(): SearchOutcome | null {
    const o = this.#outcome;
    return o && o.taskId === this.app.library.taskId ? o : null;
  }

  constructor(private app: SearchHost) {
    app.library.onShardChange(() => {
      this.prefetch.clear();
      this.#outcome = null;
      this.error = null;
      this.openDocId = null;
      this.#retriever = null;
    });
  }

  /** Image-capable registry models (CLIP, SigLIP) whose files can be had, hub first. */
  get imageModels(): ModelSpec[] {
    return MODEL_REGISTRY.models.filter((m) => supportsPart(m, 'image') && this.app.storage.offered(m));
  }

  /**
   * The shard's default: an image-capable model when its corpus has images, else BM25. Offline, the
   * image model is one that loads without the hub (BM25 when none does).
   */
  get defaultRetriever(): string {
    const s = this.app.library.shard;
    const images = !!s && s.docs.facts.imageDocs > 0;
    if (!images) return 'bm25';
    return this.app.storage.usable(this.imageModels[0])?.id ?? 'bm25';
  }

  get retriever(): string {
    return this.#retriever ?? this.defaultRetriever;
  }

  /** The retriever the user picked (null while the shard's default is shown). */
  get pickedRetriever(): string | null {
    return this.#retriever;
  }

  /** Picks a retriever ('' goes back to the shard's default). */
  set retriever(v: string) {
    this.#retriever = v || null;
  }

  get spec(): ModelSpec | undefined {
    return this.retriever === 'bm25'
      ? undefined
      : modelSpec(this.retriever, this.app.retrievers.customModels);
  }

  get acceptsImage(): boolean {
    const spec = this.spec;
    return !!spec && supportsPart(spec, 'image');
  }

  /** The DICOM query image's header facts (modality, body part, window…), when the image is DICOM. */
  dicom = $state.raw<OpenedDicom['image']['info'] | null>(null);
  dicomWindow = $state.raw<OpenedDicom['image']['window'] | null>(null);

  /**
   * Sets the query image (JPEG, PNG, WebP, or DICOM, which is decoded with its window to the PNG the
   * encoder then reads); a model that cannot read images is swapped for an image-capable one.
   */
  async setImage(f: File | null | undefined) {
    this.error = null;
    if (!f) return;
    const ready = await this.#readImage(f);
    if (!ready) return;
    const { image, dicom } = ready;
    for (const m of this.more) URL.revokeObjectURL(m.url);
    this.more = [];
    if (this.imageUrl) URL.revokeObjectURL(this.imageUrl);
    this.image = image;
    this.imageUrl = URL.createObjectURL(image);
    this.dicom = dicom?.image.info ?? null;
    this.dicomWindow = dicom?.image.window ?? null;
    const imageModel = this.app.storage.usable(this.imageModels[0]);
    if (!this.acceptsImage && imageModel) {
      const from = this.retriever === 'bm25' ? 'BM25' : (this.spec?.label ?? this.retriever);
      this.retriever = imageModel.id;
      // A warning, not information: the query that follows clears information, and a page that
      // embeds Loupe with model="bm25" must still see why another model answers (and loads first).
      this.app.messages.warn(
        `${from} cannot read images: switched to ${imageModel.label ?? imageModel.id}, which loads before the first image query.`,
      );
    }
    void this.#prefetchImage();
  }

  /**
   * The load options a query passes for `spec` (the same, so the same encoder answers): at dtype
   * auto, with the dtypes the open shard has embeddings of it for.
   */
  #loadOptions(spec: ModelSpec) {
    const r = this.app.retrievers;
    return denseLoadOptions(r, r.dtype === 'auto' ? shardSetDtypes(this.app.library.sets, spec) : []);
  }

  /** The model loading ahead of the first query (see `preload`), until its load settles. */
  preloading = $state<string | null>(null);

  /**
   * Starts loading the query encoder of `modelId` (a registry or custom model; BM25 and unknown ids:
   * nothing) with the options a query passes, so that a query finds it loaded: a shard opening by URL
   * waits on the network, and so does the model's download (issue 19).
   */
  preload(modelId: string, sets: readonly RemoteFirstSetName[] = []): void {
    const spec = modelSpec(modelId, this.app.retrievers.customModels);
    if (!spec || !this.app.storage.offered(spec)) return;
    this.preloading = spec.id;
    const t0 = performance.now();
    void preloadEncoder(spec, denseLoadOptions(this.app.retrievers, setDtypesOf(sets, spec)))
      .catch(() => undefined)
      .finally(() => {
        performance.measure('loupe:preload:model', { start: t0, end: performance.now() });
        if (this.preloading === spec.id) this.preloading = null;
      });
  }

  /** The loaded encoder's key when the chosen model is loaded and nothing else runs, else null. */
  async #readyEncoder(): Promise<string | null> {
    const spec = this.spec;
    if (!spec || this.#inFlight || this.app.jobs.current) return null;
    return loadedEncoderKey(spec, this.#loadOptions(spec));
  }

  /** Embeds the query image ahead, when the chosen model reads images and is loaded. */
  async #prefetchImage() {
    const image = this.image;
    if (!image || !this.acceptsImage) return;
    const key = await this.#readyEncoder();
    if (key && this.image === image) this.prefetch.image(image, key);
  }

  /** Embeds the query text ahead (not for chunked long texts, which are embedded window by window). */
  async #prefetchText() {
    const text = this.#text.trim();
    if (!text || isChunked(this.app.retrievers.chunking)) return;
    const key = await this.#readyEncoder();
    if (key && this.#text.trim() === text) this.prefetch.text(text, key);
  }

  /**
   * Several images (dropped or picked together, or added to the one there): a multi-image query. The
   * first becomes the query image when there is none; the others follow it in order.
   */
  async addImages(files: File[]) {
    if (!files.length) return;
    let rest = files;
    if (!this.image) {
      await this.setImage(files[0]);
      if (!this.image) return;
      rest = files.slice(1);
    }
    const added: { blob: Blob; url: string; name: string }[] = [];
    for (const f of rest) {
      const ready = await this.#readImage(f);
      if (!ready) break;
      added.push({
        blob: ready.image,
        url: URL.createObjectURL(ready.image),
        name: f.name || 'pasted image',
      });
    }
    this.more = [...this.more, ...added];
  }

  /** Removes one image of a multi-image query (0: the first; the next one takes its place). */
  removeImage(i: number) {
    if (i > 0) {
      const m = this.more[i - 1];
      if (m) URL.revokeObjectURL(m.url);
      this.more = this.more.filter((_, j) => j !== i - 1);
      return;
    }
    const [next, ...rest] = this.more;
    if (this.imageUrl) URL.revokeObjectURL(this.imageUrl);
    this.image = next?.blob ?? null;
    this.imageUrl = next?.url ?? null;
    this.more = rest;
    this.dicom = null;
    this.dicomWindow = null;
  }

  /** A file as the PNG/JPEG the encoder reads (DICOM decoded with its window); null after an error. */
  async #readImage(f: File): Promise<{ image: Blob; dicom: OpenedDicom | null } | null> {
    let image: Blob = f;
    let dicom: OpenedDicom | null = null;
    // The DICOM reader loads with the first query image (most pages never see one).
    const { isDicomBlob, openDicomFile } = await import('../platform/media/dicom-image');
    if (/\.dcm$/i.test(f.name) || f.type === 'application/dicom' || (await isDicomBlob(f))) {
      try {
        dicom = await openDicomFile(f);
        image = dicom.png;
      } catch (e) {
        this.error = `${f.name}: ${e instanceof Error ? e.message : String(e)}`;
        return null;
      }
    } else if (!QUERY_IMAGE_TYPES.includes(f.type)) {
      this.error = `${f.name || 'pasted file'}: ${f.type || 'unknown type'} is not a JPEG, PNG, WebP or DICOM image.`;
      return null;
    }
    return { image, dicom };
  }

  clearImage() {
    if (this.imageUrl) URL.revokeObjectURL(this.imageUrl);
    for (const m of this.more) URL.revokeObjectURL(m.url);
    this.more = [];
    this.image = null;
    this.imageUrl = null;
    this.dicom = null;
    this.dicomWindow = null;
  }

  /** Runs the query; the results replace the previous ones. */
  /** The refused query again without the check: its results are marked unchecked. */
  async searchAnyway() {
    this.#anyway = true;
    try {
      await this.search();
    } finally {
      this.#anyway = false;
    }
  }

  async search() {
    const lib = this.app.library;
    const text = this.text.trim();
    const image = this.acceptsImage ? this.image : null;
    const moreImages = image ? this.more.map((m) => m.blob) : [];
    const r0 = this.app.retrievers;
    const multiImage = r0.hasMultiImage
      ? r0.multiImage
      : moreImages.length
        ? r0.multiImageMode === 'max'
          ? 'max'
          : 'mean'
        : undefined;
    if ((!text && !image) || !lib.shard || !lib.task) return;
    if (this.#inFlight) return;
    const { shard, taskId } = lib;
    this.#inFlight = true;
    // Search pressed before the typing pause ended: the query is embedded now, not once more ahead.
    clearTimeout(this.#typing);
    const shown = setTimeout(() => (this.searching = true), SEARCHING_SHOWN_AFTER_MS);
    this.error = null;
    this.openDocId = null;
    const t0 = performance.now();
    let ranAs: Job | undefined;
    let ivf: IvfRunInfo | undefined;
    let reference: ReferenceCheck | undefined;
    this.refused = null;
    beginQuery();
    try {
      let spec = this.spec;
      let fellBack = false;
      let columns: ResultColumn[];
      if (!spec) {
        if (!(await this.app.retrievers.prepare()))
          throw new Error(
            lib.remote
              ? 'BM25 needs the corpus: this shard is read from its host on demand; import it in the Shards view'
              : 'the BM25 index could not be built',
          );
        columns = [{ label: 'BM25', hits: await timeStage('search', () => searchBm25Adhoc(text, this.k)) }];
      } else {
        const r = this.app.retrievers;
        const query = (model: ModelSpec, job: Job) =>
          denseAdhoc({
            sets: lib.sets!,
            task: lib.task!,
            text,
            image,
            moreImages,
            settings: {
              spec: model,
              device: r.device,
              dtype: r.dtype,
              textWeight: r.textWeight,
              fusion: 'both',
              depth: this.k,
              simulateWebGpuFailure: r.simulateWebGpuFailure,
              simulateParityMismatch: r.simulateParityMismatch,
              // Long texts as the Benchmark's dense options say (a long pasted case is chunked too).
              ...(isChunked(r.chunking) ? { chunking: $state.snapshot(r.chunking) } : {}),
              // Several images (the query's or the documents'): as the dense options say; a
              // multi-image query on a shard of single images: the mean of its images.
              ...(multiImage ? { multiImage, multiImageDocs: lib.shard!.docs.facts.multiImageDocs > 0 } : {}),
            },
            k: this.k,
            job: { signal: job.signal, onProgress: job.onProgress },
            onEncoder: (e) => {
              // The same model again (every query): no new object, nothing re-derived.
              if (JSON.stringify(e) !== JSON.stringify(r.encoder)) r.encoder = e;
            },
            onWarning: (text) => this.app.messages.warn(text),
            prefetch: this.prefetch,
            onIvf: (info) => (ivf = info),
            docs: lib.shard!.docs,
            ...(this.#anyway ? { reference: 'skip' as const } : {}),
            onReference: (check) => (reference = check),
          });
        const res = await this.app.jobs.run(
          `Searching with ${spec.label ?? spec.id}`,
          `Searching with ${spec.label ?? spec.id}`,
          async (job) => {
            ranAs = job;
            try {
              return await query(spec!, job);
            } catch (e) {
              if (e instanceof ReferenceMismatchError) this.refused = e.check;
              // The hub did not answer: once, the same query with a model that loads without it.
              const alt = await hubFallback(this.app.storage, e, spec!);
              if (!alt) throw e;
              if (this.#retriever !== null) this.#retriever = alt.id;
              spec = alt;
              fellBack = true;
              return await query(alt, job);
            }
          },
          // A query takes tens of milliseconds: its bar appears only if it takes long (loading a
          // model, embedding the corpus), so quick queries do not shift the page.
          { revealAfterMs: 400 },
        );
        if (!res) return;
        const chunks = isChunked(r.chunking) ? ` · ${describeChunking(r.chunking)}` : '';
        const used = spec!;
        columns = await timeStage('fuse', () => fusionColumns(res, `${used.label ?? used.id}${chunks}`));
      }
      // The shard or task changed while this query ran: its results belong to neither.
      if (lib.shard !== shard || lib.taskId !== taskId) return;
      resultsSet();
      this.app.storage.succeeded({ fellBack });
      this.#outcome = {
        taskId,
        text,
        hadImage: !!image,
        imageCount: image ? 1 + moreImages.length : 0,
        retriever: spec ? (spec.label ?? spec.id) : 'BM25',
        columns,
        terms: spec ? null : new Set(analyze(text)),
        ms: performance.now() - t0,
        ...(ranAs ? { setup: setupOf(ranAs) } : {}),
        randomWeights: !!spec?.id.startsWith('loupe-test/'),
        ...(ivf ? { ivf } : {}),
        ...(reference ? { reference } : {}),
        seq: ++this.#seq,
      };
    } catch (e) {
      this.error = `Search failed: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      clearTimeout(shown);
      this.#inFlight = false;
      this.searching = false;
    }
  }
}

/**
 * What a query's time included besides the query (undefined: nothing, a warm query): said from what
 * the job counted, so a corpus read back from this browser's store is not called embedded.
 */
function setupOf(job: Job): string | undefined {
  const parts = [
    job.phases.has('download') || job.phases.has('load') || job.phases.has('compile')
      ? 'loading the model'
      : '',
    job.corpus.computed > 0 ? 'embedding the corpus' : '',
    job.corpus.computed === 0 && job.corpus.reused > 0
      ? 'reading the corpus embeddings stored in this browser'
      : '',
    job.phases.has('precomputed') ? "reading the shard's precomputed embeddings" : '',
  ].filter(Boolean);
  return parts.length ? parts.join(' and ') : undefined;
}

/** Result columns of a dense search: one per fusion, or one when both fusions rank identically. */
function fusionColumns(
  res: { fusion?: { mode: 'score' | 'feature'; textWeight?: number }; hits: ScoredDoc[] }[],
  model: string,
): ResultColumn[] {
  if (res.length === 1) return [{ label: model, hits: res[0].hits }];
  const score = res.find((r) => r.fusion?.mode === 'score');
  const feature = res.find((r) => r.fusion?.mode === 'feature');
  if (score && feature && score.hits.every((h, i) => feature.hits[i]?.docId === h.docId))
    return [
      {
        label: `${model} · image + text`,
        hits: feature.hits,
        note:
          `Score fusion (text weight ${score.fusion!.textWeight}) and feature fusion rank these results ` +
          'identically, so they are shown once (scores: feature fusion).',
      },
    ];
  return res.map((r) => ({
    label:
      r.fusion?.mode === 'score'
        ? `Score fusion (text weight ${r.fusion.textWeight})`
        : r.fusion?.mode === 'feature'
          ? 'Feature fusion'
          : model,
    hits: r.hits,
  }));
}
