// Queries with several images (multi-image items): every image embedded, then their mean or each
// a row of its own (state/dense.ts's embedQueries calls it).
import { chunkOffsets, meanOfChunks } from '../core/retrieval/chunking';
import { itemImagePaths } from '../core/retrieval/multi-image';
import { openShardStore } from '../platform/storage/shard-store';
import { embedImages } from '../clients/encoder-client';
import type { DenseQueries } from '../../../workers/retrieval.worker';
import type { Query } from '../core/types';
import type { MultiImage } from '../core/retrieval/multi-image';
import type { JobOptions } from '../clients/worker-client';

/** What the images of a task's queries need of a dense run's arguments. */
interface ImageQueryArgs {
  shardHash: string;
  queries: Query[];
  settings: { multiImage?: MultiImage };
  job: JobOptions;
}

/**
 * Queries with several images (`images`, or the extra images of an ad-hoc query): every image is
 * embedded; mean → the query's image vector is their normalised mean; max → each is a row of
 * `q.imageRows` (the retrieval worker scores a document by its best pair).
 */
export async function multiImageQueries(
  args: ImageQueryArgs,
  q: DenseQueries,
  dim: number,
  adhocExtra: Blob[][] | null,
): Promise<void> {
  const qs = args.queries;
  const extra: Blob[][] = adhocExtra ?? qs.map(() => []);
  if (!adhocExtra) {
    const store = await openShardStore();
    for (const [i, x] of qs.entries()) {
      const more = itemImagePaths(x).slice(1);
      if (!more.length || !q.hasImage[i]) continue;
      const blobs = await Promise.all(more.map((p) => store.getImage(args.shardHash, p)));
      extra[i] = blobs.filter((b): b is Blob => !!b);
    }
  }
  const todo = extra.flatMap((l, i) => (l.length && q.hasImage[i] ? [i] : []));
  if (!todo.length) return;
  const vecs = await embedImages(
    todo.flatMap((i) => extra[i]),
    args.job,
  );
  const counts = new Uint32Array(qs.length);
  const rows: Float32Array[] = [];
  let at = 0;
  for (const i of todo) {
    const n = extra[i].length + 1;
    const all = new Float32Array(n * dim);
    all.set(q.image!.subarray(i * dim, (i + 1) * dim), 0);
    all.set(vecs.subarray(at * dim, (at + n - 1) * dim), dim);
    at += n - 1;
    q.image!.set(meanOfChunks(all, [n], dim, true), i * dim);
    counts[i] = n;
    rows[i] = all;
  }
  if (args.settings.multiImage === 'max') {
    const offsets = chunkOffsets(counts);
    const vectors = new Float32Array(offsets[qs.length] * dim);
    for (const i of todo) vectors.set(rows[i], offsets[i] * dim);
    q.imageRows = { vectors, offsets };
  }
}
