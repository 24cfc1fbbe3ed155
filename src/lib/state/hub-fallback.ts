// A hub model whose files cannot be downloaded: the hub counts as down, and the action runs once more
// with a model of the same role that loads without it (cached, self-hosted or generated), saying so
// in one line (StorageState.fellBack; the line goes when a later action succeeds).
import { MODEL_FETCH_FAILED, type ModelSpec } from '../core/retrieval/models';
import type { StorageState } from './storage.svelte';

/** The model to run with instead of `spec` after error `e`, or null (not a hub download failure, or none). */
export async function hubFallback(
  storage: StorageState,
  e: unknown,
  spec: ModelSpec,
): Promise<ModelSpec | null> {
  if ((e as { name?: string } | null)?.name !== MODEL_FETCH_FAILED || spec.local) return null;
  await storage.hubFailed();
  const alt = storage.usable(spec);
  if (!alt || alt.id === spec.id) return null;
  storage.fellBack(spec, alt);
  return alt;
}
