// A fresh visit by link to a shard on a static host (issue 19): when the link names the Search view's
// model (`search-model=`) and the shard opens remote-first (its shard.json names an offsets file and
// a packed index), the query encoder starts loading then, before its queries and qrels are read. Both
// wait on the network, so pressing Search finds the model loaded instead of starting its download
// then. A small shard that is imported (a demo, a course's shard) loads the model while it imports,
// for the same reason: a first image + text result within 3 s (issue 20). A large one does not: its
// import takes long enough that the model's load is a small part of the wait, and the model's memory
// would come on top of the import's (the tab's 1 GB budget at a million documents). A model picked
// after the shard opens tells its own story of loading on the first query.
import type { Dtype } from '../core/retrieval/models';
import { startEncoderWorker } from '../clients/encoder-client';
import type { Device } from '../platform/gpu/backend';
import type { ShardHead } from '../platform/sources/remote-shard';
import type { Retrievers } from './retrievers.svelte';
import type { SearchState } from './search.svelte';
import type { View } from './view-url';

/**
 * Starts the encoder worker for the Search view's model a link names while its shard opens, so that
 * the worker's scripts load beside the shard's manifest rather than after it.
 */
export function startSearchModelWorker(v: Pick<View, 'searchModel'>): void {
  if (namesSearchModel(v)) startEncoderWorker();
}

/** Whether a link names a Search model that loads (not BM25). */
export function namesSearchModel<V extends Pick<View, 'searchModel'>>(
  v: V,
): v is V & { searchModel: string } {
  return !!v.searchModel && v.searchModel !== 'bm25';
}

/**
 * Documents up to which a shard imported by link loads the Search view's model while it imports
 * (more: the model loads on the first query). At this size an import takes seconds, and the tab holds
 * tens of MB for it.
 */
export const PRELOAD_IMPORT_MAX_DOCS = 20_000;

/**
 * Starts loading the Search view's model a link names, with the device and dtype the link names (set
 * now, as applyViewSettings sets them once the shard is open), so that the query asks for the very
 * same encoder: the device/dtype policy decides as it does for the query itself. Only for a shard
 * opened remote-first, or imported with at most PRELOAD_IMPORT_MAX_DOCS documents stated in its
 * shard.json; at dtype auto, the model loads at the dtype of the shard's set for it (`head.sets`).
 */
export function preloadSearchModel(
  app: { readonly retrievers: Retrievers; readonly search: SearchState },
  v: Pick<View, 'searchModel' | 'device' | 'dtype'>,
  head: ShardHead,
): void {
  if (!namesSearchModel(v)) return;
  if (!head.remoteFirst && (head.docs === null || head.docs > PRELOAD_IMPORT_MAX_DOCS)) return;
  const r = app.retrievers;
  if (v.device === 'webgpu' || v.device === 'wasm' || v.device === 'auto') r.device = v.device as Device;
  if (v.dtype) r.dtype = v.dtype as Dtype | 'auto';
  app.search.preload(v.searchModel, head.sets);
}
