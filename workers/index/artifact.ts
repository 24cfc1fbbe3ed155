// The persisted HNSW graph (a shard artifact): its key, the header of hnswlib's own bytes, and the
// checks (format version, parameters, vectors' and bytes' SHA-256) a stored graph must pass before
// it is loaded; any failure means a rebuild.
import { hnswlibHeader } from '../../src/lib/core/retrieval/hnsw-header';
import type { IndexArtifact, IndexHeader, Space } from './types';

/** INDEX_FORMAT_VERSION: version of the persisted artifact (header + bytes). Bump on any change. */
export const INDEX_FORMAT_VERSION = 2;

/** Hex SHA-256 of a buffer. */
export async function sha256Hex(data: ArrayBufferView | ArrayBuffer): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', data as BufferSource));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The shard-artifact key of a graph: (embeddings key, space, M, efConstruction). */
export function hnswArtifactKey(key: string, space: Space, M: number, efConstruction: number): string {
  return `${key}|space=${space}|M=${M}|efC=${efConstruction}`;
}

/** Why a stored artifact cannot be used for this request, or null when it can. */
export async function checkArtifact(
  art: unknown,
  want: Omit<IndexHeader, 'format' | 'byteLength' | 'sha256' | 'engine' | 'createdAt'>,
): Promise<string | null> {
  const a = art as Partial<IndexArtifact> | null;
  const h = a?.header;
  if (!h || typeof h !== 'object' || !(a?.bytes instanceof ArrayBuffer)) return 'stored entry is malformed';
  if (h.format !== 'loupe-hnsw' || h.version !== want.version)
    return `format ${String(h.format)} v${h.version} (expected v${want.version})`;
  for (const f of ['count', 'dim', 'space', 'M', 'efConstruction', 'seed'] as const)
    if (h[f] !== want[f]) return `${f} is ${String(h[f])}, expected ${String(want[f])}`;
  if (h.vectorsSha256 !== want.vectorsSha256) return 'built from different vectors';
  if (h.byteLength !== a.bytes.byteLength)
    return `${a.bytes.byteLength} bytes stored, header says ${h.byteLength}`;
  if ((await sha256Hex(a.bytes)) !== h.sha256) return 'checksum mismatch (corrupted bytes)';
  const inner = hnswlibHeader(new Uint8Array(a.bytes));
  if (inner.count !== want.count || inner.M !== want.M || inner.efConstruction !== want.efConstruction)
    return 'hnswlib header disagrees with ours';
  return null;
}
