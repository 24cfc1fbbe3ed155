// The IndexedDB cache of imported shards (and of data derived from them), keyed by the shard's
// content hash. Works the same in the page and in workers.
//
// Atomicity: a shard is written in many bounded transactions (chunks of records, then images), and
// its `shards` row, with `complete: true`, is written last, in its own transaction: it is the commit
// marker. Readers only ever look at hashes with a complete row. Records of a hash without one are
// debris of an import that died (tab closed, worker terminated, quota hit) and are swept on open.
//
// Concurrency: a writer holds the Web Lock `loupe-shard:<hash>` for the whole put. The browser
// releases it when the holder dies (a terminated worker, a closed tab), so "incomplete and lock free"
// means "abandoned", and the sweep never deletes an import that is still running in another worker
// or tab. Without Web Locks (very old browsers) the sweep treats every incomplete hash as abandoned.
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import { formatBytes } from '../../core/shard/limits';
import { allChunkRecords, type ChunkRow } from './stored-chunks';
import type {
  Doc,
  ParsedShard,
  Qrels,
  Query,
  ShardFormat,
  ShardManifest,
  ShardWarning,
} from '../../core/types';

/** Artifact kind of a stopped streamed import's resume records (import-resume.ts): kept by the sweep. */
export const RESUME_KIND = 'import-resume';

/** IndexedDB database name. */
export const DB_NAME = 'loupe';
/**
 * SCHEMA_VERSION: the IndexedDB version of this layout. Bump it on any change to stores, keys or
 * record shapes: the upgrade deletes every store of an older version and creates the new ones
 * (everything here is derived data, so cached shards are simply imported again).
 */
export const SCHEMA_VERSION = 1;
/** DOCS_PER_CHUNK: documents (and queries) per stored chunk record. */
export const DOCS_PER_CHUNK = 1000;
/** QRELS_PER_CHUNK: [queryId, docId, grade] triples per stored chunk record. */
export const QRELS_PER_CHUNK = 5000;
/** TX_MAX_BYTES: approximate bytes written per transaction before it is committed. */
export const TX_MAX_BYTES = 4 * 1024 * 1024;
/** TX_MAX_RECORDS: records (chunks, images) written per transaction before it is committed. */
export const TX_MAX_RECORDS = 64;

/** Object store names, for tests and tools that inspect the database directly. */
export const STORES = ['shards', 'docs', 'queries', 'qrels', 'images', 'artifacts'] as const;
export type StoreName = (typeof STORES)[number];

/** One relevance judgement as stored: query id, document id, grade. */
export type QrelTriple = [queryId: string, docId: string, grade: number];

export interface ShardCounts {
  docs: number;
  queries: number;
  /** Judged (query, document) pairs. */
  qrels: number;
  images: number;
}

/** What the cache knows about a stored shard without loading it (what the shard list shows). */
export interface ShardSummary {
  hash: string;
  name: string;
  format: ShardFormat;
  /** Folder name, zip file name or URL the shard was imported from. */
  sourceLabel: string;
  manifest: ShardManifest;
  notice?: string;
  warnings: ShardWarning[];
  counts: ShardCounts;
  /** Approximate bytes in IndexedDB: JSON size of the records plus image bytes. */
  storedBytes: number;
  /** Bytes read from the source. */
  sourceBytes: number;
  /** When it was stored (ms since epoch). */
  cachedAt: number;
}

/** A cached shard read back in full. */
export interface LoadedShard {
  summary: ShardSummary;
  docs: Doc[];
  queries: Query[];
  qrels: Qrels;
}

export interface StorageEstimate {
  usage?: number;
  quota?: number;
  /** Whether the origin's storage is persistent (not evicted under pressure). */
  persisted: boolean;
}

/** A cached shard that could not be read back intact; it has been dropped and must be imported again. */
export class StaleCacheError extends Error {
  readonly hash: string;
  readonly shardName?: string;
  constructor(hash: string, reason: string, shardName?: string) {
    super(
      `cached shard ${shardName ?? hash.slice(0, 12)} is unusable (${reason}); it was removed, import it again`,
    );
    this.name = 'StaleCacheError';
    this.hash = hash;
    this.shardName = shardName;
  }
}

/**
 * STORAGE_OVERHEAD: factor from the JSON size of a shard's records to what IndexedDB takes for them
 * (keys, structured-clone framing, UTF-16 strings outside Latin-1), used by the pre-flight check.
 */
export const STORAGE_OVERHEAD = 1.2;

