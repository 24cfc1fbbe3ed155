// Page-side helpers for the e2e tests (tests/e2e/*.test.ts call them through page.evaluate). Served
// by the Vite dev server at /tests/browser/harness.html; never part of the app build.
import { zipSync, type Zippable } from 'fflate';
import { openDB } from 'idb';
import {
  importShard,
  inspectParquet,
  stopShardWorker,
  type ImportResult,
  type SourceDescriptor,
} from '../../src/lib/clients/shard-client';
import {
  initialParquetMapping,
  recallParquetMapping,
  rememberParquetMapping,
} from '../../src/lib/platform/storage/parquet-mappings';
import { prepareBm25, runBm25Task, searchBm25Adhoc } from '../../src/lib/clients/retrieval-client';
import { DEFAULT_BM25_PARAMS } from '../../src/lib/core/retrieval/bm25';
import { evaluate } from '../../src/lib/core/eval/metrics';
import type { ParquetMapping } from '../../src/lib/core/media/parquet/mapping';
import { qrelsFor } from '../../src/lib/core/eval/report';
import type { Run } from '../../src/lib/core/types';
import { describeDrop } from '../../src/lib/platform/sources/sources';
import { docBatches } from '../../src/lib/platform/storage/shard-batches';
import { loadDocIndex, readDocRows } from '../../src/lib/platform/storage/shard-docs';
import { findDocRow } from '../../src/lib/core/shard/doc-directory';
import {
  DB_NAME,
  STORES,
  hashRange,
  openShardStore,
  type StoreName,
} from '../../src/lib/platform/storage/shard-store';
import type { Progress } from '../../src/lib/core/types';
import { openPrecomputedSet, putPrecomputedSet } from '../../src/lib/platform/storage/precomputed-store';
import { getBm25, putBm25 } from '../../src/lib/platform/storage/bm25-cache';
import { PRECOMPUTED_KIND, type PrecomputedSidecar } from '../../src/lib/core/shard/precomputed';
import { f32ToF16 } from '../../src/lib/core/shard/vector-files';

type Files = Map<string, Uint8Array>;

/** Files of demo shards fetched from /shards/<name>/, by shard name. */
const fetched = new Map<string, Files>();

/** An edit applied to fetched files before packing them (to make a shard invalid). */
export interface Edit {
  path: string;
  /** 1-based line to replace. */
  line: number;
  text: string;
}

export interface ImportOptions {
  /** Cancel when a progress tick of this kind arrives (for `store`, once `done >= minDone`). */
  cancelOn?: Progress['kind'];
  /** For `store`: cancel once this many batches are written; `last`: on the last batch's tick. */
  minDone?: number | 'last';
  /**
   * `abort`: the app's cancel (AbortSignal: terminate, then sweep what the worker left).
   * `kill`: only terminate the worker, so its half-written records stay until the next sweep.
   */
  cancelHow?: 'abort' | 'kill';
  /** A Parquet dataset's column mapping (else detected). */
  parquet?: ParquetMapping;
  /** Skip the storage pre-flight (to let a write run into the quota). */
  skipPreflight?: boolean;
  /** The write fails as on a full disk once this many transactions have committed. */
  simulateQuotaAfterTx?: number;
  /** The write waits for good once this many transactions have committed (then a reload or kill lands mid-import). */
  simulateHoldAfterTx?: number;
  /** Reload the page when a progress tick of this kind arrives (`store`: once `done >= minDone`). */
  reloadOn?: Progress['kind'];
}

export type Outcome =
  | (ImportResult & { progress: string[] })
  | { ok: false; error: { name: string; message: string }; progress: string[] };

/** A store connection kept open by holdOpen(). */
let held: Awaited<ReturnType<typeof openShardStore>> | undefined;

const enc = new TextEncoder();
const dec = new TextDecoder();

