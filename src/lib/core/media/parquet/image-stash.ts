// Where the images of image columns wait between the row that holds them and the shard reader's check
// of them (after all rows): the worker keeps them in Blobs, the default in memory.

/**
 * Where image bytes from image columns wait until the shard reader checks them (after all rows). The
 * worker keeps them in Blobs (which the browser may spill to disk); the default holds them in memory.
 */
export interface ImageStash {
  /** Keeps a copy of `bytes` (the caller's buffer is reused afterwards). */
  put(path: string, bytes: Uint8Array): void;
  /** The bytes put under `path`, or null. */
  take(path: string): Promise<Uint8Array | null>;
}

/** The default ImageStash: copies in a Map, each dropped once taken. */
export function memoryImageStash(): ImageStash {
  const m = new Map<string, Uint8Array>();
  return {
    put: (path, bytes) => void m.set(path, bytes.slice()),
    take: async (path) => {
      const b = m.get(path) ?? null;
      m.delete(path);
      return b;
    },
  };
}
