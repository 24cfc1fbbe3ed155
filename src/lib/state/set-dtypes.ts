// Which dtypes the open shard has embeddings of a model for (issue 19): its precomputed sets and
// packed indexes are made for queries embedded at one dtype, and a dense run or query at dtype `auto`
// asks the encoder for one of those (platform/gpu/backend.ts chooseBackend's setDtypes) instead of the
// device's default. A hub model's WASM default is q8, while sentence-transformers writes fp32 vectors:
// without this, an fp32 set would be left unused and the corpus embedded in the browser.
import type { Dtype, ModelSpec } from '../core/retrieval/models';
import { PRECOMPUTED_KIND, REMOTE_IVF_KIND } from '../core/shard/precomputed';
import type { LoadOptions } from '../clients/encoder-client';
import type { Device } from '../platform/gpu/backend';
import type { RemoteFirstSetName } from '../platform/sources/remote-shard';
import { openShardStore } from '../platform/storage/shard-store';
import { remoteFirstSets } from './remote-first';

/**
 * The dtypes of `spec` among sets named `model|dtype|part` (precomputedKey; stored pieces carry a
 * `#…` suffix and are skipped), in the model's own order, each once; only dtypes the model offers.
 */
export function setDtypesOf(sets: readonly RemoteFirstSetName[], spec: ModelSpec): Dtype[] {
  return spec.dtypes.filter((d) => sets.some((s) => s.model_id === spec.id && s.dtype === d));
}

/** `model|dtype|part` keys as model and dtype (pieces, `key#rows3`, are skipped). */
export function parseSetKeys(keys: readonly string[]): RemoteFirstSetName[] {
  return keys.flatMap((k) => {
    if (k.includes('#')) return [];
    const parts = k.split('|');
    if (parts.length < 3) return [];
    return [{ model_id: parts.slice(0, -2).join('|'), dtype: parts[parts.length - 2] }];
  });
}

/** The dtypes the shard `hash` has embeddings of `spec` for: held remote-first sets, else the cache's. */
export async function shardSetDtypes(hash: string, spec: ModelSpec): Promise<Dtype[]> {
  const held = remoteFirstSets(hash);
  if (held) return setDtypesOf(parseSetKeys([...held.keys()]), spec);
  let store: Awaited<ReturnType<typeof openShardStore>> | undefined;
  try {
    store = await openShardStore({ sweep: false });
    const keys = [
      ...(await store.artifactKeys(hash, PRECOMPUTED_KIND)),
      ...(await store.artifactKeys(hash, REMOTE_IVF_KIND)),
    ];
    return setDtypesOf(parseSetKeys(keys), spec);
  } catch {
    // No cache (a private window without IndexedDB): no sets to match.
    return [];
  } finally {
    await store?.close();
  }
}

/**
 * The load options of a dense run or query: the same object shape everywhere (the encoder client
 * keys a loaded model by it), with the shard's set dtypes only when the dtype is `auto`.
 */
export function denseLoadOptions(
  s: {
    device: 'auto' | Device;
    dtype: 'auto' | Dtype;
    simulateWebGpuFailure?: boolean;
    simulateParityMismatch?: boolean;
  },
  setDtypes: Dtype[],
): LoadOptions {
  return {
    device: s.device,
    dtype: s.dtype,
    simulateWebGpuFailure: s.simulateWebGpuFailure,
    simulateParityMismatch: s.simulateParityMismatch,
    ...(s.dtype === 'auto' && setDtypes.length ? { setDtypes } : {}),
  };
}
