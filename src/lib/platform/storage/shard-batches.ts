// Reading a cached shard without loading all of it (shard-store.ts holds the layout): its documents
// in batches of stored chunks, in corpus order, and its queries alone. What the retrieval worker
// builds BM25 from, so a million documents are never in memory at once. Every chunk is checked as
// ShardStore.load checks it (chunk numbers, counts, checksums); a damaged shard is dropped and
// reported as StaleCacheError.
import type { Doc, Query } from '../../core/types';
import { hashRange, StaleCacheError, type ShardStore, type ShardSummary } from './shard-store';
import { allChunkRecords, chunkRecords } from './stored-chunks';

/** Drops the shard and rethrows `e` as StaleCacheError (the shard must be imported again). */
async function stale(store: ShardStore, hash: string, e: unknown, name?: string): Promise<never> {
  await store.delete(hash).catch(() => undefined);
  throw new StaleCacheError(hash, (e as Error)?.message || String(e), name);
}

/**
 * A cached shard's documents in corpus order, `chunksPerBatch` stored chunks (DOCS_PER_CHUNK
 * documents each) per yielded batch, one IndexedDB read each.
 */
export async function* docBatches(
  store: ShardStore,
  hash: string,
  chunksPerBatch = 10,
): AsyncGenerator<Doc[]> {
  const db = await store.db();
  const meta = await db.get('shards', hash);
  if (!meta || meta.complete !== true) throw new StaleCacheError(hash, 'not in the cache');
  let count = 0;
  for (let from = 0; from < meta.chunks.docs; from += chunksPerBatch) {
    const to = Math.min(meta.chunks.docs, from + chunksPerBatch);
    const batch: Doc[] = [];
    try {
      const rows = await db.getAll('docs', IDBKeyRange.bound([hash, from], [hash, to - 1]));
      for (let c = from; c < to; c++) {
        for (const d of chunkRecords('documents', rows[c - from], c, meta.sums?.docs[c])) {
          if (typeof d?.id !== 'string') throw new Error('documents: a record is damaged');
          batch.push(d);
        }
      }
      count += batch.length;
      if (to === meta.chunks.docs && count !== meta.counts.docs)
        throw new Error(`documents: ${count} records stored, ${meta.counts.docs} expected`);
    } catch (e) {
      await stale(store, hash, e, meta.name);
    }
    yield batch;
  }
}

/** A cached shard's summary and queries, without its documents. */
export async function loadQueries(
  store: ShardStore,
  hash: string,
): Promise<{ summary: ShardSummary; queries: Query[] }> {
  const db = await store.db();
  const meta = await db.get('shards', hash);
  const summary = await store.summary(hash);
  if (!meta || !summary) throw new StaleCacheError(hash, 'not in the cache');
  try {
    const queries: Query[] = allChunkRecords(
      'queries',
      await db.getAll('queries', hashRange(hash)),
      meta.chunks.queries,
      meta.counts.queries,
      meta.sums?.queries,
      (q) => typeof q?.id === 'string',
    );
    return { summary, queries };
  } catch (e) {
    return stale(store, hash, e, meta.name);
  }
}
