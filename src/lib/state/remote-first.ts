// Shards opened "remote-first" (issue 19): a packed shard on a static host whose corpus is not
// imported (platform/sources/remote-shard.ts, run in the shard worker). This holds their packed index sets,
// which dense-sets.ts asks before the cache, so that dense queries go through the packed index.
import { precomputedKey, type RemoteIvfSet } from '../core/shard/precomputed';
import type { RemoteShardHead, ShardHead } from '../platform/sources/remote-shard';
import type { ShardIssue } from '../core/shard/source';
import type { ProgressFn } from '../core/types';
import { openRemoteShard, readRemoteDocs, remoteRowsOf } from '../clients/shard-client';
import { searchRemoteIvf } from '../clients/index-client';
import type { DocDirectory } from '../core/shard/doc-directory';
import type { DocLookup } from './shard-docs.svelte';

/**
 * The ids of a shard opened with a version 2 offsets file, as far as they were looked up by Range
 * (ShardDocs asks it) or learned from the documents a dense query's rows are (rowIds).
 */
class RemoteDocLookup implements DocLookup {
  #rows = new Map<string, number>();
  constructor(
    readonly url: string,
    readonly count: number,
  ) {}

  known(id: string): number | undefined {
    return this.#rows.get(id);
  }

  async lookup(ids: string[]): Promise<void> {
    const want = ids.filter((id) => !this.#rows.has(id));
    if (!want.length) return;
    const found = await remoteRowsOf(this.url, want);
    for (const id of want) this.#rows.set(id, found.get(id) ?? -1);
  }

  /** The ids of corpus `rows` (their lines read by Range; the worker keeps the documents to show). */
  async rowIds(rows: number[]): Promise<Map<number, string>> {
    const docs = await readRemoteDocs(this.url, rows);
    const out = new Map<number, string>();
    for (const [r, d] of docs) {
      out.set(r, d.id);
      this.#rows.set(d.id, r);
    }
    return out;
  }
}

const lookups = new Map<string, RemoteDocLookup>();
/** Per shard: its packed indexes' headers being read ahead of the first query (never rejects). */
const warming = new Map<string, Promise<void>>();

/** Resolves once the packed index headers read at open are in (a query waits: no second read). */
export function remoteFirstWarm(hash: string): Promise<void> | undefined {
  return warming.get(hash);
}

/**
 * Reads each packed index's header (centroids and list directory, a few MB) now, while the Search
 * view's model loads: an empty query matrix makes the index worker read the header and stop.
 */
function warmIndexes(sets: RemoteIvfSet[]): Promise<void> {
  const t0 = performance.now();
  return Promise.all(
    sets.map((s) => searchRemoteIvf({ url: s.ivfUrl, vectorsUrl: s.vectorsUrl, k: 1 }, new Float32Array(0))),
  ).then(
    () => void performance.measure('loupe:preload:index-header', { start: t0, end: performance.now() }),
    () => undefined,
  );
}

/**
 * The ids of `rows` of the remote-first shard `hash`, or null when its sets list their ids (a set's
 * `doc_ids`) or it is not open remote-first.
 */
export function remoteFirstRowIds(hash: string, rows: number[]): Promise<Map<number, string>> | null {
  return lookups.get(hash)?.rowIds(rows) ?? null;
}

/** Packed index sets of the shards open remote-first, by shard hash, then precomputedKey. */
const remoteSets = new Map<string, Map<string, RemoteIvfSet>>();

/** The packed index sets of a shard opened remote-first (undefined for any other shard). */
export function remoteFirstSets(hash: string): Map<string, RemoteIvfSet> | undefined {
  return remoteSets.get(hash);
}

/** Forgets a remote-first shard's sets (it was closed or imported). */
export function forgetRemoteFirst(hash: string): void {
  remoteSets.delete(hash);
  lookups.delete(hash);
  warming.delete(hash);
}

/**
 * Opens the shard at `url` remote-first (its sets are held here), or null: it is imported as usual.
 * Problems in the files read come back as issues.
 */
export async function openRemoteFirst(
  url: string,
  signal?: AbortSignal,
  onHead?: (head: ShardHead) => void,
  onProgress?: ProgressFn,
): Promise<(RemoteShardHead & { finder: DocDirectory | DocLookup }) | { issues: ShardIssue[] } | null> {
  const head = await openRemoteShard(url, {
    signal,
    ...(onHead ? { onHead } : {}),
    ...(onProgress ? { onProgress } : {}),
  });
  if (!head || 'issues' in head) return head;
  remoteSets.set(
    head.summary.hash,
    new Map(head.ivf.map((s) => [precomputedKey(s.sidecar.model_id, s.sidecar.dtype, s.sidecar.part), s])),
  );
  warming.set(head.summary.hash, warmIndexes(head.ivf));
  // A version 2 offsets file: no directory of every id; ids are looked up when wanted.
  let finder: DocDirectory | DocLookup | undefined = head.dir;
  if (!finder) {
    const lookup = new RemoteDocLookup(url, head.summary.counts.docs);
    lookups.set(head.summary.hash, lookup);
    finder = lookup;
  }
  return { ...head, finder };
}
