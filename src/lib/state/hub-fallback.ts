// A model whose files cannot be downloaded: a hub model's failure marks the hub down, and the action
// runs once more with a model of the same role that loads without it (cached, self-hosted or
// generated), saying so in one line (StorageState.fellBack; the line goes when a later action
// succeeds). With none, the error names the models of that role that load offline here.
import { MODEL_FETCH_FAILED, type ModelSpec } from '../core/retrieval/models';
import { modelRole } from '../platform/storage/offline';
import type { StorageState } from './storage.svelte';

/**
 * The model to run with instead of `spec` after error `e`: null when `e` is not a failed model
 * download; throws `e` with the offline choices when no model of the same role loads without the hub.
 */
export async function hubFallback(
  storage: StorageState,
  e: unknown,
  spec: ModelSpec,
): Promise<ModelSpec | null> {
  if ((e as { name?: string } | null)?.name !== MODEL_FETCH_FAILED) return null;
  if (!spec.local) await storage.hubFailed();
  const alt = spec.local ? null : storage.usable(spec);
  if (alt && alt.id !== spec.id) {
    storage.fellBack(spec, alt);
    return alt;
  }
  throw await withOfflineChoices(storage, e, spec);
}

/** A failed model download (other errors as they are) naming the models of `spec`'s role that load offline here. */
export async function withOfflineChoices(
  storage: StorageState,
  e: unknown,
  spec: ModelSpec,
): Promise<unknown> {
  if ((e as { name?: string } | null)?.name !== MODEL_FETCH_FAILED) return e;
  const list = (storage.offline ?? (await storage.listOffline()))
    .filter((m) => modelRole(m.spec) === modelRole(spec))
    .map((m) => `${m.spec.id} (${m.source})`);
  const err = new Error(
    `${(e as Error).message} ${list.length ? `Available offline here: ${list.join(', ')}.` : 'No model is available offline here.'}`,
  );
  err.name = MODEL_FETCH_FAILED;
  return err;
}
