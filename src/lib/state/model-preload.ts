// A fresh visit by link to a shard on a static host (issue 19): when the link names the Search view's
// model (`search-model=`) and the shard opens remote-first (its shard.json names an offsets file and
// a packed index), the query encoder starts loading then, before its queries and qrels are read. Both
// wait on the network, so pressing Search finds the model loaded instead of starting its download
// then. A shard that is imported keeps the first query's story of loading the model.
import type { Dtype } from '../core/retrieval/models';
import { startEncoderWorker } from '../clients/encoder-client';
import type { Device } from '../platform/gpu/backend';
import type { RemoteFirstSetName } from '../platform/sources/remote-shard';
import type { Retrievers } from './retrievers.svelte';
import type { SearchState } from './search.svelte';
import type { View } from './view-url';

/**
 * Starts the encoder worker for the Search view's model a link names while its shard opens, so that
 * the worker's scripts load beside the shard's manifest rather than after it.
 */
export function startSearchModelWorker(v: Pick<View, 'searchModel'>): void {
  if (v.searchModel && v.searchModel !== 'bm25') startEncoderWorker();
}

/**
 * Starts loading the Search view's model a link names, with the device and dtype the link names (set
 * now, as applyViewSettings sets them once the shard is open), so that the query asks for the very
 * same encoder: the device/dtype policy decides as it does for the query itself.
 */
export function preloadSearchModel(
  app: { readonly retrievers: Retrievers; readonly search: SearchState },
  v: Pick<View, 'searchModel' | 'device' | 'dtype'>,
  /** The models and dtypes of the shard's sets: at dtype auto, the model loads at its set's dtype. */
  sets: readonly RemoteFirstSetName[] = [],
): void {
  if (!v.searchModel || v.searchModel === 'bm25') return;
  const r = app.retrievers;
  if (v.device === 'webgpu' || v.device === 'wasm' || v.device === 'auto') r.device = v.device as Device;
  if (v.dtype) r.dtype = v.dtype as Dtype | 'auto';
  app.search.preload(v.searchModel, sets);
}