function files(name: string): Files {
  const f = fetched.get(name);
  if (!f) throw new Error(`call fetchShard('${name}', paths) first`);
  return f;
}

function edited(name: string, edits: Edit[] = []): Files {
  const out = new Map(files(name));
  for (const e of edits) {
    const lines = dec.decode(out.get(e.path)).split('\n');
    lines[e.line - 1] = e.text;
    out.set(e.path, enc.encode(lines.join('\n')));
  }
  return out;
}

function zipOf(fs: Files, topFolder = '', level: 0 | 6 = 6): Uint8Array<ArrayBuffer> {
  const z: Zippable = {};
  for (const [path, bytes] of fs) z[topFolder ? `${topFolder}/${path}` : path] = [bytes, { level }];
  return zipSync(z);
}

async function run(desc: SourceDescriptor, opts: ImportOptions = {}): Promise<Outcome> {
  const progress: string[] = [];
  const ac = new AbortController();
  let cancelled = false;
  const onProgress = (p: Progress) => {
    progress.push(p.kind === 'store' ? `store:${p.done}/${p.total}` : p.kind);
    if (p.kind === opts.reloadOn && (p.kind !== 'store' || p.done >= Number(opts.minDone ?? 0))) {
      // The tab goes away mid-job, as a reload or a closed tab would (the test waits for the new page).
      // The worker is stopped at once, as the unload will: otherwise it may finish before the page goes.
      stopShardWorker();
      location.reload();
      return;
    }
    if (cancelled || p.kind !== opts.cancelOn) return;
    if (p.kind === 'store' && p.done < (opts.minDone === 'last' ? p.total : (opts.minDone ?? 0))) return;
    cancelled = true;
    if (opts.cancelHow === 'kill') stopShardWorker();
    else ac.abort();
  };
  try {
    const r = await importShard(desc, {
      signal: ac.signal,
      onProgress,
      parquet: opts.parquet,
      skipPreflight: opts.skipPreflight,
      simulateQuotaAfterTx: opts.simulateQuotaAfterTx,
      simulateHoldAfterTx: opts.simulateHoldAfterTx,
    });
    await progressDelivered();
    return { ...r, progress };
  } catch (e) {
    const err = e as Error;
    await progressDelivered();
    return { ok: false, error: { name: err?.name ?? 'Error', message: err?.message ?? String(e) }, progress };
  }
}

/**
 * Progress comes over the callback's own message port, the outcome over the worker's: a tick posted
 * just before a failure can arrive after it. Tests read the list once the call settles, so the ticks
 * already posted are let in first. (A failed import also used to drop the tick its throttle held:
 * the commits counted before the failure; the worker now sends it before the outcome.)
 */
function progressDelivered(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 100));
}

/** Record counts per store, for one hash or over the whole database. */
async function counts(hash?: string): Promise<Record<StoreName, number>> {
  const db = await openDB(DB_NAME);
  try {
    const out = {} as Record<StoreName, number>;
    for (const s of STORES) {
      out[s] =
        hash === undefined
          ? await db.count(s)
          : s === 'shards'
            ? await db.count(s, hash)
            : await db.count(s, hashRange(hash));
    }
    return out;
  } finally {
    db.close();
  }
}

