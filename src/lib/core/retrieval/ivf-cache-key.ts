// The OPFS folder a packed IVF index is cached in (`loupe-ivf/<key>/`, workers/index/ivf-remote.ts):
// a hash of the index URL, so that the Storage panel can tell which shard a cached folder belongs to.

/** OPFS folder of the packed-index cache. */
export const IVF_CACHE_DIR = 'loupe-ivf';

/** The cache folder name of the index at `url`: two 32-bit FNV-style hashes, 16 hex digits. */
export function ivfCacheKey(url: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < url.length; i++) {
    h1 = Math.imul(h1 ^ url.charCodeAt(i), 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ url.charCodeAt(i), 0x5bd1e995) >>> 0;
  }
  return h1.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0');
}
