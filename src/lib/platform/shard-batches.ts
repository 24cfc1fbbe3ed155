// Reading a cached shard without loading all of it (shard-store.ts holds the layout): its documents
// in batches of stored chunks, in corpus order, and its queries alone. What the retrieval worker
// builds BM25 from, so a million documents are never in memory at once. Every chunk is checked as
// ShardStore.load checks it (chunk numbers, counts, checksums); a damaged shard is dropped and
// reported as StaleCacheError.
import type { Doc, Query } from '../core/types';
import { fnv1a, hashRange, StaleCacheError, type ShardStore, type ShardSummary } from './shard-store';

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
        const r = rows[c - from];
        if (r?.chunkNo !== c || !Array.isArray(r.records))
          throw new Error(`documents: chunk ${c} is damaged`);
        if (meta.sums && fnv1a(JSON.stringify(r.records)) !== meta.sums.docs[c])
          throw new Error(`documents: chunk ${c} does not match its checksum (its bytes were changed)`);
        for (const d of r.records) {
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
    const rows = await db.getAll('queries', hashRange(hash));
    if (rows.length !== meta.chunks.queries)
      throw new Error(`queries: ${rows.length} chunks stored, ${meta.chunks.queries} expected`);
    const queries: Query[] = [];
    rows.forEach((r, i) => {
      if (r.chunkNo !== i || !Array.isArray(r.records)) throw new Error(`queries: chunk ${i} is damaged`);
      if (meta.sums && fnv1a(JSON.stringify(r.records)) !== meta.sums.queries[i])
        throw new Error(`queries: chunk ${i} does not match its checksum (its bytes were changed)`);
      for (const q of r.records) {
        if (typeof q?.id !== 'string') throw new Error('queries: a record is damaged');
        queries.push(q);
      }
    });
    if (queries.length !== meta.counts.queries)
      throw new Error(`queries: ${queries.length} records stored, ${meta.counts.queries} expected`);
    return { summary, queries };
  } catch (e) {
    return stale(store, hash, e, meta.name);
  }
}
