// embed.html's state: the app's own (library, search, retrievers…) driven by the embed options
// instead of the app's routes, and the messages to the host page. The host learns of every outcome
// the view shows (preset query, a query typed inside, one it asked for) through the same effect.
import { App } from '../lib/state/app.svelte';
import { registryModel } from '../lib/clients/encoder-client';
import { isolationStatus } from '../lib/platform/page/isolation';
import {
  EMBED_SOURCE,
  isEmbedCommand,
  type EmbedCommand,
  type EmbedEvent,
  type EmbedOptions,
} from './protocol';

export type EmbedStatus = 'loading' | 'ready' | 'error';

/**
 * Where events go: the `origin` option, else the embedding page's origin as the browser reports it
 * (ancestorOrigins, else the referrer). Null when the page is not framed or the origin is unknown:
 * then nothing is posted (never to '*').
 */
export function hostOrigin(opts: EmbedOptions): string | null {
  if (window.parent === window) return null;
  if (opts.origin) return opts.origin;
  const ancestor = (location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins?.[0];
  if (ancestor && ancestor !== 'null') return ancestor;
  try {
    return document.referrer ? new URL(document.referrer).origin : null;
  } catch {
    return null;
  }
}

export class EmbedState {
  readonly app = new App();
  status = $state<EmbedStatus>('loading');
  options = $state.raw<EmbedOptions>() as EmbedOptions;
  /** Problems with the options (named, one sentence each), shown above the bar. */
  problems = $state.raw<string[]>([]);
  readonly host: string | null;
  #lastPosted: unknown = null;

  constructor(options: EmbedOptions, problems: string[]) {
    this.options = options;
    this.problems = problems;
    this.host = hostOrigin(options);
    this.app.search.k = options.k;
  }

  post(event: EmbedEvent) {
    if (!this.host) return;
    window.parent.postMessage({ source: EMBED_SOURCE, ...event }, this.host);
  }

  /** Commands from the embedding page: its origin only, and only from the parent window itself. */
  listen(): () => void {
    const onMessage = (e: MessageEvent) => {
      if (!this.host || e.origin !== this.host || e.source !== window.parent) return;
      if (isEmbedCommand(e.data)) void this.apply(e.data.set);
    };
    window.addEventListener('message', onMessage);
    return () => window.removeEventListener('message', onMessage);
  }

  /** Reports a new outcome or error of the Search view (called from an effect on both). */
  report() {
    const s = this.app.search;
    const outcome = s.outcome;
    if (s.error && s.error !== this.#lastPosted) {
      this.#lastPosted = s.error;
      this.post({ type: 'loupe-error', detail: { message: s.error } });
    } else if (outcome && outcome !== this.#lastPosted) {
      this.#lastPosted = outcome;
      this.post({
        type: 'loupe-results',
        detail: {
          task: outcome.taskId,
          text: outcome.text,
          image: outcome.hadImage,
          retriever: outcome.retriever,
          columns: outcome.columns.map((c) => ({
            label: c.label,
            hits: c.hits.map((h) => ({ docId: h.docId, score: h.score })),
          })),
          ms: outcome.ms,
          randomWeights: outcome.randomWeights,
        },
      });
    }
  }

  #fail(message: string) {
    this.status = 'error';
    this.post({ type: 'loupe-error', detail: { message } });
  }

  /** Opens the shard (from this browser's cache when its URL was imported before), then the preset query. */
  async start() {
    const app = this.app;
    const lib = app.library;
    const o = this.options;
    if (!o.shard) return this.#fail(this.problems.join(' '));
    await Promise.all([lib.refreshCache(), app.storage.watchNetwork()]);
    app.phase = 'idle';
    const url = new URL(o.shard, location.href).href;
    const hit = lib.cached.find((s) => s.sourceLabel === url);
    if (hit) await lib.open(hit.hash);
    else await app.importFrom({ kind: 'url', url });
    if (!lib.shard) {
      const issues = lib.issues?.list.slice(0, 3).map((i) => i.message) ?? [];
      const errors = app.messages.errors.map((m) => m.text);
      return this.#fail(
        `The shard ${o.shard} could not be opened: ${[...issues, ...errors].join('; ') || 'unknown error'}`,
      );
    }
    if (o.task && !lib.tasks.some((t) => t.id === o.task))
      this.problems = [
        ...this.problems,
        `task: the shard has no task ${JSON.stringify(o.task)} (it has ${lib.tasks.map((t) => t.id).join(', ')})`,
      ];
    else if (o.task) lib.selectTask(o.task);
    this.#setModel(o.model);
    if (!(await app.retrievers.prepare())) return this.#fail('the BM25 index could not be built');
    this.status = 'ready';
    this.post({
      type: 'loupe-ready',
      detail: {
        shard: lib.shard.summary.name,
        task: lib.taskId,
        retriever: app.search.retriever,
        threads: isolationStatus().threads,
      },
    });
    if (o.query || (o.image && o.mode !== 'text')) await this.#query();
  }

  #setModel(model: string | undefined) {
    if (!model) return;
    if (model === 'bm25' || registryModel(model)) this.app.search.retriever = model;
    else
      this.problems = [
        ...this.problems,
        `model: ${JSON.stringify(model)} is not bm25 or a model Loupe knows`,
      ];
  }

  /** Changes options (a host command or an attribute of the element) and runs the query they give. */
  async apply(set: EmbedCommand['set']) {
    const o = { ...this.options };
    if (set.query !== undefined) o.query = set.query;
    if (set.image !== undefined) o.image = set.image || undefined;
    if (set.mode !== undefined) o.mode = set.mode;
    // An image given without a mode is searched with the text (a text-only mode would drop it).
    else if (set.image && o.mode === 'text') o.mode = 'image+text';
    if (set.k !== undefined && Number.isInteger(set.k) && set.k >= 1) this.app.search.k = o.k = set.k;
    this.options = o;
    if (set.model !== undefined) this.#setModel(set.model);
    if (set.task !== undefined && this.app.library.tasks.some((t) => t.id === set.task))
      this.app.library.selectTask(set.task);
    if (this.status === 'ready') await this.#query();
  }

  /** The options' query: its text and image as the mode asks, searched as the Search view does. */
  async #query() {
    const o = this.options;
    const s = this.app.search;
    s.text = o.mode === 'image' ? '' : (o.query ?? '');
    s.clearImage();
    if (o.image && o.mode !== 'text') {
      const url = new URL(o.image, location.href);
      try {
        const res = await fetch(url);
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const blob = await res.blob();
        const name = decodeURIComponent(url.pathname.split('/').pop() || 'image');
        await s.setImage(new File([blob], name, { type: blob.type }));
      } catch (e) {
        s.error = `The query image ${o.image} could not be loaded: ${e instanceof Error ? e.message : String(e)}`;
        return;
      }
      if (s.error) return;
    }
    await s.search();
  }
}
