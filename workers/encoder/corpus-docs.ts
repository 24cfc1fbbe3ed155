// The documents of a cached shard as the corpus-embedding job needs them: their ids and which have
// the part (text or image), read chunk by chunk (platform/storage/shard-batches.ts) so that the texts of a
// million documents are never held at once; the documents themselves are loaded only when a batch
// must be embedded (precomputed rows and stored batches need none).
import type { Doc, EmbedPart } from '../../src/lib/core/types';
import { hasPart } from '../../src/lib/core/retrieval/corpus-batches';
import { docBatches } from '../../src/lib/platform/storage/shard-batches';
import type { ShardStore } from '../../src/lib/platform/storage/shard-store';
import {
  PackedStringsBuilder,
  packedCount,
  packedEquals,
  type PackedStrings,
} from '../../src/lib/core/retrieval/packed-ids';

export interface CorpusDocs {
  /** Document ids in shard order, packed (a million JS strings were about 137 MiB of this worker's heap). */
  ids: PackedStrings;
  /** Indices (shard order) of the documents that have the part, and of those that do not. */
  rows: number[];
  missingRows: number[];
  /** Every document (loaded once, on the first call). */
  full(): Promise<Doc[]>;
}

/** Ids and part flags of a cached shard's documents, read in chunks; full() loads the documents. */
export async function corpusDocs(db: ShardStore, hash: string, part: EmbedPart): Promise<CorpusDocs> {
  const packer = new PackedStringsBuilder();
  const rows: number[] = [];
  const missingRows: number[] = [];
  for await (const batch of docBatches(db, hash))
    for (const d of batch) {
      (hasPart(d, part) ? rows : missingRows).push(packer.length);
      packer.push(d.id);
    }
  const ids = packer.finish();
  let docs: Promise<Doc[]> | null = null;
  const full = () => {
    docs ??= db.load(hash).then((s) => {
      // The shard changed between the two reads (it was imported again): its rows would not match.
      if (s.docs.length !== packedCount(ids) || s.docs.some((d, i) => !packedEquals(ids, i, d.id)))
        throw new Error(`the documents of shard ${hash.slice(0, 12)} changed while they were embedded`);
      return s.docs;
    });
    return docs;
  };
  return { ids, rows, missingRows, full };
}
