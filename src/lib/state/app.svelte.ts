// The page's state, composed of small rune classes, one per concern: the shard library with the one
// (shard, task) every panel derives from; stored runs; retrievers; comparison; the Search view; jobs
// and messages. Components read these and call their methods; they never touch a worker.
import type { Dtype } from '../core/retrieval/models';
import { Messages } from './messages.svelte';
import { Jobs } from './jobs.svelte';
import { Library } from './library.svelte';
import { RunStore } from './runs.svelte';
import { Retrievers } from './retrievers.svelte';
import { Reranker } from './rerank.svelte';
import { CompareState } from './compare.svelte';
import { SearchState } from './search.svelte';
import { StorageState } from './storage.svelte';
import { openPermalink } from './links.svelte';
import type { SourceDescriptor } from '../clients/shard-client';
import type { ParquetMapping } from '../core/media/parquet/mapping';
import { isolationStatus, type IsolationStatus } from '../platform/isolation';
import type { DemoShard } from './library.svelte';
import type { AppPhase } from './phase';

export type { OpenShard } from './library.svelte';
export type { RunResult } from './runs.svelte';

export type { AppPhase } from './phase';

/** The views, each its own route (`#/search`, `#/benchmark`, `#/shards`); `home` is the landing page. */
export type Route = 'home' | 'search' | 'benchmark' | 'shards';
export const ROUTES: readonly Route[] = ['home', 'search', 'benchmark', 'shards'];

export class App {
  /** What the page is doing; tests and the headless runner wait on it (`data-phase`). */
  phase = $state<AppPhase>('starting');
  route = $state<Route>('home');
  readonly messages = new Messages();
  readonly jobs = new Jobs(this.messages);
  readonly library = new Library(this.messages, this.jobs);
  readonly runs = new RunStore(this.library, this.messages);
  readonly retrievers = new Retrievers(this);
  readonly reranker = new Reranker(this);
  readonly compare = new CompareState(this);
  readonly search = new SearchState(this);
  readonly storage = new StorageState(this.library, this.messages);

  constructor() {
    // The view changes with the shard, before anything else reacts to it (no window shows the new
    // shard under the old route).
    this.library.onShardChange(
      (s) => {
        this.phase = 'idle';
        if (s && (this.route === 'home' || this.route === 'shards')) this.go('search');
        if (!s && this.route !== 'shards') this.go('home');
      },
      { first: true },
    );
    // Last, once runs are loaded: BM25 is the Search view's instant retriever, so its index is made
    // ready (cached after the first time).
    this.library.onShardChange((s) => {
      if (s) void this.retrievers.prepare();
    });
  }

  /** Imports a shard (validated in a worker; nothing cached when invalid) and opens it. */
  async importFrom(source: SourceDescriptor) {
    await this.#imported(this.library.importFrom(source));
  }

  /** Imports the Parquet dataset waiting for its mapping, with the mapping the user confirmed. */
  async confirmParquet(mapping: ParquetMapping) {
    await this.#imported(this.library.confirmParquet(mapping));
  }

