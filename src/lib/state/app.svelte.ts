// The page's state, composed of small rune classes, one per concern: the shard library with the one
// (shard, task) every panel derives from; stored runs; retrievers; comparison; the Search view; jobs
// and messages. Components read these and call their methods; they never touch a worker.
import { Messages } from './messages.svelte';
import { Jobs } from './jobs.svelte';
import { Library } from './library.svelte';
import { RunStore } from './runs.svelte';
import { Retrievers } from './retrievers.svelte';
import { Reranker } from './rerank.svelte';
import { CompareState } from './compare.svelte';
import { PairsState } from './pairs.svelte';
import { ApproximationState } from './approximation.svelte';
import { SearchState } from './search.svelte';
import { StorageState } from './storage.svelte';
import { openPermalink } from './links.svelte';
import { readView, ROUTES, type Route, type ViewShard } from './view-url';
import { applyViewSettings, openLinkShard, startUrlSync } from './url-sync.svelte';
import type { SourceDescriptor } from '../clients/shard-client';
import type { ParquetMapping } from '../core/media/parquet/mapping';
import { isolationStatus, type IsolationStatus } from '../platform/page/isolation';
import type { PausedImport } from '../platform/storage/import-resume';
import type { DemoShard } from './library.svelte';
import type { AppPhase } from './phase';

export type { OpenShard } from './library.svelte';
export type { RunResult } from './runs.svelte';

export type { AppPhase } from './phase';

export { ROUTES, type Route } from './view-url';

export class App {
  /** What the page is doing; tests and the headless runner wait on it (`data-phase`). */
  phase = $state<AppPhase>('starting');
  route = $state<Route>('home');
  /** The shard a link named that could not be opened (it stays in the URL; a reload tries again). */
  unopenedLink = $state.raw<ViewShard | null>(null);
  /** A link's own route is kept while its shard opens (the landing page with a shard: `#/`). */
  #keepRoute = false;
  /** The last of Search and Benchmark shown: a shard opened from the Shards view returns to it. */
  #lastView: Route = 'search';
  readonly messages = new Messages();
  readonly jobs = new Jobs(this.messages);
  readonly library = new Library(this.messages, this.jobs);
  readonly runs = new RunStore(this.library, this.messages);
  readonly retrievers = new Retrievers(this);
  readonly reranker = new Reranker(this);
  readonly compare = new CompareState(this);
  readonly pairs = new PairsState(this);
  readonly approximation = new ApproximationState(this);
  readonly search = new SearchState(this);
  readonly storage = new StorageState(this.library, this.messages);

  constructor() {
    // The view changes with the shard, before anything else reacts to it (no window shows the new
    // shard under the old route).
    this.library.onShardChange(
      (s) => {
        this.phase = 'idle';
        if (s && !this.#keepRoute && (this.route === 'home' || this.route === 'shards'))
          this.go(this.route === 'shards' ? this.#lastView : 'search');
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

  /** Imports the open shard that is read from its host on demand (for BM25 and benchmark runs). */
  async importRemote() {
    await this.#imported(this.library.importRemote());
  }

  /** Goes on with a stopped import (a folder or zip picked again: `source`). */
  async resumeImport(p: PausedImport, source?: SourceDescriptor) {
    await this.#imported(this.library.resumeImport(p, source));
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

  /** Shows a view (the landing page too while a shard is open); the URL follows (url-sync.svelte.ts). */
  go(route: Route) {
    this.route = route;
    if (route === 'search' || route === 'benchmark') this.#lastView = route;
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
    await Promise.all([
      lib.refreshCache(),
      lib.loadDemoList(),
      this.storage.watchNetwork(),
      lib.reportStoppedImports(),
    ]);
    this.phase = 'idle';
    const hashRoute = App.routeOf(hash);
    // Runner and permalink URLs (`run=1`, `runs=`) belong to the Benchmark view.
    const wanted: Route | null =
      hashRoute && hashRoute !== 'home'
        ? hashRoute
        : params.has('runs') || params.get('run') === '1'
          ? 'benchmark'
          : null;
    if (wanted) this.go(wanted);
    const num = (k: string) => (params.has(k) ? Number(params.get(k)) : NaN);
    if (Number.isFinite(num('k1'))) r.bm25.k1 = num('k1');
    if (Number.isFinite(num('b'))) r.bm25.b = num('b');
    if (Number.isInteger(num('depth')) && num('depth') > 0) r.depth = num('depth');
    r.simulateWebGpuFailure = params.get('simulate-webgpu-failure') === '1';
    r.simulateParityMismatch = params.get('simulate-parity-mismatch') === '1';
    if (Number.isInteger(num('compact-from')) && num('compact-from') > 0) r.compactFrom = num('compact-from');
    // The view the URL names (the same parameters the page writes back: view-url.ts).
    const u = new URL(location.href);
    u.search = params.toString();
    u.hash = hash;
    const view = readView(
      u.href,
      lib.demoShards.map((d) => d.name),
    );
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

    // A link to the landing page with its shard open says `#/` (a link without a hash: the shard's view).
    this.#keepRoute = hash === '#/' || hash === '#';
    try {
      if (view.shard) await openLinkShard(this, view.shard, view);
    } finally {
      this.#keepRoute = false;
    }
    // A view of a shard that did not open shows the landing page: the URL says so (`#/`).
    if (wanted) this.go(lib.shard || wanted === 'shards' ? wanted : 'home');
    // The task, retrievers and the Search view's query and model (after the shard opened: opening
    // resets them); from here on the URL follows the state.
    applyViewSettings(this, view);
    startUrlSync(this);
    if (!lib.shard) return;
    // A Search link that names a query answers it (the progress line shows a model loading first).
    const answer = this.route === 'search' && !!this.search.text.trim();
    if (!(await r.prepare())) {
      if (answer && lib.remote) await this.search.search();
      return;
    }
    if (params.has('runs')) await openPermalink(this, params);
    // `phase` changed inside the awaits above; TypeScript's narrowing from `= 'idle'` does not know.
    else if (params.get('run') === '1' && (this.phase as AppPhase) === 'ready') await r.run();
    else if (answer) await this.search.search();
    // A reloaded Benchmark with a comparison open: computed again for the ticked runs.
    else if (view.compared && this.route === 'benchmark' && this.compare.picked.length >= 2)
      await this.compare.compare();
  }
}