/** The origin's storage cannot hold what is about to be written. `needed` / `available` in bytes. */
export class StorageQuotaError extends Error {
  readonly needed: number;
  readonly available: number;
  readonly quota: number;
  constructor(what: string, needed: number, available: number, quota: number) {
    super(
      `not enough browser storage for ${what}: it needs about ${formatBytes(needed)}, and ` +
        `${formatBytes(Math.max(0, available))} of the ${formatBytes(quota)} this site may use is free. ` +
        'Delete cached shards or runs you no longer need, or allow this site more storage in the browser settings, then try again; ' +
        'nothing was written',
    );
    this.name = 'StorageQuotaError';
    this.needed = needed;
    this.available = available;
    this.quota = quota;
  }
}

/** Whether `e` is the browser refusing a write for lack of space (IndexedDB, Cache, OPFS). */
/** IndexedDB cannot be used in this browser (a private window, site data blocked): nothing can be cached. */
export class StorageUnavailableError extends Error {
  constructor(cause?: unknown) {
    super(
      'this browser does not let Loupe use IndexedDB (a private window, or site data blocked in the ' +
        'browser settings), so no shard can be opened or cached' +
        (cause instanceof Error ? ` (${cause.name}: ${cause.message})` : '') +
        '. Open Loupe in a normal window, or allow this site to store data, then reload the page',
    );
    this.name = 'StorageUnavailableError';
  }
}

export function isQuotaError(e: unknown): boolean {
  const name = (e as { name?: string } | null)?.name;
  if (name === 'QuotaExceededError' || name === 'StorageQuotaError') return true;
  // An IDB transaction aborted for quota reports it on its error (idb rejects tx.done with it).
  const inner = (e as { error?: { name?: string } } | null)?.error;
  return inner?.name === 'QuotaExceededError';
}

/** Approximate bytes IndexedDB needs for a parsed shard and its images (records' JSON × STORAGE_OVERHEAD). */
export function estimateShardBytes(parsed: ParsedShard, images: Map<string, Blob>): number {
  let json = JSON.stringify(parsed.docs).length + JSON.stringify(parsed.queries).length;
  for (const [qid, row] of parsed.qrels)
    for (const docId of row.keys()) json += qid.length + docId.length + 12;
  let blobs = 0;
  for (const b of images.values()) blobs += b.size;
  return Math.ceil(json * STORAGE_OVERHEAD + blobs);
}

// ---------------------------------------------------------------------------------------------
// Schema

/** Stored qrels triples [query, doc, grade] → Qrels; a malformed triple throws (the shard is damaged). */
export function qrelsOf(triples: readonly unknown[]): Qrels {
  const qrels: Qrels = new Map();
  for (const t of triples) {
    if (!Array.isArray(t) || typeof t[0] !== 'string' || typeof t[1] !== 'string' || typeof t[2] !== 'number')
      throw new Error('qrels: a record is damaged');
    let row = qrels.get(t[0]);
    if (!row) qrels.set(t[0], (row = new Map()));
    row.set(t[1], t[2]);
  }
  return qrels;
}

/** The `shards` row: the summary plus the commit marker and what load() verifies against. */
export interface ShardMetaRecord extends ShardSummary {
  schema: number;
  chunks: { docs: number; queries: number; qrels: number };
  /** FNV-1a of each chunk's records as JSON, checked on load (absent in rows written before it existed). */
  sums?: { docs: number[]; queries: number[]; qrels: number[] };
  /** The commit marker: the row is only ever written once everything else is. */
  complete: true;
}

export interface ImageRow {
  hash: string;
  path: string;
  blob: Blob;
}

interface ArtifactRow {
  hash: string;
  kind: string;
  key: string;
  value: unknown;
}

interface LoupeDB extends DBSchema {
  shards: { key: string; value: ShardMetaRecord };
  docs: { key: [string, number]; value: ChunkRow<Doc> };
  queries: { key: [string, number]; value: ChunkRow<Query> };
  qrels: { key: [string, number]; value: ChunkRow<QrelTriple> };
  images: { key: [string, string]; value: ImageRow };
  artifacts: { key: [string, string, string]; value: ArtifactRow };
}

type RecordStore = Exclude<StoreName, 'shards'>;
const RECORD_STORES: RecordStore[] = ['docs', 'queries', 'qrels', 'images', 'artifacts'];

