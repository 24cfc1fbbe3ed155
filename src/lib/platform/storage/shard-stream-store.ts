// Storing a shard: its documents are written to IndexedDB in chunks of DOCS_PER_CHUNK as they come (a
// streamed import, issue 18, or a shard read whole), in bounded transactions with one in flight
// (the reader waits for it: memory stays bounded whatever the corpus size), then the queries, qrels
// and images, then the commit marker (shard-store.ts: stores, keys, chunk sizes and checksums), so
// everything that reads the cache reads a shard the same whichever way it came.
// Until the marker is written the records are an uncommitted entry: never listed, and deleted here on
// any failure; given `resumable`, it keeps resume records (import-resume.ts) so that a reload does not
// lose it, else it is swept once the writer's lock is gone (a reload, a closed tab, a cancel).
import type { CorpusMark } from '../../core/shard/stream-corpus';
import type { Doc, ParsedShard, ProgressFn, Query } from '../../core/types';
import { resumeKey, type ResumeProgress, type ResumeState } from './import-resume';
import { fnv1a, type ChunkRow } from './stored-chunks';
import {
  chunked,
  DOCS_PER_CHUNK,
  NOT_ACQUIRED,
  QRELS_PER_CHUNK,
  SCHEMA_VERSION,
  STORAGE_OVERHEAD,
  toSummary,
  TX_MAX_BYTES,
  TX_MAX_RECORDS,
  withHashLock,
  RESUME_KIND,
  type ImageRow,
  type QrelTriple,
  type ShardMetaRecord,
  type ShardStore,
  type ShardSummary,
} from './shard-store';

/**
 * Feeds every document, in order, to `add` (awaiting it), with a function giving where it lies in the
 * corpus (stream-corpus.ts; needed for resume records only); resolves when the corpus is done.
 */
export type DocFeed = (add: (doc: Doc, mark?: () => Promise<CorpusMark>) => Promise<void>) => Promise<void>;

/** What a resumable import keeps besides the shard (ResumeState less what putStreamed knows). */
export type ResumeKeep = Omit<ResumeState, 'hash' | 'parsed' | 'images' | 'sourceLabel' | 'startedAt'>;

type Write =
  | { store: 'docs'; value: ChunkRow<Doc> }
  | { store: 'queries'; value: ChunkRow<Query> }
  | { store: 'qrels'; value: ChunkRow<QrelTriple> }
  | { store: 'images'; value: ImageRow }
  | { store: 'artifacts'; value: { hash: string; kind: string; key: string; value: unknown } };

/**
 * Storage a streamed shard needs: the records besides the documents as estimateShardBytes counts
 * them, plus the corpus file's size (its JSON lines are what the document chunks hold), × overhead.
 */
export function estimateStreamedBytes(othersBytes: number, corpusBytes: number): number {
  return Math.ceil(othersBytes + corpusBytes * STORAGE_OVERHEAD);
}

/**
 * Tests only: a fault the write runs into on purpose. `quotaAfterTx`: once that many transactions
 * have committed, the next one fails as a full disk does (QuotaExceededError), so that what a failed
 * import leaves behind is tested deterministically (a real quota refuses at a moment the browser
 * picks, sometimes before anything is written).
 */
export interface StoreFaults {
  quotaAfterTx?: number;
  /**
   * Once that many transactions have committed, the write waits for good (the worker is then
   * stopped, as a reload or a closed tab stops it): an import caught mid-way whatever the machine's
   * speed (a reload sent on a progress tick could land after the last commit on a busy machine).
   */
  holdAfterTx?: number;
}

/**
 * Stores a validated shard read whole (its documents in `parsed.docs`), as putStreamed does. Returns
 * the existing summary, writing nothing, when the hash is already cached.
 */
export function putShard(
  store: ShardStore,
  parsed: ParsedShard,
  images: Map<string, Blob>,
  sourceLabel: string,
  onProgress?: ProgressFn,
): Promise<ShardSummary> {
  const feed: DocFeed = async (add) => {
    for (const doc of parsed.docs) await add(doc);
  };
  return putStreamed(store, parsed, feed, images, sourceLabel, onProgress);
}

/**
 * Stores a validated shard whose documents come from `feed` (ParsedShard.streamed says how many; a
 * shard read whole, `parsed.docs`).
 * Returns the existing summary, calling nothing, when the hash is already cached. On any failure
 * (the feed throws: a cancel, an issue, a changed file; the quota) everything written is deleted and
 * the error rethrown.
 */
