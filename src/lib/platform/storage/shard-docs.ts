// A cached shard opened without its documents: the summary, queries and qrels (small next to the
// corpus) are read whole; documents are read by id, a stored chunk at a time, through the shard's
// document directory (core/shard/doc-directory.ts), built once by scanning the corpus in a worker and
// kept as an artifact. Every chunk read is checked as ShardStore.load checks it; a damaged shard is
// dropped and reported as StaleCacheError.
import type { Doc, Progress, Qrels, Query } from '../../core/types';
import {
  buildDocDirectory,
  factCounter,
  isDocDirectory,
  type DocDirectory,
  type DocFacts,
} from '../../core/shard/doc-directory';
import { docBatches, loadQueries } from './shard-batches';
import { allChunkRecords, chunkRecords } from './stored-chunks';
import {
  DOCS_PER_CHUNK,
  hashRange,
  qrelsOf,
  StaleCacheError,
  type ShardStore,
  type ShardSummary,
} from './shard-store';

/** The artifact kind and key of a shard's document directory and facts. */
export const DOC_INDEX_KIND = 'doc-index';
const DOC_INDEX_KEY = 'v1';

export interface DocIndex {
  dir: DocDirectory;
  facts: DocFacts;
}

/** Drops the shard and rethrows `e` as StaleCacheError (the shard must be imported again). */
async function stale(store: ShardStore, hash: string, e: unknown, name?: string): Promise<never> {
  await store.delete(hash).catch(() => undefined);
  throw new StaleCacheError(hash, (e as Error)?.message || String(e), name);
}

/** A cached shard's summary, queries and qrels, checked; not its documents. */
export async function loadShardHead(
  store: ShardStore,
  hash: string,
): Promise<{ summary: ShardSummary; queries: Query[]; qrels: Qrels }> {
  const { summary, queries } = await loadQueries(store, hash);
  const db = await store.db();
  const meta = await db.get('shards', hash);
  if (!meta) throw new StaleCacheError(hash, 'not in the cache');
  try {
    const triples = allChunkRecords(
      'qrels',
      await db.getAll('qrels', hashRange(hash)),
      meta.chunks.qrels,
      meta.counts.qrels,
      meta.sums?.qrels,
    );
    const qrels = qrelsOf(triples);
    const images = await db.count('images', hashRange(hash));
    if (images !== meta.counts.images)
      throw new Error(`images: ${images} stored, ${meta.counts.images} expected`);
    return { summary, queries, qrels };
  } catch (e) {
    return stale(store, hash, e, meta.name);
  }
}

/** The stored document index of a shard of `count` documents, or null (never built, or outdated). */
export async function loadDocIndex(store: ShardStore, hash: string, count: number): Promise<DocIndex | null> {
  const v = await store.getArtifact<DocIndex>(hash, DOC_INDEX_KIND, DOC_INDEX_KEY);
  return v && isDocDirectory(v.dir, count) && v.facts?.docs === count ? v : null;
}

/**
 * Scans the stored corpus once (10 chunks per read) and stores its directory and facts. `queryImages`:
 * the images of the shard's queries (facts name the documents that share one).
 */
export async function buildDocIndex(
  store: ShardStore,
  hash: string,
  queryImages: ReadonlySet<string>,
  onProgress?: (p: Progress) => void,
): Promise<DocIndex> {
  const summary = await store.summary(hash);
  if (!summary) throw new StaleCacheError(hash, 'not in the cache');
  const total = summary.counts.docs;
  const ids: string[] = [];
  const counter = factCounter(queryImages);
  onProgress?.({ kind: 'index', done: 0, total, what: 'ids' });
  for await (const batch of docBatches(store, hash)) {
    for (const d of batch) {
      ids.push(d.id);
      counter.add(d);
    }
    onProgress?.({ kind: 'index', done: ids.length, total, what: 'ids' });
  }
  const index: DocIndex = { dir: buildDocDirectory(ids), facts: counter.facts() };
  await store.putArtifact(hash, DOC_INDEX_KIND, DOC_INDEX_KEY, index);
  return index;
}

/**
 * Documents at corpus `rows` of a cached shard, read a stored chunk at a time and checked against the
 * shard's checksums. Rows past the end are skipped.
 */
export async function readDocRows(
  store: ShardStore,
  hash: string,
  rows: Iterable<number>,
): Promise<Map<number, Doc>> {
  const db = await store.db();
  const meta = await db.get('shards', hash);
  if (!meta || meta.complete !== true) throw new StaleCacheError(hash, 'not in the cache');
  const byChunk = new Map<number, number[]>();
  for (const r of rows) {
    if (r < 0 || r >= meta.counts.docs) continue;
    const c = Math.floor(r / DOCS_PER_CHUNK);
    const list = byChunk.get(c);
    if (list) list.push(r);
    else byChunk.set(c, [r]);
  }
  const out = new Map<number, Doc>();
  try {
    const tx = db.transaction('docs', 'readonly');
    const chunks = [...byChunk.keys()];
    const got = await Promise.all(chunks.map((c) => tx.store.get([hash, c])));
    chunks.forEach((c, i) => {
      const records = chunkRecords('documents', got[i], c, meta.sums?.docs[c]);
      for (const row of byChunk.get(c)!) {
        const d = records[row - c * DOCS_PER_CHUNK] as Doc | undefined;
        if (typeof d?.id !== 'string') throw new Error('documents: a record is damaged');
        out.set(row, d);
      }
    });
  } catch (e) {
    return stale(store, hash, e, meta.name);
  }
  return out;
}