  async #imported(importing: Promise<boolean>) {
    this.phase = 'importing';
    const ok = await importing;
    if (ok) {
      // A shard is cached now: ask once for persistent storage, so the browser keeps it offline.
      void this.storage.cached();
      return;
    }
    const lib = this.library;
    const waiting = lib.issues || lib.parquetPending;
    this.phase = waiting ? (lib.shard ? 'ready' : 'idle') : this.failedPhase();
    // The problems, or the Parquet mapping to confirm, are shown where shards are loaded.
    if (waiting) this.go('shards');
  }

  async openDemo(d: DemoShard) {
    this.phase = 'importing';
    await this.library.openDemo(d);
    if (!this.library.shard) this.phase = this.failedPhase();
    else void this.storage.cached();
  }

  get crossOriginIsolated(): boolean {
    return globalThis.crossOriginIsolated === true;
  }

  /** How the page is (or is not) cross-origin isolated, and why: settled before the app starts. */
  get isolation(): IsolationStatus {
    return isolationStatus();
  }

  /** The phase after an action that did not finish: `error` when it posted an error, else `idle`. */
  failedPhase(): AppPhase {
    return this.messages.errors.length ? 'error' : 'idle';
  }

  /** Shows a view; the URL's hash follows (so a permalink restores it). */
  go(route: Route) {
    this.route = route === 'home' && this.library.shard ? 'search' : route;
    const hash = `#/${this.route === 'home' ? '' : this.route}`;
    if (location.hash !== hash) history.replaceState(history.state, '', hash);
  }

  /** The route a hash names (unknown hashes: none). */
  static routeOf(hash: string): Route | null {
    const r = hash.replace(/^#\/?/, '').split(/[/?]/)[0];
    return r === '' ? 'home' : (ROUTES as readonly string[]).includes(r) ? (r as Route) : null;
  }

  /** Page start: demo shard list, cached shards, then whatever the URL asks for. */
  async start(params: URLSearchParams, hash: string) {
    const lib = this.library;
    const r = this.retrievers;
    await Promise.all([lib.refreshCache(), lib.loadDemoList(), this.storage.watchNetwork()]);
    this.phase = 'idle';
    const hashRoute = App.routeOf(hash);
    // Runner and permalink URLs (`run=1`, `runs=`) belong to the Benchmark view.
    const wanted: Route | null =
      hashRoute && hashRoute !== 'home'
        ? hashRoute
        : params.has('runs') || params.get('run') === '1'
          ? 'benchmark'
          : null;
    if (wanted) this.route = wanted;
    const num = (k: string) => (params.has(k) ? Number(params.get(k)) : NaN);
    if (Number.isFinite(num('k1'))) r.bm25.k1 = num('k1');
    if (Number.isFinite(num('b'))) r.bm25.b = num('b');
    if (Number.isInteger(num('depth')) && num('depth') > 0) r.depth = num('depth');
    if (params.get('retriever') === 'dense') r.kind = 'dense';
    r.simulateWebGpuFailure = params.get('simulate-webgpu-failure') === '1';
    const model = params.get('model');
    if (model) r.denseModelId = model;
    else if (!this.storage.online) {
      // Offline: a model that loads without the hub is the default (an explicit one is kept).
      const usable = this.storage.usable(r.denseSpec ?? undefined);
      if (usable) r.denseModelId = usable.id;
    }
    const device = params.get('device');
    if (device === 'webgpu' || device === 'wasm' || device === 'auto') r.device = device;
    const dtype = params.get('dtype');
    if (dtype) r.dtype = dtype as Dtype;
    const fusion = params.get('fusion');
    if (fusion === 'score' || fusion === 'feature' || fusion === 'both') r.fusionMode = fusion;
    if (params.get('index') === 'hnsw') r.denseSearch = 'hnsw';
    for (const k of ['M', 'efConstruction', 'efSearch'] as const) {
      const v = num(k);
      if (Number.isInteger(v) && v > 0) r.ann[k] = v;
    }
    if (num('alpha') >= 0 && num('alpha') <= 1) r.textWeight = num('alpha');
    // Long texts: `chunks=mean|max` (default first: truncation), `overlap=` tokens between windows.
    const chunks = params.get('chunks');
    if (chunks === 'first' || chunks === 'mean' || chunks === 'max') r.chunking.aggregate = chunks;
    const images = params.get('images');
    if (images === 'first' || images === 'mean' || images === 'max') r.multiImageMode = images;
    if (Number.isInteger(num('overlap')) && num('overlap') >= 0) r.chunking.overlap = num('overlap');

    const url = params.get('shard');
    const cachedHash = params.get('cached');
    if (cachedHash && !url) {
      if (!lib.cached.some((c) => c.hash === cachedHash)) {
        this.messages.error(
          'The shard of this link is not cached in this browser: load the same shard (folder or .zip) first, then open the link again.',
          'page',
        );
        return;
      }
      await lib.open(cachedHash);
    } else if (url) {
      const absolute = new URL(url, location.href).href;
      const hit = lib.cached.find((s) => s.sourceLabel === absolute);
      if (hit) await lib.open(hit.hash);
      else await this.importFrom({ kind: 'url', url: absolute });
    }
    if (wanted) this.route = wanted;
    if (!lib.shard) return;
    const task = params.get('task');
    if (task) lib.selectTask(task);
    // The Search view's query and retriever (after the shard opened: opening resets them).
    const q = params.get('q');
    if (q) this.search.text = q;
    const searchModel = params.get('search-model');
    if (searchModel) this.search.retriever = searchModel;
    if (!(await r.prepare())) return;
    if (params.has('runs')) await openPermalink(this, params);
    // `phase` changed inside the awaits above; TypeScript's narrowing from `= 'idle'` does not know.
    else if (params.get('run') === '1' && (this.phase as AppPhase) === 'ready') await r.run();
  }
}
