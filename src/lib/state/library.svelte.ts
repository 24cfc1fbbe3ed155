// The shard library and the one source of truth for what is open: (shard, task). Every panel
// derives what it shows from `shard` and `taskId` here; nothing else holds a copy of either.
import type { Qrels, Query, TaskInfo } from '../core/types';
import type { ShardIssue } from '../core/shard/source';
import { openShardStore, withShardStore, type ShardSummary } from '../platform/storage/shard-store';
import type { ShardHead } from '../platform/sources/remote-shard';
import {
  importShard,
  indexShardDocs,
  inspectIfParquet,
  readRemoteDocs,
  resumeImport,
  type SourceDescriptor,
} from '../clients/shard-client';
import { loadDocIndex, loadShardHead } from '../platform/storage/shard-docs';
import { ShardDocs } from './shard-docs.svelte';
import { forgetRemoteFirst, openRemoteFirst } from './remote-first';
import { discardPaused, listPaused, type PausedImport } from '../platform/storage/import-resume';
import { beginImportNote, stoppedImportMessage, takeStoppedImports } from '../platform/storage/import-note';
import { initialParquetMapping, rememberParquetMapping } from '../platform/storage/parquet-mappings';
import type { ParquetMapping } from '../core/media/parquet/mapping';
import type { ParquetInspection } from '../core/media/parquet/read-parquet';
import { resetRetrieval } from '../clients/retrieval-client';
import { isAbortError } from '../clients/worker-client';
import { readShardSets, type ShardSets } from './dense-sets';
import type { Messages } from './messages.svelte';
import type { Job, Jobs } from './jobs.svelte';

export interface OpenShard {
  summary: ShardSummary;
  /** The corpus, read by id from IndexedDB (never all of it in the page at size), and its facts. */
  docs: ShardDocs;
  queries: Query[];
  qrels: Qrels;
  queryById: Map<string, Query>;
}

/** A bundled demo shard: its folder name and URL (relative to the page). */
export interface DemoShard {
  name: string;
  url: string;
}

/** A shard's name for headings: a URL-named shard (no manifest name) shows its last path segment. */
export function shardLabel(name: string): string {
  const m = /^https?:\/\/.*\/([^/]+)\/?$/.exec(name);
  return m ? decodeURIComponent(m[1]) : name;
}

/** What a source is called in messages: its URL, zip name or folder (first path segment). */
function sourceLabel(source: SourceDescriptor): string {
  if (source.kind === 'url') return source.url;
  if (source.kind === 'zip') return source.file.name;
  if (source.kind === 'files') {
    const first = source.files[0]?.path ?? '';
    if (source.label) return source.label;
    return first.includes('/')
      ? first.split('/')[0]
      : source.files.length === 1
        ? first
        : `${source.files.length} files`;
  }
  return source.handle.name;
}

export class Library {
  demoShards = $state.raw<DemoShard[]>([]);
  cached = $state.raw<ShardSummary[]>([]);
  /** The open shard: big arrays, so not deeply reactive. */
  shard = $state.raw<OpenShard | null>(null);
  /** The open shard's sets of precomputed vectors (dense runs and queries read them here, not from IndexedDB). */
  sets = $state.raw<ShardSets | null>(null);
  /** The selected task of the open shard. */
  taskId = $state('');
  /**
   * The open shard's URL when it is read from its host on demand, not imported (remote-first.ts):
   * dense queries through its packed index work, BM25 and Benchmark runs need `importRemote()`.
   */
  remote = $state.raw<string | null>(null);
  /**
   * Told (with its URL) what a shard loaded by URL says of itself once its shard.json is read (opened
   * remote-first or imported, its stated size, its sets), before its queries and qrels or its corpus
   * are read: a link's Search model may start loading then (model-preload.ts).
   */
  onHead: ((url: string, head: ShardHead) => void) | null = null;
  /** Stopped streamed imports that can resume (offered at start: Resume or Discard). */
  paused = $state.raw<PausedImport[]>([]);
  /** Validation problems of the last import (nothing was cached). */
  issues = $state.raw<{ source: string; list: ShardIssue[] } | null>(null);
  /**
   * A Parquet dataset waiting for its column mapping to be confirmed (the import starts on confirm):
   * the source, what its footers say, and the mapping to show (remembered or detected).
   */
  parquetPending = $state.raw<{
    source: SourceDescriptor;
    label: string;
    inspection: ParquetInspection;
    mapping: ParquetMapping;
    remembered: boolean;
  } | null>(null);
  /** Listeners told when the open shard changes (runs are reloaded, workers reset). */
  #onShard: ((s: OpenShard | null) => Promise<void> | void)[] = [];
  #imageUrls = new Map<string, string>();