export async function putStreamed(
  store: ShardStore,
  parsed: ParsedShard,
  feed: DocFeed,
  images: Map<string, Blob>,
  sourceLabel: string,
  onProgress?: ProgressFn,
  resumable: { keep?: ResumeKeep; from?: ResumeProgress | null } = {},
  faults: StoreFaults = {},
): Promise<ShardSummary> {
  const hash = parsed.hash;
  const result = await withHashLock(hash, async () => {
    const existing = await store.summary(hash);
    if (existing) return existing;
    // Debris of an earlier attempt (we hold the lock), unless this one goes on from it.
    if (resumable.from === undefined) await store.deleteRecords(hash);
    try {
      return await write(
        store,
        parsed,
        parsed.streamed?.docCount ?? parsed.docs.length,
        feed,
        images,
        sourceLabel,
        onProgress,
        resumable,
        faults,
      );
    } catch (e) {
      // A resumed import that fails only for the network stays resumable.
      if (resumable.from === undefined || discardsResumed(e))
        await store.deleteRecords(hash).catch(() => undefined);
      throw e;
    }
  });
  if (result === NOT_ACQUIRED) throw new Error('shard cache lock not acquired');
  return result;
}

async function write(
  store: ShardStore,
  parsed: ParsedShard,
  docTotal: number,
  feed: DocFeed,
  images: Map<string, Blob>,
  sourceLabel: string,
  onProgress?: ProgressFn,
  resumable: { keep?: ResumeKeep; from?: ResumeProgress | null } = {},
  faults: StoreFaults = {},
): Promise<ShardSummary> {
  const hash = parsed.hash;
  const db = await store.db();
  const from = resumable.from ?? undefined;
  const keep = resumable.keep !== undefined || resumable.from !== undefined;
  if (resumable.keep && resumable.from === undefined) {
    // What the first pass established, before the first document (the sweep keeps the entry now).
    const state: ResumeState = {
      ...resumable.keep,
      hash,
      parsed: { ...parsed, docs: [] },
      images: [...images],
      sourceLabel,
      startedAt: Date.now(),
    };
    await db.put('artifacts', { hash, kind: RESUME_KIND, key: 'state', value: state });
  }
  let storedBytes = from?.storedBytes ?? 0;
  let batch: Write[] = [];
  let batchBytes = 0;
  let batchUnits = 0;
  // Progress counts records committed (documents, queries, judgements, images).
  const triples: QrelTriple[] = [];
  for (const [qid, row] of parsed.qrels) for (const [docId, grade] of row) triples.push([qid, docId, grade]);
  const total = docTotal + parsed.queries.length + triples.length + images.size;
  let committed = from?.docs ?? 0;
  const resumedAt = committed;
  const t0 = Date.now();
  let lastTick = 0;
  const tick = (force = false) => {
    const now = Date.now();
    if (!onProgress || (!force && now - lastTick < 200)) return;
    lastTick = now;
    const s = (now - t0) / 1000;
    const perSec = s > 0.5 ? (committed - resumedAt) / s : 0;
    onProgress({
      kind: 'store',
      what: 'documents',
      docTotal,
      done: committed,
      total,
      docsPerSec: perSec,
      ...(perSec > 0 ? { etaSeconds: (total - committed) / perSec } : {}),
    });
  };
  // The transaction in flight: the next one starts once it is done (two at most in memory).
  let inFlight: Promise<unknown> = Promise.resolve();
  let transactions = 0;
  const flush = async () => {
    await inFlight;
    if (batch.length === 0) return;
    // Held: the write waits for good, saying where it is every 150 ms (a throttled tick would
    // otherwise stay held back until the next one).
    if (faults.holdAfterTx !== undefined && transactions >= faults.holdAfterTx)
      for (;;) {
        tick(true);
        await new Promise((r) => setTimeout(r, 150));
      }
    if (faults.quotaAfterTx !== undefined && transactions >= faults.quotaAfterTx)
      throw new DOMException(
        `simulated: the storage quota ran out after ${transactions} committed transactions (test hook)`,
        'QuotaExceededError',
      );
    transactions++;
    const writes = batch;
    const units = batchUnits;
    batch = [];
    batchBytes = 0;
    batchUnits = 0;
    const tx = db.transaction(['docs', 'queries', 'qrels', 'images', 'artifacts'], 'readwrite');
    const reqs = writes.map((w) => tx.objectStore(w.store).put(w.value as never));
    inFlight = Promise.all([...reqs, tx.done]).then(() => {
      committed += units;
      tick(committed === units + resumedAt); // the first commit is always said
    });
    // A failed transaction must fail the import even when nothing awaits it again.
    inFlight.catch(() => undefined);
  };
  const add = async (w: Write, bytes: number, units: number, progress?: Write) => {
    batch.push(w);
    if (progress) batch.push(progress); // in the same transaction as the documents it counts
    batchBytes += bytes;
    batchUnits += units;
    storedBytes += bytes;
    if (batchBytes >= TX_MAX_BYTES || batch.length >= TX_MAX_RECORDS) await flush();
  };

  // Documents, as they come.
  const sums: NonNullable<ShardMetaRecord['sums']> = {
    docs: [...(from?.sums ?? [])],
    queries: [],
    qrels: [],
  };
  let chunk: Doc[] = [];
  let docChunks = from?.docChunks ?? 0;
  let docs = from?.docs ?? 0;
  let lastMark: (() => Promise<CorpusMark>) | undefined;
  const pushChunk = async () => {
    const records = chunk;
    chunk = [];
    const json = JSON.stringify(records);
    sums.docs.push(fnv1a(json));
    const chunkNo = docChunks++;
    let progress: Write | undefined;
    if (keep && lastMark) {
      const value: ResumeProgress = {
        docChunks,
        docs,
        storedBytes: storedBytes + json.length,
        sums: [...sums.docs],
        mark: await lastMark(),
        at: Date.now(),
      };
      const [, kind, key] = resumeKey(hash, 'progress');
      progress = { store: 'artifacts', value: { hash, kind, key, value } };
    }
    await add({ store: 'docs', value: { hash, chunkNo, records } }, json.length, records.length, progress);
  };
  tick(true);
  await feed(async (doc, mark) => {
    chunk.push(doc);
    docs++;
    lastMark = mark;
    if (chunk.length === DOCS_PER_CHUNK) await pushChunk();
  });
  if (chunk.length > 0) await pushChunk();

  // Queries, qrels and images: in memory already (they are small next to the corpus).
  const queryChunks = chunked(parsed.queries, DOCS_PER_CHUNK);
  const qrelChunks = chunked(triples, QRELS_PER_CHUNK);
  for (const [chunkNo, records] of queryChunks.entries()) {
    const json = JSON.stringify(records);
    sums.queries.push(fnv1a(json));
    await add({ store: 'queries', value: { hash, chunkNo, records } }, json.length, records.length);
  }
  for (const [chunkNo, records] of qrelChunks.entries()) {
    const json = JSON.stringify(records);
    sums.qrels.push(fnv1a(json));
    await add({ store: 'qrels', value: { hash, chunkNo, records } }, json.length, records.length);
  }
  for (const [path, blob] of images)
    await add({ store: 'images', value: { hash, path, blob } }, blob.size, 1);
  await flush();
  await inFlight;
  tick(true);

  const meta: ShardMetaRecord = {
    hash,
    name: parsed.manifest.name,
    format: parsed.manifest.format,
    sourceLabel,
    manifest: parsed.manifest,
    ...(parsed.notice !== undefined ? { notice: parsed.notice } : {}),
    warnings: parsed.warnings,
    counts: { docs, queries: parsed.queries.length, qrels: triples.length, images: images.size },
    storedBytes,
    sourceBytes: parsed.bytes,
    cachedAt: Date.now(),
    schema: SCHEMA_VERSION,
    chunks: { docs: docChunks, queries: queryChunks.length, qrels: qrelChunks.length },
    sums,
    complete: true,
  };
  // The commit marker, last and alone (with the resume records' removal: one transaction).
  const tx = db.transaction(['shards', 'artifacts'], 'readwrite');
  await Promise.all([
    tx.objectStore('shards').put(meta),
    tx.objectStore('artifacts').delete(IDBKeyRange.bound([hash, RESUME_KIND], [hash, RESUME_KIND, []])),
    tx.done,
  ]);
  return toSummary(meta);
}

/** Whether a resumed import's failure discards it (anything but the network: a changed source, the quota). */
function discardsResumed(e: unknown): boolean {
  return !/the connection dropped|could not fetch|HTTP \d+/.test((e as Error)?.message ?? '');
}