/** Every key [hash, …] of a record store: arrays sort after strings and numbers, so `[hash, []]` is past them all. */
export function hashRange(hash: string, ...prefix: string[]): IDBKeyRange {
  return IDBKeyRange.bound([hash, ...prefix], [hash, ...prefix, []]);
}

// ---------------------------------------------------------------------------------------------
// Locks

const lockName = (hash: string) => `loupe-shard:${hash}`;
export const NOT_ACQUIRED = Symbol('lock not acquired');

/**
 * Runs `fn` holding the hash's lock. `wait`: 0 = only if free right now, a number of ms = wait at
 * most that long, undefined = wait as long as it takes. Returns NOT_ACQUIRED when not obtained.
 */
export async function withHashLock<T>(
  hash: string,
  fn: () => Promise<T>,
  wait?: number,
): Promise<T | typeof NOT_ACQUIRED> {
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!locks) return fn();
  if (wait === 0) {
    return locks.request(lockName(hash), { ifAvailable: true }, async (lock) => (lock ? fn() : NOT_ACQUIRED));
  }
  if (wait === undefined) return locks.request(lockName(hash), fn);
  try {
    return await locks.request(lockName(hash), { signal: AbortSignal.timeout(wait) }, fn);
  } catch (e) {
    const name = (e as { name?: string }).name;
    if (name === 'TimeoutError' || name === 'AbortError') return NOT_ACQUIRED;
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// Store

export function toSummary(m: ShardMetaRecord): ShardSummary {
  const { schema: _schema, chunks: _chunks, sums: _sums, complete: _complete, ...summary } = m;
  return summary;
}

export function chunked<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The shard cache. Get one with openShardStore(); every method is safe to call concurrently. */
export class ShardStore {
  private dbp: Promise<IDBPDatabase<LoupeDB>> | undefined;

  /** @internal use openShardStore() */
  constructor() {}

  /** The connection, reopened if it was closed for another tab's upgrade or by the browser. */
  db(): Promise<IDBPDatabase<LoupeDB>> {
    if (!this.dbp) {
      if (typeof indexedDB === 'undefined') return Promise.reject(new StorageUnavailableError());
      const opened = (): Promise<IDBPDatabase<LoupeDB>> => {
        try {
          return openDB<LoupeDB>(DB_NAME, SCHEMA_VERSION, options);
        } catch (e) {
          // Some browsers refuse synchronously (indexedDB.open throws) rather than with an error event.
          return Promise.reject(e);
        }
      };
      const options: Parameters<typeof openDB<LoupeDB>>[2] = {
        upgrade(db) {
          // Older layouts are dropped wholesale (derived data; see SCHEMA_VERSION).
          for (const name of Array.from(db.objectStoreNames)) db.deleteObjectStore(name);
          db.createObjectStore('shards', { keyPath: 'hash' });
          db.createObjectStore('docs', { keyPath: ['hash', 'chunkNo'] });
          db.createObjectStore('queries', { keyPath: ['hash', 'chunkNo'] });
          db.createObjectStore('qrels', { keyPath: ['hash', 'chunkNo'] });
          db.createObjectStore('images', { keyPath: ['hash', 'path'] });
          db.createObjectStore('artifacts', { keyPath: ['hash', 'kind', 'key'] });
        },
        blocking: () => {
          // Another tab wants a newer schema: let it, and reopen on next use.
          void p.then((db) => db.close());
          this.dbp = undefined;
        },
        terminated: () => {
          this.dbp = undefined;
        },
      };
      const p = opened().catch((e: unknown) => {
        this.dbp = undefined;
        const name = (e as { name?: string }).name;
        if (name === 'VersionError') {
          throw new Error('the shard cache was written by a newer version of Loupe; reload the page');
        }
        // What private windows and blocked site data give (Firefox, Safari, Chromium's settings).
        if (name === 'InvalidStateError' || name === 'SecurityError' || name === 'UnknownError')
          throw new StorageUnavailableError(e);
        throw e;
      });
      this.dbp = p;
    }
    return this.dbp;
  }

  /** Closes the connection (it reopens on next use). */
  async close(): Promise<void> {
    const p = this.dbp;
    this.dbp = undefined;
    if (p) (await p.catch(() => undefined))?.close();
  }

  /** Complete cached shards, most recent first. */
  async list(): Promise<ShardSummary[]> {
    const db = await this.db();
    const rows = await db.getAll('shards');
    return rows
      .filter((m) => m.complete === true)
      .map(toSummary)
      .sort((a, b) => b.cachedAt - a.cachedAt);
  }

  /** The summary of a complete cached shard, if any. */
  async summary(hash: string): Promise<ShardSummary | undefined> {
    const m = await (await this.db()).get('shards', hash);
    return m?.complete === true ? toSummary(m) : undefined;
  }

  /** Whether a complete copy of the shard is cached. */
  async has(hash: string): Promise<boolean> {
    return (await this.summary(hash)) !== undefined;
  }

  /**
   * Reads a cached shard back, checking every chunk against the counts in its row. A missing,
   * short or unreadable entry is dropped and reported as StaleCacheError (never a crash).
   */
  async load(hash: string): Promise<LoadedShard> {
    const db = await this.db();
    let meta: ShardMetaRecord | undefined;
    try {
      meta = await db.get('shards', hash);
      if (!meta || meta.complete !== true) throw new StaleCacheError(hash, 'not in the cache');
      const tx = db.transaction(['docs', 'queries', 'qrels', 'images'], 'readonly');
      const [docRows, queryRows, qrelRows, imageCount] = await Promise.all([
        tx.objectStore('docs').getAll(hashRange(hash)),
        tx.objectStore('queries').getAll(hashRange(hash)),
        tx.objectStore('qrels').getAll(hashRange(hash)),
        tx.objectStore('images').count(hashRange(hash)),
        tx.done,
      ]);
      const m = meta;
      const docs = allChunkRecords('documents', docRows, m.chunks.docs, m.counts.docs, m.sums?.docs);
      const queries = allChunkRecords(
        'queries',
        queryRows,
        m.chunks.queries,
        m.counts.queries,
        m.sums?.queries,
      );
      const triples = allChunkRecords('qrels', qrelRows, m.chunks.qrels, m.counts.qrels, m.sums?.qrels);
      if (imageCount !== m.counts.images)
        throw new Error(`images: ${imageCount} stored, ${m.counts.images} expected`);
      for (const d of docs) if (typeof d?.id !== 'string') throw new Error('documents: a record is damaged');
      for (const q of queries) if (typeof q?.id !== 'string') throw new Error('queries: a record is damaged');
      return { summary: toSummary(m), docs, queries, qrels: qrelsOf(triples) };
    } catch (e) {
      const reason = e instanceof StaleCacheError ? 'not in the cache' : (e as Error)?.message || String(e);
      await this.delete(hash).catch(() => undefined);
      throw e instanceof StaleCacheError ? e : new StaleCacheError(hash, reason, meta?.name);
    }
  }

  /** A stored image (with its MIME type), if any. */
  async getImage(hash: string, path: string): Promise<Blob | undefined> {
    return (await (await this.db()).get('images', [hash, path]))?.blob;
  }

  /** Removes a shard and everything derived from it (waits for an import of it to finish). */
  async delete(hash: string): Promise<void> {
    await withHashLock(hash, () => this.deleteRecords(hash));
  }

  /** Deletes every record of a hash in every store, in one transaction. Caller holds the lock. @internal */
  async deleteRecords(hash: string): Promise<void> {
    const db = await this.db();
    const tx = db.transaction(STORES, 'readwrite');
    await Promise.all([
      tx.objectStore('shards').delete(hash),
      ...RECORD_STORES.map((s) => tx.objectStore(s).delete(hashRange(hash))),
      tx.done,
    ]);
  }

  /**
   * Removes the records of every hash without a complete `shards` row whose writer is gone.
   * `waitMs`: how long to wait for a writer's lock (0: skip hashes still being written).
   * Returns the hashes removed.
   */
  async sweep(opts: { waitMs?: number } = {}): Promise<string[]> {
    const db = await this.db();
    const tx = db.transaction(STORES, 'readonly');
    const complete = new Set<string>();
    const seen = new Set<string>();
    for (const m of await tx.objectStore('shards').getAll()) {
      seen.add(m.hash);
      if (m.complete === true) complete.add(m.hash);
    }
    for (const s of RECORD_STORES) {
      // One key per hash: after reading a hash, jump past all its keys.
      let cur = await tx.objectStore(s).openKeyCursor();
      while (cur) {
        const h = (cur.key as unknown[])[0] as string;
        seen.add(h);
        cur = await cur.continue([h, []] as unknown as never);
      }
    }
    await tx.done;
    const removed: string[] = [];
    for (const h of seen) {
      if (complete.has(h)) continue;
      const r = await withHashLock(
        h,
        async () => {
          // Re-check under the lock: the writer may have committed meanwhile. A stopped import that
          // can resume stays until resumed or discarded (import-resume.ts).
          if (await this.has(h)) return false;
          if (await (await this.db()).getKey('artifacts', [h, RESUME_KIND, 'state'])) return false;
          await this.deleteRecords(h);
          return true;
        },
        opts.waitMs ?? 0,
      );
      if (r === true) removed.push(h);
    }
    return removed;
  }

  /** Stores derived data (BM25 index, embeddings, HNSW graph…) for a cached shard. */
  async putArtifact(hash: string, kind: string, key: string, value: unknown): Promise<void> {
    const db = await this.db();
    const tx = db.transaction(['shards', 'artifacts'], 'readwrite');
    const meta = await tx.objectStore('shards').get(hash);
    if (meta?.complete !== true) {
      tx.abort();
      await tx.done.catch(() => undefined);
      throw new Error(`cannot store ${kind} for shard ${hash.slice(0, 12)}: the shard is not cached`);
    }
    await Promise.all([tx.objectStore('artifacts').put({ hash, kind, key, value }), tx.done]);
  }

  /** A stored artifact, or undefined. */
  async getArtifact<T = unknown>(hash: string, kind: string, key: string): Promise<T | undefined> {
    return (await (await this.db()).get('artifacts', [hash, kind, key]))?.value as T | undefined;
  }

  /** Every artifact of one kind for a shard, as [key, value] pairs in key order. */
  async listArtifacts<T = unknown>(hash: string, kind: string): Promise<[string, T][]> {
    const rows = await (await this.db()).getAll('artifacts', hashRange(hash, kind));
    return rows.map((r) => [r.key, r.value as T]);
  }

  /** The keys of a shard's artifacts of one kind, in key order (their values are not read). */
  async artifactKeys(hash: string, kind: string): Promise<string[]> {
    const keys = await (await this.db()).getAllKeys('artifacts', hashRange(hash, kind));
    return keys.map((k) => (k as unknown as [string, string, string])[2]);
  }

  /** How many artifacts of one kind a shard has (their values are not read: some are hundreds of MB). */
  async countArtifacts(hash: string, kind: string): Promise<number> {
    return (await this.db()).count('artifacts', hashRange(hash, kind));
  }

  /** Deletes one artifact. */
  async deleteArtifact(hash: string, kind: string, key: string): Promise<void> {
    await (await this.db()).delete('artifacts', [hash, kind, key]);
  }

  /** Deletes a shard's artifacts, all of them or those of one kind. */
  async deleteArtifacts(hash: string, kind?: string): Promise<void> {
    const range = kind === undefined ? hashRange(hash) : hashRange(hash, kind);
    await (await this.db()).delete('artifacts', range);
  }

  /**
   * Pre-flight: throws StorageQuotaError when `needed` bytes do not fit in what the origin's quota
   * leaves free (navigator.storage.estimate()). Does nothing when the browser gives no estimate.
   */
  async ensureRoom(what: string, needed: number): Promise<void> {
    const { usage, quota } = await this.estimate();
    if (usage === undefined || quota === undefined) return;
    if (needed > quota - usage) throw new StorageQuotaError(what, needed, quota - usage, quota);
  }

  /** Usage and quota of the origin's storage, and whether it is persistent. */
  async estimate(): Promise<StorageEstimate> {
    const storage = (globalThis.navigator as Navigator | undefined)?.storage;
    if (!storage) return { persisted: false };
    const [est, persisted] = await Promise.all([
      storage.estimate().catch(() => ({}) as StorageEstimate),
      storage.persisted ? storage.persisted().catch(() => false) : Promise.resolve(false),
    ]);
    return { usage: est.usage, quota: est.quota, persisted };
  }
}

/**
 * Opens the shard cache and (unless `sweep: false`) removes debris of imports that died, skipping
 * any still being written. A failed sweep is logged, not thrown.
 */
export async function openShardStore(opts: { sweep?: boolean } = {}): Promise<ShardStore> {
  const store = new ShardStore();
  await store.db();
  if (opts.sweep !== false) {
    await store.sweep().catch((e: unknown) => console.warn('loupe: shard cache sweep failed', e));
  }
  return store;
}

/**
 * Runs `fn` with the shard cache opened for it alone, not swept (opening a shard and listing the
 * cache sweep it), and closes it afterwards: a brief read or write leaves no connection open.
 */
export async function withShardStore<T>(fn: (store: ShardStore) => Promise<T>): Promise<T> {
  const store = await openShardStore({ sweep: false });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