  constructor(
    private messages: Messages,
    private jobs: Jobs,
  ) {}

  get task(): TaskInfo | null {
    return this.shard?.summary.manifest.tasks.find((t) => t.id === this.taskId) ?? null;
  }

  get tasks(): TaskInfo[] {
    return this.shard?.summary.manifest.tasks ?? [];
  }

  /** Queries of the selected task. */
  get taskQueries(): Query[] {
    const id = this.taskId;
    return this.shard?.queries.filter((q) => q.task === id) ?? [];
  }

  /** Registers `fn` for shard changes; `first` runs it before the others (they run in order, awaited). */
  onShardChange(fn: (s: OpenShard | null) => Promise<void> | void, opts: { first?: boolean } = {}) {
    if (opts.first) this.#onShard.unshift(fn);
    else this.#onShard.push(fn);
  }

  selectTask(id: string) {
    if (id === this.taskId || !this.tasks.some((t) => t.id === id)) return;
    this.taskId = id;
    this.messages.clear('task');
  }

  async loadDemoList() {
    try {
      const res = await fetch(new URL('shards/index.json', document.baseURI));
      if (res.ok) this.demoShards = (await res.json()).shards ?? [];
    } catch {
      // A static deployment without demo shards: the list stays empty.
    }
  }

  /** At start: says which imports a reload or a closed tab cut off (their records are swept). */
  async reportStoppedImports() {
    const stopped = await takeStoppedImports();
    // Those that kept what they wrote are offered to resume instead (their writer's lock is waited for).
    const paused = await this.#listPaused(stopped.length > 0 ? 5000 : 0);
    const resumable = new Set(paused.map((p) => p.noteId));
    for (const n of stopped) if (!resumable.has(n.id)) this.messages.error(stoppedImportMessage(n), 'page');
    if (stopped.length === 0) return;
    // The cut-off import's worker may still hold its lock for a moment after the reload: wait for it,
    // so its records are gone now rather than at the next start.
    try {
      await withShardStore((store) => store.sweep({ waitMs: 5000 }));
    } catch (e) {
      console.warn('loupe: sweeping a stopped import failed', e);
    }
  }

