// The URL is the state: it is derived from what the page shows (view-url.ts says which parts), written
// on every change, and read back on back/forward (and on a hash typed by hand). Nothing holds a copy:
// `currentView` reads the library, retrievers and Search view; `applyView` sets them.
// A change of place (route, shard, task) is a new history entry; a change of model or query text
// replaces the entry (the query text once typing pauses, so every keystroke is not a history write).
import { untrack } from 'svelte';
import {
  pageOptions,
  readView,
  ROUTES,
  samePlace,
  viewHref,
  type Route,
  type View,
  type ViewShard,
} from './view-url';
import type { Dtype } from '../core/retrieval/models';
import type { Device } from '../platform/gpu/backend';
import type { SourceDescriptor } from '../clients/shard-client';
import type { DemoShard, Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { Retrievers } from './retrievers.svelte';
import type { SearchState } from './search.svelte';
import type { CompareState } from './compare.svelte';
import { namesSearchModel, preloadSearchModel, startSearchModelWorker } from './model-preload';

/** What the URL is derived from and restored into (the App). */
export interface UrlHost {
  route: Route;
  go(route: Route): void;
  /** The shard a link named that could not be opened (kept in the URL). */
  unopenedLink: ViewShard | null;
  readonly library: Library;
  readonly retrievers: Retrievers;
  readonly search: SearchState;
  readonly compare: CompareState;
  readonly messages: Messages;
  openDemo(d: DemoShard): Promise<void>;
  importFrom(source: SourceDescriptor): Promise<void>;
}

/** Query text and model changes wait this long before the URL follows (typing). */
const REPLACE_AFTER_MS = 300;

/** Where the open shard comes from, as a URL names it (null when none is open). */
export function viewShardOf(app: UrlHost): ViewShard | null {
  const lib = app.library;
  const s = lib.shard;
  if (!s) return app.unopenedLink;
  const label = s.summary.sourceLabel;
  const demo = lib.demoShards.find((d) => new URL(d.url, document.baseURI).href === label);
  if (demo) return { kind: 'demo', name: demo.name };
  if (/^https?:\/\//.test(label)) return { kind: 'url', url: label };
  return { kind: 'cached', hash: s.summary.hash };
}

/** What the page shows, as the URL says it. */
export function currentView(app: UrlHost): View {
  const lib = app.library;
  const r = app.retrievers;
  const open = !!lib.shard;
  return {
    route: app.route,
    shard: viewShardOf(app),
    task: open ? lib.taskId : '',
    retriever: r.kind,
    // The models the user picked (defaults follow what can load where the link is opened).
    model: r.pickedDenseModel ?? '',
    device: r.device,
    dtype: r.dtype,
    // The Search view names the model it uses (its default too); other views only a picked one.
    searchModel: open
      ? app.route === 'search'
        ? app.search.retriever
        : (app.search.pickedRetriever ?? '')
      : '',
    // A link whose shard could not be opened keeps its query (a reload or a corrected link answers it).
    q: open || app.unopenedLink ? app.search.text.trim() : '',
    picks: open ? app.compare.pickedIds : [],
    compared: open && app.compare.current ? (app.compare.baselineId ?? '') : '',
  };
}

/** The demo shards' names (a `shard=` value that is one of them names that demo). */
function demoNames(app: UrlHost): string[] {
  return app.library.demoShards.map((d) => d.name);
}

/** Whether the open shard is the one `s` names (a demo named by its URL is that demo too). */
function isOpen(app: UrlHost, s: ViewShard | null): boolean {
  const open = app.library.shard;
  if (!open || !s) return !open && JSON.stringify(app.unopenedLink) === JSON.stringify(s);
  if (s.kind === 'cached') return open.summary.hash === s.hash;
  if (s.kind === 'url') return open.summary.sourceLabel === s.url;
  const d = app.library.demoShards.find((x) => x.name === s.name);
  return !!d && open.summary.sourceLabel === new URL(d.url, document.baseURI).href;
}

/** How a view's shard is named in messages. */
export function shardLinkLabel(s: ViewShard): string {
  return s.kind === 'demo' ? `the demo shard ${s.name}` : s.kind === 'url' ? s.url : `cached shard ${s.hash}`;
}

/**
 * Opens the shard a link names (a demo, a URL, a cached shard). When it cannot be opened, one error
 * says which shard and why, on the page the link leads to, and the link's shard stays in the URL (a
 * reload tries again). Resolves whether it is open. `v`: the link's view (a shard by URL opened
 * remote-first starts loading the view's Search model as it opens: model-preload.ts).
 */
export async function openLinkShard(app: UrlHost, s: ViewShard, v?: View): Promise<boolean> {
  const lib = app.library;
  const before = new Set(app.messages.list.map((m) => m.id));
  // A demo or a URL opened remote-first or imported: the Search view's model may load meanwhile,
  // once its shard.json says how (model-preload.ts); a cached shard opens without reading it.
  if (v && namesSearchModel(v) && s.kind !== 'cached') {
    lib.onHead = (_url, head) => preloadSearchModel(app, v, head);
    startSearchModelWorker(v);
  }
  try {
    if (s.kind === 'cached') {
      if (lib.cached.some((c) => c.hash === s.hash)) await lib.open(s.hash);
    } else if (s.kind === 'demo') {
      const d = lib.demoShards.find((x) => x.name === s.name);
      if (d) await app.openDemo(d);
    } else {
      const hit = lib.cached.find((c) => c.sourceLabel === s.url);
      if (hit) await lib.open(hit.hash);
      else await app.importFrom({ kind: 'url', url: s.url });
    }
  } finally {
    lib.onHead = null;
  }
  if (lib.shard && isOpen(app, s)) {
    app.unopenedLink = null;
    return true;
  }
  // Why: the validation problems, else the error the attempt posted, else what is known here.
  const posted = app.messages.list.filter((m) => !before.has(m.id) && m.kind === 'error');
  const issues = lib.issues?.list ?? [];
  let reason: string;
  if (s.kind === 'cached')
    reason =
      'it is not cached in this browser: load the same shard (folder or .zip) first, then open the link again';
  else if (s.kind === 'demo' && !lib.demoShards.some((x) => x.name === s.name)) {
    // The landing page says so, with the demos as links (Landing.svelte).
    app.unopenedLink = s;
    return false;
  } else if (issues.length) {
    const i = issues[0];
    reason =
      `${i.file}${i.line ? ` line ${i.line}` : ''}: ${i.message}` +
      (issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})` : '');
  } else if (posted.length) reason = posted.map((m) => m.text).join(' ');
  else reason = 'it could not be read';
  for (const m of posted) app.messages.dismiss(m.id);
  app.unopenedLink = s;
  app.messages.error(`This link's shard (${shardLinkLabel(s)}) could not be opened: ${reason}`, 'page');
  return false;
}

/** The route a view names (an unknown one: none). */
function routeOf(v: View): Route | null {
  return (ROUTES as readonly string[]).includes(v.route) ? (v.route as Route) : null;
}

/**
 * Sets the state a URL describes (back/forward, a hash typed by hand). With `from` (the URL the page
 * was at), only what differs between the two is set: a query typed since the last write is kept.
 */
export async function applyView(app: UrlHost, v: View, from?: View) {
  const lib = app.library;
  const differs = <K extends keyof View>(k: K) => !from || JSON.stringify(from[k]) !== JSON.stringify(v[k]);
  const newShard = differs('shard') && !isOpen(app, v.shard);
  if (newShard) {
    if (v.shard) await openLinkShard(app, v.shard, v);
    else {
      app.unopenedLink = null;
      if (lib.shard) await lib.close();
    }
  }
  const route = routeOf(v);
  if (route && (newShard || differs('route'))) app.go(route);
  // Opening a shard reset the task and the Search view: all of the view's settings apply.
  applyViewSettings(app, v, newShard ? undefined : from);
}

/** The task, retrievers and Search query of a view (with `from`: those that differ from it). */
export function applyViewSettings(app: UrlHost, v: View, from?: View) {
  const lib = app.library;
  const differs = <K extends keyof View>(k: K) => !from || JSON.stringify(from[k]) !== JSON.stringify(v[k]);
  const r = app.retrievers;
  if (v.task && lib.shard && differs('task')) lib.selectTask(v.task);
  // A Search view's URL names neither the Benchmark's retriever nor its model: they stay as they are.
  if (v.retriever && differs('retriever')) r.kind = v.retriever;
  if ((v.retriever || v.model) && differs('model')) r.denseModelId = v.model;
  if (differs('device') && (v.device === 'webgpu' || v.device === 'wasm' || v.device === 'auto'))
    r.device = v.device as Device;
  if (differs('dtype') && v.dtype) r.dtype = v.dtype as Dtype | 'auto';
  if (lib.shard && differs('searchModel')) app.search.retriever = v.searchModel;
  if ((lib.shard || app.unopenedLink) && differs('q')) app.search.text = v.q;
  if (lib.shard && v.route === 'benchmark' && differs('picks')) app.compare.setPicks(v.picks);
  if (lib.shard && v.compared) app.compare.baselineId = v.compared;
}

/**
 * Starts writing the URL from the state, and reading it back on back/forward. Returns the function
 * that stops both.
 */
export function startUrlSync(app: UrlHost): () => void {
  let restoring = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let latest = '';
  /** The address this page last wrote or followed (what the state is, but for a pending write). */
  let shown = location.href;
  let first = true;
  const options = pageOptions(location.search);

  const write = () => {
    clearTimeout(timer);
    timer = undefined;
    if (restoring || latest === location.href) return;
    const names = demoNames(app);
    const from = readView(location.href, names);
    const to = readView(latest, names);
    // The first write settles the address the page was opened with: no new entry.
    if (first || samePlace(from, to)) history.replaceState(history.state, '', latest);
    else history.pushState(null, '', latest);
    shown = latest;
  };

  const stopEffect = $effect.root(() => {
    $effect(() => {
      latest = viewHref(location.href, currentView(app), options);
      untrack(() => {
        const names = demoNames(app);
        // A new place is written at once; a new query text or model once typing pauses.
        if (!samePlace(readView(location.href, names), readView(latest, names))) write();
        else {
          clearTimeout(timer);
          timer = setTimeout(write, REPLACE_AFTER_MS);
        }
        first = false;
      });
    });
  });

  const onNavigate = async () => {
    if (restoring) return;
    // The address the browser moved to, not one this page wrote: the state follows it.
    if (location.href === shown) return;
    clearTimeout(timer);
    restoring = true;
    const names = demoNames(app);
    try {
      await applyView(app, readView(location.href, names), readView(shown, names));
    } finally {
      restoring = false;
    }
    // The restored state, written back (normalized: same place, so the entry is replaced).
    latest = viewHref(location.href, currentView(app), options);
    if (latest !== location.href) history.replaceState(history.state, '', latest);
    shown = latest;
  };
  window.addEventListener('popstate', onNavigate);
  window.addEventListener('hashchange', onNavigate);
  return () => {
    clearTimeout(timer);
    stopEffect();
    window.removeEventListener('popstate', onNavigate);
    window.removeEventListener('hashchange', onNavigate);
  };
}
