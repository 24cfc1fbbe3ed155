// The retrieval worker's BM25 index in IndexedDB, written in pieces: the head record (the snapshot's
// header and its buffers' sizes) under kind 'bm25', and the buffers' bytes in records of at most
// BM25_PIECE_BYTES under kind 'bm25-piece'. One record of the whole snapshot (about 160 MB at 1M
// documents) made IndexedDB's structured clone hold a second copy of the index in the worker while
// it was stored, at the top of the tab's memory (BENCHMARKS.md, the scale ladder). The head is
// written last, so an index whose writing stopped half-way has none and is rebuilt. Heads of the
// whole-record layout (with `buffers`) are still read as they are.
import type { SerializedBm25, Bm25Meta } from '../../core/retrieval/bm25-store';
import type { ShardStore } from './shard-store';

/** Bytes per stored piece of a BM25 index buffer. */
export const BM25_PIECE_BYTES = 8 * 2 ** 20;
const KIND = 'bm25';
const PIECE_KIND = 'bm25-piece';

/** The head record of an index stored in pieces (one stored whole has `buffers` instead). */
interface StoredHead {
  meta: Bm25Meta;
  pieces?: { bytes: number; sizes: number[] };
  buffers?: ArrayBuffer[];
}

const pieceKey = (key: string, buffer: number, piece: number) => `${key}#${buffer}.${piece}`;
const pieceCount = (size: number, bytes: number) => Math.ceil(size / bytes);

/** Deletes the pieces that `head` names (none for a whole-record head). */
async function deletePieces(store: ShardStore, hash: string, key: string, head: StoredHead | undefined) {
  const p = head?.pieces;
  if (!p || !Array.isArray(p.sizes)) return;
  for (let b = 0; b < p.sizes.length; b++)
    for (let j = 0; j < pieceCount(p.sizes[b], p.bytes); j++)
      await store.deleteArtifact(hash, PIECE_KIND, pieceKey(key, b, j)).catch(() => undefined);
}

/**
 * Stores a serialized index under `key`, a piece at a time through one scratch buffer (IndexedDB
 * clones each piece when it is put, so the scratch is reused: no copy of the index is made), the
 * head last. On an error nothing of it stays.
 */
export async function putBm25(
  store: ShardStore,
  hash: string,
  key: string,
  data: SerializedBm25,
  pieceBytes = BM25_PIECE_BYTES,
): Promise<void> {
  const old = await store.getArtifact<StoredHead>(hash, KIND, key).catch(() => undefined);
  await store.deleteArtifact(hash, KIND, key);
  await deletePieces(store, hash, key, old);
  const sizes = data.buffers.map((b) => b.byteLength);
  const head: StoredHead = { meta: data.meta, pieces: { bytes: pieceBytes, sizes } };
  const scratch = new Uint8Array(Math.min(pieceBytes, Math.max(0, ...sizes)));
  try {
    for (let b = 0; b < data.buffers.length; b++) {
      const bytes = new Uint8Array(data.buffers[b]);
      for (let j = 0; j < pieceCount(bytes.length, pieceBytes); j++) {
        const part = bytes.subarray(j * pieceBytes, (j + 1) * pieceBytes);
        // A full piece goes through the scratch; a shorter last one as its own copy (exact length).
        let value: ArrayBuffer;
        if (part.length === scratch.length) {
          scratch.set(part);
          value = scratch.buffer;
        } else value = part.slice().buffer;
        await store.putArtifact(hash, PIECE_KIND, pieceKey(key, b, j), value);
      }
    }
    await store.putArtifact(hash, KIND, key, head);
  } catch (e) {
    await deletePieces(store, hash, key, head);
    throw e;
  }
}

/**
 * The serialized index stored under `key`, or undefined (none, or one whose writing did not
 * finish). Throws when a piece is missing or has the wrong size (the caller rebuilds the index).
 */
export async function getBm25(
  store: ShardStore,
  hash: string,
  key: string,
): Promise<SerializedBm25 | undefined> {
  const head = await store.getArtifact<StoredHead>(hash, KIND, key);
  if (!head) return undefined;
  const p = head.pieces;
  if (!p) return head as SerializedBm25; // stored whole: bm25-store checks it
  if (
    !Number.isSafeInteger(p.bytes) ||
    p.bytes <= 0 ||
    !Array.isArray(p.sizes) ||
    !p.sizes.every((s) => Number.isSafeInteger(s) && s >= 0)
  )
    throw new Error('BM25 index cache: its head record is damaged');
  const buffers = p.sizes.map((size, b) => {
    const buf = new ArrayBuffer(size);
    return { buf, b, size };
  });
  for (const { buf, b, size } of buffers) {
    const into = new Uint8Array(buf);
    for (let j = 0; j < pieceCount(size, p.bytes); j++) {
      const piece = await store.getArtifact<unknown>(hash, PIECE_KIND, pieceKey(key, b, j));
      const want = Math.min(p.bytes, size - j * p.bytes);
      if (!(piece instanceof ArrayBuffer) || piece.byteLength !== want)
        throw new Error(`BM25 index cache: piece ${j + 1} of buffer ${b} is missing or damaged`);
      into.set(new Uint8Array(piece), j * p.bytes);
    }
  }
  return { meta: head.meta, buffers: buffers.map((x) => x.buf) };
}

/** Deletes every stored BM25 index of a shard, with its pieces. */
export async function deleteBm25(store: ShardStore, hash: string): Promise<void> {
  await store.deleteArtifacts(hash, KIND);
  await store.deleteArtifacts(hash, PIECE_KIND);
}
