// Where the shard worker keeps a Parquet dataset's image-column bytes until the shard reader checks
// them (after every row has been read): in Blobs, whose data the browser holds outside the worker's
// JavaScript heap (and may spill to disk), so an image dataset's first pass does not hold every image
// in the heap. The core default (memoryImageStash) keeps copies in memory.
import type { ImageStash } from '../../core/media/parquet/image-stash';

/** An ImageStash of Blobs: each image copied into a Blob when put, read back and dropped when taken. */
export function blobImageStash(): ImageStash {
  const blobs = new Map<string, Blob>();
  return {
    put: (path, bytes) => void blobs.set(path, new Blob([bytes as Uint8Array<ArrayBuffer>])),
    take: async (path) => {
      const blob = blobs.get(path);
      if (!blob) return null;
      blobs.delete(path);
      return new Uint8Array(await blob.arrayBuffer());
    },
  };
}