const harness = {
  /** Fetches the given files of /shards/<name>/ into page memory (for zips and File imports). */
  async fetchShard(name: string, paths: string[]): Promise<{ files: number; bytes: number }> {
    const out: Files = new Map();
    let bytes = 0;
    for (const p of paths) {
      const res = await fetch(`/shards/${name}/${p}`);
      if (!res.ok) throw new Error(`HTTP ${res.status} for ${p}`);
      const b = new Uint8Array(await res.arrayBuffer());
      out.set(p, b);
      bytes += b.length;
    }
    fetched.set(name, out);
    return { files: out.size, bytes };
  },

  /** Fetches `<baseUrl><path>` for each path into page memory under `name` (like fetchShard). */
  async fetchFiles(
    name: string,
    baseUrl: string,
    paths: string[],
  ): Promise<{ files: number; bytes: number }> {
    const out: Files = new Map();
    let bytes = 0;
    for (const p of paths) {
      const res = await fetch(new URL(p, new URL(baseUrl, location.href)));
      if (!res.ok) throw new Error(`HTTP ${res.status} for ${baseUrl}${p}`);
      const b = new Uint8Array(await res.arrayBuffer());
      out.set(p, b);
      bytes += b.length;
    }
    fetched.set(name, out);
    return { files: out.size, bytes };
  },

  /** `files`: the listing of a URL that cannot be listed (a Parquet dataset's files). */
  importUrl(url: string, opts?: ImportOptions & { files?: string[] }): Promise<Outcome> {
    return run({ kind: 'url', url: new URL(url, location.href).href, files: opts?.files }, opts);
  },

  /** Inspects the fetched files of `name` as a Parquet dataset (File objects, as a folder pick gives). */
  async inspectFiles(name: string) {
    const list = [...files(name)].map(([path, bytes]) => ({
      path,
      file: new File([bytes as Uint8Array<ArrayBuffer>], path.split('/').pop()!),
    }));
    return inspectParquet({ kind: 'files', files: list, label: name });
  },

  /** Remembers, recalls and picks the initial mapping of a dataset identity (localStorage). */
  rememberMapping(identity: string, mapping: ParquetMapping): void {
    rememberParquetMapping(identity, mapping);
  },
  recallMapping(identity: string): ParquetMapping | null {
    return recallParquetMapping(identity);
  },
  async initialMapping(name: string) {
    const r = await harness.inspectFiles(name);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    return initialParquetMapping(r.inspection);
  },

  /**
   * BM25 (Anserini defaults) over every task of a cached shard, scored like the UI (trec_eval -c):
   * per task, its query ids and the overall nDCG@10, Recall@100, MRR and MAP.
   */
  async bm25Metrics(hash: string) {
    const store = await openShardStore();
    let shard;
    try {
      shard = await store.load(hash);
    } finally {
      await store.close();
    }
    await prepareBm25(hash, { ...DEFAULT_BM25_PARAMS });
    const out: Record<string, { queries: string[]; metrics: Record<string, number> }> = {};
    for (const t of shard.summary.manifest.tasks) {
      const lists = await runBm25Task(t.id, 1000);
      const run: Run = new Map(
        lists.map((l) => [l.queryId, l.docIds.map((docId, i) => ({ docId, score: l.scores[i] }))]),
      );
      const ids = shard.queries.filter((q) => q.task === t.id).map((q) => q.id);
      const r = evaluate(
        qrelsFor(shard.qrels, ids),
        run,
        ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map'],
        {
          complete: true,
        },
      );
      out[t.id] = { queries: ids, metrics: r.all };
    }
    return out;
  },

  /** Zips the fetched files in the page (optionally inside `topFolder`, optionally edited) and imports the zip. */
  importZip(
    name: string,
    opts: ImportOptions & { topFolder?: string; edits?: Edit[] } = {},
  ): Promise<Outcome> {
    const zip = zipOf(edited(name, opts.edits), opts.topFolder);
    return run({ kind: 'zip', file: new File([zip], `${name}.zip`, { type: 'application/zip' }) }, opts);
  },

  /** Imports File objects with `<topFolder>/<path>` paths, as a folder pick or a drop gives them. */
  importFiles(name: string, opts: ImportOptions & { topFolder?: string } = {}): Promise<Outcome> {
    const list = [...files(name)].map(([path, bytes]) => ({
      path: opts.topFolder ? `${opts.topFolder}/${path}` : path,
      file: new File([bytes as Uint8Array<ArrayBuffer>], path.split('/').pop()!),
    }));
    return run({ kind: 'files', files: list }, opts);
  },

  /**
   * Writes the fetched files into the origin-private file system under `<tmp>/<nest…>/` and imports
   * the `<tmp>` FileSystemDirectoryHandle (as showDirectoryPicker would give it); removes them after.
   */
  async importDirectory(name: string, opts: ImportOptions & { nest?: string[] } = {}): Promise<Outcome> {
    const opfs = await navigator.storage.getDirectory();
    const tmpName = `loupe-test-${Math.random().toString(36).slice(2)}`;
    const tmp = await opfs.getDirectoryHandle(tmpName, { create: true });
    try {
      let root = tmp;
      for (const n of opts.nest ?? []) root = await root.getDirectoryHandle(n, { create: true });
      for (const [path, bytes] of files(name)) {
        const segs = path.split('/');
        let dir = root;
        for (const s of segs.slice(0, -1)) dir = await dir.getDirectoryHandle(s, { create: true });
        const w = await (await dir.getFileHandle(segs[segs.length - 1], { create: true })).createWritable();
        await w.write(bytes as Uint8Array<ArrayBuffer>);
        await w.close();
      }
      return await run({ kind: 'directory', handle: tmp }, opts);
    } finally {
      await opfs.removeEntry(tmpName, { recursive: true });
    }
  },

  /** What a drop of these files (a synthetic DataTransfer) is imported as. */
  async describeDropOf(names: string[]): Promise<{ kind: string; paths: string[] }> {
    const dt = new DataTransfer();
    for (const n of names) dt.items.add(new File([enc.encode('x')], n));
    const d = await describeDrop(dt);
    return {
      kind: d.kind,
      paths:
        d.kind === 'files' ? d.files.map((f) => f.path) : d.kind === 'zip' ? [(d.file as File).name] : [],
    };
  },

  /** Imports bytes that are not a zip at all. */
  importGarbageZip(): Promise<Outcome> {
    const junk = enc.encode('this is not a zip file\n'.repeat(100));
    return run({ kind: 'zip', file: new File([junk], 'garbage.zip') });
  },

  /** Imports a zip of the fetched files whose `entry` has a damaged local header. */
  importZipWithBrokenEntry(name: string, entry: string): Promise<Outcome> {
    const zip = zipOf(files(name), '', 0);
    // Find the entry's local header: signature PK\x03\x04, name at offset 30.
    const want = enc.encode(entry);
    let at = -1;
    for (let i = 0; i + 30 + want.length <= zip.length; i++) {
      if (zip[i] !== 0x50 || zip[i + 1] !== 0x4b || zip[i + 2] !== 3 || zip[i + 3] !== 4) continue;
      const n = zip[i + 26] | (zip[i + 27] << 8);
      if (n === want.length && want.every((b, k) => zip[i + 30 + k] === b)) {
        at = i;
        break;
      }
    }
    if (at < 0) throw new Error(`${entry} not found in the zip`);
    zip[at + 2] = 0x00; // no longer a local file header signature
    return run({ kind: 'zip', file: new File([zip], `${name}-broken.zip`) });
  },

  async list() {
    const store = await openShardStore();
    try {
      return await store.list();
    } finally {
      await store.close();
    }
  },

  /** Loads a cached shard; errors come back as data (page.evaluate would only keep the message). */
  async load(hash: string) {
    const store = await openShardStore();
    try {
      const s = await store.load(hash);
      let qrelPairs = 0;
      for (const row of s.qrels.values()) qrelPairs += row.size;
      return {
        ok: true as const,
        summary: s.summary,
        docs: s.docs.length,
        queries: s.queries.length,
        qrelQueries: s.qrels.size,
        qrelPairs,
        firstDoc: s.docs[0],
      };
    } catch (e) {
      const err = e as Error & { hash?: string };
      return { ok: false as const, name: err.name, message: err.message, hash: err.hash };
    } finally {
      await store.close();
    }
  },

  /**
   * Documents of a cached shard read by id, as the open shard reads them (the directory built in the
   * shard worker first, then single chunks); errors come back as data.
   */
  async readDocs(hash: string, ids: string[]) {
    const store = await openShardStore();
    try {
      const summary = (await store.summary(hash))!;
      const { indexShardDocs } = await import('../../src/lib/clients/shard-client');
      await indexShardDocs(hash, []);
      const index = (await loadDocIndex(store, hash, summary.counts.docs))!;
      const rows = ids.map((id) => findDocRow(index.dir, id));
      const got = await readDocRows(store, hash, rows);
      return { ok: true as const, rows, docs: rows.map((r) => got.get(r) ?? null), facts: index.facts };
    } catch (e) {
      const err = e as Error & { hash?: string };
      return { ok: false as const, name: err.name, message: err.message, hash: err.hash };
    } finally {
      await store.close();
    }
  },

  async delete(hash: string) {
    const store = await openShardStore();
    await store.delete(hash);
    await store.close();
  },

  /** Runs the cache sweep; returns the hashes it removed. */
  async sweep(waitMs = 0): Promise<string[]> {
    const store = await openShardStore({ sweep: false });
    try {
      return await store.sweep({ waitMs });
    } finally {
      await store.close();
    }
  },

  counts,

  /** Hashes with records in some store but no complete `shards` row (half-written debris). */
  async debris(): Promise<string[]> {
    const db = await openDB(DB_NAME);
    try {
      const complete = new Set(
        ((await db.getAll('shards')) as { hash: string; complete?: boolean }[])
          .filter((m) => m.complete === true)
          .map((m) => m.hash),
      );
      const out = new Set<string>();
      for (const s of STORES) {
        for (const key of await db.getAllKeys(s)) {
          const h = s === 'shards' ? (key as string) : ((key as unknown[])[0] as string);
          if (!complete.has(h)) out.add(h);
        }
      }
      return [...out];
    } finally {
      db.close();
    }
  },

  /** Opens the shard store and keeps the connection open (as a tab using the cache does). */
  async holdOpen(): Promise<void> {
    held = await openShardStore();
  },

  /**
   * The storage pre-flight with the page's navigator.storage.estimate() reporting `usage` of `quota`
   * (Chromium reports usage + 10 GiB whatever the real quota: see tests/e2e/faults.test.ts).
   */
  async preflight(usage: number, quota: number, needed: number) {
    const real = navigator.storage.estimate;
    navigator.storage.estimate = async () => ({ usage, quota });
    const store = await openShardStore();
    try {
      await store.ensureRoom('the shard "big"', needed);
      return { ok: true as const };
    } catch (e) {
      const err = e as Error & { needed?: number; available?: number };
      return {
        ok: false as const,
        name: err.name,
        message: err.message,
        needed: err.needed,
        available: err.available,
      };
    } finally {
      navigator.storage.estimate = real;
      await store.close();
    }
  },

  /** Closes the connection holdOpen() kept. */
  async release(): Promise<void> {
    await held?.close();
    held = undefined;
  },

  /** Opens the database at `version` directly (as a newer Loupe would); resolves how the open ended. */
  openAtVersion(version: number, timeoutMs: number): Promise<string> {
    return new Promise((resolve) => {
      const req = indexedDB.open(DB_NAME, version);
      const timer = setTimeout(() => resolve('still blocked'), timeoutMs);
      req.onblocked = () => undefined; // keep waiting: the older connection should close itself
      req.onsuccess = () => {
        clearTimeout(timer);
        req.result.close();
        resolve(`opened at ${req.result.version}`);
      };
      req.onerror = () => {
        clearTimeout(timer);
        resolve(`error ${req.error?.name}`);
      };
    });
  },

  /** Deletes the whole database (cleanup after a version test). */
  deleteDatabase(): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = indexedDB.deleteDatabase(DB_NAME);
      req.onsuccess = () => resolve();
      req.onerror = () => reject(req.error);
    });
  },

  /**
   * platform/storage/precomputed-store.ts: an n × dim float16 set (values sin(i)) stored in pieces of
   * `pieceRows` rows, rows `order` read back; then the head removed, as a write stopped half-way leaves it.
   */
  async precomputedPieces(hash: string, n: number, dim: number, pieceRows: number, order: number[]) {
    const store = await openShardStore();
    const key = 'loupe-test/pieces|fp32|text';
    const f16 = Uint16Array.from({ length: n * dim }, (_, i) => f32ToF16(Math.sin(i)));
    const sidecar = { doc_ids: Array.from({ length: n }, (_, i) => `d${i}`) } as PrecomputedSidecar;
    await putPrecomputedSet(store, hash, key, { sidecar, f16 }, pieceRows);
    const keys = (await store.listArtifacts(hash, PRECOMPUTED_KIND)).map(([k]) => k);
    const rows = Array.from(await (await openPrecomputedSet(store, hash, key))!.read(order, dim));
    await store.deleteArtifact(hash, PRECOMPUTED_KIND, key);
    const headless = (await openPrecomputedSet(store, hash, key)) === undefined;
    for (const k of keys) await store.deleteArtifact(hash, PRECOMPUTED_KIND, k);
    return { keys, rows, headless };
  },

  /**
   * platform/storage/bm25-cache.ts: the BM25 index stored under `key` written again under another key in
   * pieces of `pieceBytes`, read back and compared byte for byte; then its head removed, as a write
   * stopped half-way leaves it.
   */
  async bm25Pieces(hash: string, key: string, pieceBytes: number) {
    const store = await openShardStore();
    try {
      return await bm25PiecesIn(store, hash, key, pieceBytes);
    } finally {
      await store.close();
    }
  },

  /** Changes one stored document's text behind the store's back (same record count, other bytes). */
  async tamperDoc(hash: string, chunkNo: number): Promise<void> {
    const db = await openDB(DB_NAME);
    try {
      const row = (await db.get('docs', [hash, chunkNo])) as { records: { text: string }[] } | undefined;
      if (!row) throw new Error(`no docs chunk ${chunkNo} for ${hash}`);
      row.records[0].text = row.records[0].text.replace(/[a-z]/, 'X');
      await db.put('docs', row);
    } finally {
      db.close();
    }
  },

  /** The retrieval worker's BM25 index of a cached shard (Anserini defaults): whether it came from cache, and the top `k` of each text. */
  async bm25Prepared(hash: string, texts: string[], k: number) {
    const r = await prepareBm25(hash, { ...DEFAULT_BM25_PARAMS });
    const hits = [];
    for (const t of texts) hits.push(await searchBm25Adhoc(t, k));
    return { cached: r.cached, indexedDocs: r.indexedDocs, hits };
  },

  /** A cached shard's documents as docBatches reads them: the ids of each batch, or the error. */
  async docBatchIds(hash: string, chunksPerBatch: number) {
    const store = await openShardStore();
    const batches: string[][] = [];
    try {
      for await (const b of docBatches(store, hash, chunksPerBatch)) batches.push(b.map((d) => d.id));
      return { ok: true as const, batches };
    } catch (e) {
      return { ok: false as const, batches, name: (e as Error).name, message: (e as Error).message };
    } finally {
      await store.close();
    }
  },

  async putArtifact(
    hash: string,
    kind: string,
    key: string,
    value: unknown,
  ): Promise<{ ok: boolean; message?: string }> {
    const store = await openShardStore();
    try {
      await store.putArtifact(hash, kind, key, value);
      return { ok: true };
    } catch (e) {
      return { ok: false, message: (e as Error).message };
    } finally {
      await store.close();
    }
  },

  async getArtifact(hash: string, kind: string, key: string) {
    const store = await openShardStore();
    try {
      return await store.getArtifact(hash, kind, key);
    } finally {
      await store.close();
    }
  },

  async getImage(hash: string, path: string) {
    const store = await openShardStore();
    try {
      const b = await store.getImage(hash, path);
      if (!b) return null;
      const head = Array.from(new Uint8Array(await b.slice(0, 3).arrayBuffer()));
      return { type: b.type, size: b.size, head };
    } finally {
      await store.close();
    }
  },

  async estimate() {
    const store = await openShardStore();
    try {
      return await store.estimate();
    } finally {
      await store.close();
    }
  },

  /** Damages one stored chunk behind the store's back: drops half of its records. */
  async corruptChunk(hash: string, store: 'docs' | 'queries' | 'qrels', chunkNo: number): Promise<void> {
    const db = await openDB(DB_NAME);
    try {
      const row = (await db.get(store, [hash, chunkNo])) as { records: unknown[] } | undefined;
      if (!row) throw new Error(`no ${store} chunk ${chunkNo} for ${hash}`);
      row.records = row.records.slice(0, Math.floor(row.records.length / 2));
      await db.put(store, row);
    } finally {
      db.close();
    }
  },

  /**
   * Writes records for `hash` in every store the way an import does, but stops before the commit
   * marker (and leaves an incomplete `shards` row), as a crash between transactions would.
   */
  async writeHalfEntry(hash: string): Promise<void> {
    const db = await openDB(DB_NAME);
    try {
      const tx = db.transaction([...STORES], 'readwrite');
      const doc = { id: 'd1', title: '', text: 'half', meta: {} };
      await Promise.all([
        tx.objectStore('shards').put({ hash, name: 'half', complete: false }),
        tx.objectStore('docs').put({ hash, chunkNo: 0, records: [doc] }),
        tx.objectStore('docs').put({ hash, chunkNo: 1, records: [doc] }),
        tx.objectStore('queries').put({ hash, chunkNo: 0, records: [] }),
        tx.objectStore('qrels').put({ hash, chunkNo: 0, records: [['q1', 'd1', 1]] }),
        tx.objectStore('images').put({
          hash,
          path: 'images/a.jpg',
          blob: new Blob([new Uint8Array([0xff, 0xd8, 0xff])], { type: 'image/jpeg' }),
        }),
        tx.objectStore('artifacts').put({ hash, kind: 'bm25', key: 'k', value: { x: 1 } }),
        tx.done,
      ]);
    } finally {
      db.close();
    }
  },
};