  async #listPaused(waitMs: number): Promise<PausedImport[]> {
    try {
      this.paused = await withShardStore((store) => listPaused(store, waitMs));
    } catch (e) {
      console.warn('loupe: listing stopped imports failed', e);
    }
    return this.paused;
  }

  /** Goes on with a stopped import: a URL by itself, a folder or zip picked again (`source`). */
  async resumeImport(p: PausedImport, source?: SourceDescriptor): Promise<boolean> {
    this.issues = null;
    const label = p.label;
    const ok = await this.jobs.run(`Resuming ${label}`, `Resuming ${label}`, async (job) => {
      const result = await resumeImport(p.hash, source, { signal: job.signal, onProgress: job.onProgress });
      if (!result.ok) {
        this.issues = { source: label, list: result.issues };
        return false;
      }
      await this.refreshCache();
      await this.open(result.summary.hash, job);
      return true;
    });
    // Resumed, discarded for a source that differs, or left to resume after a network failure.
    await this.#listPaused(0);
    return ok ?? false;
  }

  /** Discards a stopped import: everything it wrote is removed. */
  async discardImport(p: PausedImport) {
    await withShardStore((store) => discardPaused(store, p.hash));
    this.paused = this.paused.filter((x) => x.hash !== p.hash);
  }

  async refreshCache() {
    let store;
    try {
      store = await openShardStore();
    } catch (e) {
      // No IndexedDB (private window, blocked site data): say so once; the page itself still works.
      this.cached = [];
      this.messages.error(e instanceof Error ? e.message : String(e), 'page');
      return;
    }
    this.cached = await store.list();
    await store.close();
  }

  /** Opens a demo shard: from the cache when its URL was imported before, else imported now. */
  async openDemo(d: DemoShard) {
    const absolute = new URL(d.url, document.baseURI).href;
    const hit = this.cached.find((s) => s.sourceLabel === absolute);
    if (hit) await this.open(hit.hash);
    else await this.importFrom({ kind: 'url', url: absolute });
  }

  /**
   * Imports a shard from a source; on success opens it. Invalid shards leave nothing cached. A
   * Parquet dataset is inspected first and waits in `parquetPending` for its mapping (resolves false);
   * `parquet` is the confirmed mapping.
   */
  async importFrom(
    source: SourceDescriptor,
    parquet?: ParquetMapping,
    opts: { whole?: boolean } = {},
  ): Promise<boolean> {
    const label = sourceLabel(source);
    this.issues = null;
    this.parquetPending = null;
    return (
      (await this.jobs.run(`Loading ${label}`, `Loading ${label}`, async (job) => {
        // A packed shard on a static host opens without importing its corpus (`whole`: import it).
        if (source.kind === 'url' && !parquet && !opts.whole) {
          const url = source.url;
          // Said before the shard worker starts (the worker says it again once it reads).
          job.onProgress({ kind: 'status', message: `Opening ${label}: reading shard.json` });
          const told = this.onHead;
          const remote = await openRemoteFirst(
            url,
            job.signal,
            told ? (head) => told(url, head) : undefined,
            job.onProgress,
          );
          if (remote && 'issues' in remote) {
            this.issues = { source: label, list: remote.issues };
            return false;
          }
          if (remote) {
            const docs = new ShardDocs(
              null,
              remote.summary.hash,
              remote.finder,
              remote.facts,
              (e) =>
                this.messages.error(
                  `Reading documents from ${label} failed: ${e instanceof Error ? e.message : String(e)}`,
                  'page',
                ),
              (rows) => readRemoteDocs(url, rows),
            );
            const { summary, queries, qrels } = remote;
            const queryById = new Map(queries.map((q) => [q.id, q]));
            await this.#show({ summary, docs, queries, qrels, queryById }, url);
            return true;
          }
        }
        if (!parquet) {
          const inspected = await inspectIfParquet(source, { signal: job.signal });
          if (inspected && !inspected.ok) {
            this.issues = { source: label, list: inspected.issues };
            return false;
          }
          if (inspected) {
            const { mapping, remembered } = initialParquetMapping(inspected.inspection);
            this.parquetPending = { source, label, inspection: inspected.inspection, mapping, remembered };
            return false;
          }
        }
        // A note for the next start, should the page be reloaded or closed mid-import.
        const note = beginImportNote(label);
        const result = await importShard(source, {
          noteId: note.id,
          signal: job.signal,
          onProgress: (p) => (note.update(p), job.onProgress(p)),
          ...(parquet ? { parquet } : {}),
        }).finally(() => note.end());
        if (!result.ok) {
          this.issues = { source: label, list: result.issues };
          return false;
        }
        await this.refreshCache();
        await this.open(result.summary.hash, job);
        return true;
      })) ?? false
    );
  }

  /** Imports the pending Parquet dataset with the confirmed mapping, remembered for next time. */
  async confirmParquet(mapping: ParquetMapping): Promise<boolean> {
    const pending = this.parquetPending;
    if (!pending) return false;
    rememberParquetMapping(pending.inspection.identity, mapping);
    return this.importFrom(pending.source, mapping);
  }

  /** Imports the open remote-first shard (BM25 and Benchmark runs need its corpus cached). */
  async importRemote(): Promise<boolean> {
    const url = this.remote;
    return url ? this.importFrom({ kind: 'url', url }, undefined, { whole: true }) : false;
  }

  cancelParquet() {
    this.parquetPending = null;
  }

  /**
   * Opens a cached shard: its queries and qrels from IndexedDB, its documents by id when shown (see
   * ShardDocs). The first open builds the shard's document directory in the shard worker, with
   * progress and cancel (`job`: the job it runs in, else its own).
   */
  async open(hash: string, job?: Job) {
    this.issues = null;
    let docs: ShardDocs | null = null;
    try {
      const store = await openShardStore();
      const { summary, queries, qrels } = await loadShardHead(store, hash);
      let index = await loadDocIndex(store, hash, summary.counts.docs);
      if (!index) {
        const images = [...new Set(queries.flatMap((q) => (q.image ? [q.image] : [])))];
        const build = (j: Job) =>
          indexShardDocs(hash, images, { signal: j.signal, onProgress: j.onProgress });
        const what = `Indexing the documents of ${shardLabel(summary.name)}`;
        const built = job
          ? (await build(job), true)
          : await this.jobs.run(what, what, async (j) => (await build(j), true));
        if (!built) return void (await store.close());
        index = await loadDocIndex(store, hash, summary.counts.docs);
        if (!index) throw new Error('its document index could not be stored');
      }
      docs = new ShardDocs(store, hash, index.dir, index.facts, (e) => void this.#docsFailed(hash, e));
      await docs.readWholeIfSmall();
      await this.#show({ summary, docs, queries, qrels, queryById: new Map(queries.map((q) => [q.id, q])) });
    } catch (e) {
      if (docs && this.shard?.docs !== docs) docs.close();
      if (job && isAbortError(e)) throw e;
      this.messages.error(
        `Opening the cached shard failed: ${e instanceof Error ? e.message : String(e)}. ` +
          'It was removed from the cache if it was damaged; load it again from its source.',
        'page',
      );
      await this.refreshCache();
    }
  }

  /**
   * Makes `shard` the open shard (the one before is closed) and tells the listeners. `remote`: its
   * URL when it is read from its host, not imported.
   */
  async #show(shard: OpenShard, remote: string | null = null) {
    this.#revokeImages();
    this.shard?.docs.close();
    if (this.shard && this.shard.summary.hash !== shard.summary.hash)
      forgetRemoteFirst(this.shard.summary.hash);
    this.remote = remote;
    this.messages.clear('shard');
    this.sets = await readShardSets(shard.summary.hash);
    this.shard = shard;
    this.taskId = shard.summary.manifest.tasks[0]?.id ?? '';
    for (const fn of this.#onShard) await fn(shard);
  }

  /** A document read of the open shard failed (a damaged chunk: the shard was dropped). */
  async #docsFailed(hash: string, e: unknown) {
    this.messages.error(
      `Reading documents of the open shard failed: ${e instanceof Error ? e.message : String(e)}`,
      'page',
    );
    if (this.shard?.summary.hash === hash) await this.close();
    await this.refreshCache();
  }

  /** Reads the open shard's sets again (its embeddings were removed). */
  async refreshSets(hash: string) {
    if (this.shard?.summary.hash === hash) this.sets = await readShardSets(hash);
  }

  async deleteShard(hash: string) {
    await withShardStore((store) => store.delete(hash));
    if (this.shard?.summary.hash === hash) await this.close();
    await this.refreshCache();
  }

  /** Closes the open shard (nothing open afterwards). */
  async close() {
    this.shard?.docs.close();
    if (this.shard) forgetRemoteFirst(this.shard.summary.hash);
    this.remote = null;
    this.shard = null;
    this.sets = null;
    this.taskId = '';
    this.#revokeImages();
    resetRetrieval();
    this.messages.clear('shard');
    for (const fn of this.#onShard) await fn(null);
  }

  /** Object URL of a shard image, created once and revoked when the shard closes. */
  async imageUrl(path: string): Promise<string | null> {
    const s = this.shard;
    if (!s) return null;
    const hit = this.#imageUrls.get(path);
    if (hit) return hit;
    const stored = await withShardStore((store) => store.getImage(s.summary.hash, path));
    // Browsers cannot show DICOM: it is shown as a PNG of its decoded pixels.
    // The DICOM decoder (dicom-parser, fflate, codecs) loads with the first stored image shown.
    const blob = stored
      ? await import('../platform/media/dicom-image')
          .then((m) => m.displayableImage(stored))
          .catch(() => null)
      : null;
    if (!blob || this.shard !== s) return null;
    const url = URL.createObjectURL(blob);
    this.#imageUrls.set(path, url);
    return url;
  }

  #revokeImages() {
    for (const u of this.#imageUrls.values()) URL.revokeObjectURL(u);
    this.#imageUrls.clear();
  }
}
