// Shards opened "remote-first" (issue 19): a packed shard on a static host whose corpus is not
// imported (platform/remote-shard.ts, run in the shard worker). This holds their packed index sets,
// which dense-remote.ts asks before the cache, so that dense queries go through the packed index.
import { precomputedKey, type RemoteIvfSet } from '../core/shard/precomputed';
import type { RemoteShardHead } from '../platform/remote-shard';
import type { ShardIssue } from '../core/shard/source';
import { openRemoteShard } from '../clients/shard-client';

/** Packed index sets of the shards open remote-first, by shard hash, then precomputedKey. */
const remoteSets = new Map<string, Map<string, RemoteIvfSet>>();

/** The packed index sets of a shard opened remote-first (undefined for any other shard). */
export function remoteFirstSets(hash: string): Map<string, RemoteIvfSet> | undefined {
  return remoteSets.get(hash);
}

/** Forgets a remote-first shard's sets (it was closed or imported). */
export function forgetRemoteFirst(hash: string): void {
  remoteSets.delete(hash);
}

/**
 * Opens the shard at `url` remote-first (its sets are held here), or null: it is imported as usual.
 * Problems in the files read come back as issues.
 */
export async function openRemoteFirst(
  url: string,
  signal?: AbortSignal,
): Promise<RemoteShardHead | { issues: ShardIssue[] } | null> {
  const head = await openRemoteShard(url, { signal });
  if (head && !('issues' in head))
    remoteSets.set(
      head.summary.hash,
      new Map(head.ivf.map((s) => [precomputedKey(s.sidecar.model_id, s.sidecar.dtype, s.sidecar.part), s])),
    );
  return head;
}
