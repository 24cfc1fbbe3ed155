// Remembered Parquet column mappings, one per dataset identity (ParquetInspection.identity), in the
// page's localStorage: a mapping the user confirmed is offered again the next time the same dataset
// (same source name, files and columns) is opened. Nothing here touches the shard cache.
import { PARQUET_MAPPING_VERSION, type ParquetMapping } from '../../core/media/parquet/mapping';
import type { ParquetInspection } from '../../core/media/parquet/read-parquet';

/** localStorage key prefix of remembered mappings. */
export const PARQUET_MAPPING_KEY_PREFIX = 'loupe:parquet-mapping:';

/** The storage used (localStorage in the page); a parameter so tests and workers can pass another. */
type KeyValueStore = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

function defaultStore(): KeyValueStore | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    // Storage disabled (privacy settings): mappings are simply not remembered.
    return null;
  }
}

/** Stores the mapping the user confirmed for a dataset. */
export function rememberParquetMapping(
  identity: string,
  mapping: ParquetMapping,
  store: KeyValueStore | null = defaultStore(),
): void {
  try {
    store?.setItem(PARQUET_MAPPING_KEY_PREFIX + identity, JSON.stringify(mapping));
  } catch (e) {
    console.warn('loupe: could not remember the Parquet column mapping', e);
  }
}

/** The remembered mapping of a dataset, or null (none, unreadable, or of an older mapping version). */
export function recallParquetMapping(
  identity: string,
  store: KeyValueStore | null = defaultStore(),
): ParquetMapping | null {
  const raw = store?.getItem(PARQUET_MAPPING_KEY_PREFIX + identity);
  if (!raw) return null;
  try {
    const m = JSON.parse(raw) as ParquetMapping;
    return m && m.version === PARQUET_MAPPING_VERSION && m.corpus && m.query && m.qrels ? m : null;
  } catch {
    return null;
  }
}

/** The mapping to show for confirmation: the remembered one when there is one, else the detected one. */
export function initialParquetMapping(
  inspection: ParquetInspection,
  store: KeyValueStore | null = defaultStore(),
): { mapping: ParquetMapping; remembered: boolean } {
  const m = recallParquetMapping(inspection.identity, store);
  return m ? { mapping: m, remembered: true } : { mapping: inspection.mapping, remembered: false };
}
