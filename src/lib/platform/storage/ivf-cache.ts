// What the packed-index cache holds in OPFS (`loupe-ivf/<key>/`, written by the index worker's
// workers/index/ivf-remote.ts): files and bytes per cached index, for the Storage panel.
import { IVF_CACHE_DIR } from '../../core/retrieval/ivf-cache-key';

/** One cached index folder. */
export interface IvfCacheFolder {
  files: number;
  bytes: number;
}

type Entries = AsyncIterable<[string, FileSystemHandle]>;

/** Every cached index folder by key (empty when OPFS is missing or holds none). */
export async function listIvfCache(): Promise<Map<string, IvfCacheFolder>> {
  const out = new Map<string, IvfCacheFolder>();
  const storage = globalThis.navigator?.storage;
  if (!storage?.getDirectory) return out;
  try {
    const root = await storage.getDirectory();
    const dir = await root.getDirectoryHandle(IVF_CACHE_DIR).catch(() => null);
    if (!dir) return out;
    for await (const [key, h] of (dir as unknown as { entries(): Entries }).entries()) {
      if (h.kind !== 'directory') continue;
      const folder = { files: 0, bytes: 0 };
      for await (const [name, f] of (h as unknown as { entries(): Entries }).entries()) {
        // Chromium writes through `<name>.crswap` until the write closes: not an entry of the cache yet.
        if (f.kind !== 'file' || name.startsWith('.') || name.endsWith('.crswap')) continue;
        folder.files++;
        // A file the index worker is writing right now may refuse to be read: count it, size unknown
        // (0), rather than lose the whole folder.
        folder.bytes += await (f as FileSystemFileHandle)
          .getFile()
          .then((file) => file.size)
          .catch(() => 0);
      }
      out.set(key, folder);
    }
  } catch {
    // OPFS unavailable (a private window): nothing cached.
  }
  return out;
}