export type Harness = typeof harness;

declare global {
  interface Window {
    harness: Harness;
  }
}

window.harness = harness;
document.getElementById('status')!.textContent = 'ready';

/** harness.bm25Pieces on an open store. */
async function bm25PiecesIn(
  store: Awaited<ReturnType<typeof openShardStore>>,
  hash: string,
  key: string,
  pieceBytes: number,
) {
  const stored = await getBm25(store, hash, key);
  if (!stored) throw new Error(`no BM25 index ${key}`);
  const copy = `${key}|pieces-test`;
  await putBm25(store, hash, copy, stored, pieceBytes);
  const pieces = (await store.listArtifacts(hash, 'bm25-piece'))
    .map(([k]) => k)
    .filter((k) => k.startsWith(`${copy}#`));
  const back = await getBm25(store, hash, copy);
  const same =
    !!back &&
    back.buffers.length === stored.buffers.length &&
    back.buffers.every((b, i) => {
      const x = new Uint8Array(b);
      const y = new Uint8Array(stored.buffers[i]);
      return x.length === y.length && x.every((v, j) => v === y[j]);
    });
  await store.deleteArtifact(hash, 'bm25', copy);
  const headless = (await getBm25(store, hash, copy)) === undefined;
  for (const k of pieces) await store.deleteArtifact(hash, 'bm25-piece', k);
  return { pieces: pieces.length, same, sizes: stored.buffers.map((b) => b.byteLength), headless };
}
