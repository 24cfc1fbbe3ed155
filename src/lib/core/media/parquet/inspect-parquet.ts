// A Parquet dataset looked at before import: its files' footers (no row data but one small `modality`
// sample), the detected layout and column mapping, the splits that can be judged, and a stable identity
// under which the mapping the user chose is remembered.

import { ShardValidationError, type ShardSource } from '../../shard/source';
import { ANY_SPLIT, detectParquetMapping, type ParquetFileInfo, type ParquetMapping } from './mapping';
import { modalityColumn, openAll } from './parquet-files';

/** What {@link inspectParquet} found: the files, the detected mapping and the dataset's identity. */
export interface ParquetInspection {
  label: string;
  files: ParquetFileInfo[];
  /** Splits that have both query and qrels files. */
  splits: string[];
  /** The detected mapping (edit it, then pass it to the import). */
  mapping: ParquetMapping;
  /** Stable key of the dataset (source label + files + columns): where its mapping is remembered. */
  identity: string;
}

/** FNV-1a over a string, as 8 hex digits: a short, stable key (not a security hash). */
function fnv(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** The .parquet files of a listing, sorted. */
function parquetPaths(listing: string[]): string[] {
  return listing.filter((p) => /\.parquet$/i.test(p)).sort();
}

/**
 * Reads the footers of a Parquet dataset's files (no row data but one small `modality` sample) and
 * detects the layout and the column mapping. Throws ShardValidationError when a file is not Parquet.
 */
export async function inspectParquet(source: ShardSource): Promise<ParquetInspection> {
  const listing = await source.list();
  if (!listing)
    throw new ShardValidationError([
      {
        file: source.label,
        code: 'unknown-format',
        message: `${source.label} cannot be listed: give the Parquet files' paths (a hub resolve/ URL is listed through the hub's API)`,
      },
    ]);
  const paths = parquetPaths(listing);
  if (paths.length === 0)
    throw new ShardValidationError([
      { file: source.label, code: 'unknown-format', message: `${source.label} holds no .parquet files` },
    ]);
  const files = await openAll(source, paths);
  const byRole = (r: string) => files.filter((f) => f.info.role === r);
  const infos = files.map((f) => f.info);
  const mapping = detectParquetMapping(infos, {
    name:
      source.label
        .replace(/\/+$/, '')
        .split('/')
        .pop()!
        .replace(/\.zip$/i, '') || source.label,
    modalityColumns: {
      corpus: await modalityColumn(byRole('corpus')),
      query: await modalityColumn(byRole('query')),
    },
  });
  const querySplits = new Set(byRole('query').map((f) => f.info.split));
  const splits = [...new Set(byRole('qrels').map((f) => f.info.split))]
    .filter((s) => querySplits.has(s) || querySplits.has(ANY_SPLIT))
    .sort();
  const identity = `parquet:${source.label}:${fnv(
    infos.map((f) => `${f.path}\t${f.columns.map((c) => `${c.name}:${c.kind}`).join(',')}`).join('\n'),
  )}`;
  return { label: source.label, files: infos, splits, mapping, identity };
}
