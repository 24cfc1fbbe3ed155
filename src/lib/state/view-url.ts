// The page's URL as a function of what it shows: the route (in the hash) and, in the query string,
// the open shard (a bundled demo's name, a shard URL, or `cached=<hash>` for a folder or .zip shard),
// the task, the Benchmark's retriever and model, and the Search view's model and query text (images
// never go into a URL). `viewHref` writes it, `readView` reads it back; url-sync.svelte.ts derives the
// view from the app's state and restores the state from it.

/** The views, each its own route (`#/search`, `#/benchmark`, `#/shards`); `home` is the landing page. */
export type Route = 'home' | 'search' | 'benchmark' | 'shards';
export const ROUTES: readonly Route[] = ['home', 'search', 'benchmark', 'shards'];

/** Where the shard of a view comes from. */
export type ViewShard =
  { kind: 'demo'; name: string } | { kind: 'url'; url: string } | { kind: 'cached'; hash: string };

export interface View {
  /** `home` (the landing page), `search`, `benchmark`, `shards`. */
  route: string;
  shard: ViewShard | null;
  task: string;
  /**
   * The Benchmark's retriever and its dense model (kept while BM25 is picked: the select shows it).
   * The Search view's URL names neither (`''`: left as they are), only the model Search uses.
   */
  retriever: 'bm25' | 'dense' | '';
  model: string;
  /** The Benchmark's backend and precision, when not left to Loupe (`auto`). */
  device: string;
  dtype: string;
  /** The Search view's retriever (`bm25` or a model id) and query text. */
  searchModel: string;
  q: string;
  /**
   * The Benchmark's ticked runs (ids of runs stored in this browser: `picked=`) and, while their
   * comparison is open, its baseline (`compared=`): a reload reopens both.
   */
  picks: string[];
  compared: string;
}

/**
 * Parameters of the query string that belong to the view (written and read back on every change).
 * Any other parameter is an instruction read once at page start (`run=1`, `runs=`, `k1=`…).
 */
export const VIEW_PARAMS = [
  'shard',
  'cached',
  'task',
  'retriever',
  'model',
  'device',
  'dtype',
  'search-model',
  'q',
  'picked',
  'compared',
] as const;

/**
 * Parameters read once at page start into the state (the Benchmark's settings) or acted on once
 * (`run=1` runs, `runs=` opens a comparison): the URL written afterwards leaves them out.
 */
export const START_PARAMS = [
  'run',
  'runs',
  'fuse',
  'baseline',
  'compare',
  'random-weights',
  'k1',
  'b',
  'depth',
  'fusion',
  'index',
  'M',
  'efConstruction',
  'efSearch',
  'alpha',
  'chunks',
  'images',
  'overlap',
] as const;

/**
 * The page options of a query string: what is neither the view nor a start instruction (import
 * limits such as `maxLineMB=`, `simulate-webgpu-failure=1`). They stay in the URL as they were.
 */
export function pageOptions(search: string): [string, string][] {
  const skip = new Set<string>([...VIEW_PARAMS, ...START_PARAMS]);
  return [...new URLSearchParams(search)].filter(([k]) => !skip.has(k));
}

/**
 * The URL of `view` on the page at `base` (its origin and path are kept; search and hash replaced),
 * after the page `options` (see pageOptions).
 */
export function viewHref(base: string, view: View, options: [string, string][] = []): string {
  const u = new URL(base);
  u.search = '';
  u.hash = view.route === 'home' ? '#/' : `#/${view.route}`;
  const p = u.searchParams;
  for (const [k, v] of options) p.append(k, v);
  const s = view.shard;
  if (s) {
    if (s.kind === 'cached') p.set('cached', s.hash);
    else p.set('shard', s.kind === 'demo' ? s.name : relativeTo(u, s.url));
    if (view.task) p.set('task', view.task);
    if (view.route !== 'search' && view.retriever) p.set('retriever', view.retriever);
    if (view.route !== 'search' && view.model) p.set('model', view.model);
    if (view.device && view.device !== 'auto') p.set('device', view.device);
    if (view.dtype && view.dtype !== 'auto') p.set('dtype', view.dtype);
    if (view.searchModel) p.set('search-model', view.searchModel);
    if (view.q) p.set('q', view.q);
    if (view.route === 'benchmark' && view.picks.length) p.set('picked', view.picks.join(','));
    if (view.route === 'benchmark' && view.compared) p.set('compared', view.compared);
  }
  return u.href;
}

/** A shard URL under the page's folder, relative to it (the link then survives the site moving). */
function relativeTo(page: URL, url: string): string {
  const dir = new URL('./', page).href;
  return url.startsWith(dir) && url.length > dir.length ? url.slice(dir.length) : url;
}

/**
 * What a URL asks to show. `shard=` is a demo's name when `demoNames` has it, or when it is a bare
 * name (no `/` or `.`) on a site with demos (a mistyped demo, not a folder to fetch); else a URL
 * (relative ones resolved against the page, as a link in the page would be).
 */
export function readView(href: string, demoNames: readonly string[] = []): View {
  const u = new URL(href);
  const p = u.searchParams;
  const hashRoute = u.hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  const shardParam = p.get('shard');
  const cached = p.get('cached');
  const shard: ViewShard | null = shardParam
    ? demoNames.includes(shardParam) || (demoNames.length > 0 && /^[\w-]+$/.test(shardParam))
      ? { kind: 'demo', name: shardParam }
      : { kind: 'url', url: new URL(shardParam, u).href }
    : cached
      ? { kind: 'cached', hash: cached }
      : null;
  return {
    route: hashRoute === '' ? 'home' : hashRoute,
    shard,
    task: p.get('task') ?? '',
    retriever: p.get('retriever') === 'dense' ? 'dense' : p.has('retriever') ? 'bm25' : '',
    model: p.get('model') ?? '',
    device: p.get('device') ?? 'auto',
    dtype: p.get('dtype') ?? 'auto',
    searchModel: p.get('search-model') ?? '',
    q: p.get('q') ?? '',
    picks: (p.get('picked') ?? '').split(',').filter(Boolean),
    compared: p.get('compared') ?? '',
  };
}

/** Whether two views are the same place to be (route, shard, task): moving between them is a step in history. */
export function samePlace(a: View, b: View): boolean {
  return a.route === b.route && a.task === b.task && JSON.stringify(a.shard) === JSON.stringify(b.shard);
}
