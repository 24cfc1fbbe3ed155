// Whether a source is a Parquet dataset, apart from the Parquet reader: the shard worker asks this of
// every import and loads hyparquet and its codecs only when the answer is yes.
import type { ShardSource } from '../../shard/source';

/** Whether a source holds a Parquet dataset rather than a JSONL shard (listable sources only). */
export async function isParquetSource(source: ShardSource): Promise<boolean> {
  const paths = await source.list();
  if (!paths) return false;
  const jsonl = paths.some((p) => p === 'shard.json' || p === 'corpus.jsonl');
  return !jsonl && paths.some((p) => /\.parquet$/i.test(p));
}
