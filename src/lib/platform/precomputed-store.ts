// A shard's precomputed corpus embeddings in IndexedDB, kept in pieces: the set's head record (its
// sidecar and how it is cut) under the set's key, and its float16 rows in records of PRECOMPUTED_ROWS
// rows under `<key>#rows<i>`, so that a run reads them a piece at a time (1M × 384 float16 is 768 MB:
// one record would be read whole into the encoder worker). The head is written last, so a set whose
// writing stopped half-way has none and is not used. Sets stored whole (before this layout) are still
// read as they are.
import { PRECOMPUTED_KIND, type PrecomputedSet, type PrecomputedSidecar } from '../core/shard/precomputed';
import { f16ToF32 } from '../core/shard/vector-files';
import type { ShardStore } from './shard-store';

/** Rows per stored piece of a precomputed set (48 MiB of float16 at 384 dimensions). */
export const PRECOMPUTED_ROWS = 65_536;

/** The head record of a set stored in pieces (a set stored whole has `f16` instead of `pieces`). */
interface StoredSet {
  sidecar: PrecomputedSidecar;
  f16?: Uint16Array;
  pieces?: { rows: number; count: number; dim: number };
}

const pieceKey = (key: string, i: number) => `${key}#rows${i}`;

/** Stores `set` under `key` in pieces of `pieceRows` rows (replacing a set stored there before); the head goes last. */
export async function putPrecomputedSet(
  store: ShardStore,
  hash: string,
  key: string,
  set: PrecomputedSet,
  pieceRows = PRECOMPUTED_ROWS,
): Promise<void> {
  const old = await store.getArtifact<StoredSet>(hash, PRECOMPUTED_KIND, key).catch(() => undefined);
  await store.deleteArtifact(hash, PRECOMPUTED_KIND, key);
  const n = set.sidecar.doc_ids.length;
  const dim = n ? set.f16.length / n : 0;
  const count = Math.ceil(n / pieceRows);
  try {
    for (let i = 0; i < count; i++) {
      const rows = set.f16.slice(i * pieceRows * dim, Math.min(n, (i + 1) * pieceRows) * dim);
      await store.putArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i), rows);
    }
  } catch (e) {
    // Nothing half-written: the pieces stored so far go (a full storage, most likely).
    for (let i = 0; i < count; i++)
      await store.deleteArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i)).catch(() => undefined);
    throw e;
  }
  for (let i = count; i < (old?.pieces?.count ?? 0); i++)
    await store.deleteArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i));
  const head: StoredSet = { sidecar: set.sidecar, pieces: { rows: pieceRows, count, dim } };
  await store.putArtifact(hash, PRECOMPUTED_KIND, key, head);
}

/** A stored set, read a piece at a time: its sidecar, and float32 rows by index. */
export interface PrecomputedRows {
  sidecar: PrecomputedSidecar;
  /** Rows `order[i]` (indices into the set) as float32, row-major (order.length × dim). */
  read(order: ArrayLike<number>, dim: number): Promise<Float32Array>;
}

/** The set stored under `key`, or undefined (none, or one whose writing did not finish). */
export async function openPrecomputedSet(
  store: ShardStore,
  hash: string,
  key: string,
): Promise<PrecomputedRows | undefined> {
  const head = await store.getArtifact<StoredSet>(hash, PRECOMPUTED_KIND, key);
  if (!head?.sidecar) return undefined;
  const whole = head.f16;
  if (whole)
    return {
      sidecar: head.sidecar,
      read: async (order, dim) => toF32(order, dim, (p) => [whole, p]),
    };
  const pieces = head.pieces;
  if (!pieces) return undefined;
  // The piece read last (runs from precomputed rows go in shard order: each piece is read once).
  let held: { i: number; rows: Uint16Array } | null = null;
  const piece = async (i: number): Promise<Uint16Array> => {
    if (held?.i === i) return held.rows;
    held = null;
    const rows = await store.getArtifact<Uint16Array>(hash, PRECOMPUTED_KIND, pieceKey(key, i));
    const want = Math.min(pieces.rows, head.sidecar.doc_ids.length - i * pieces.rows) * pieces.dim;
    if (!(rows instanceof Uint16Array) || rows.length !== want)
      throw new Error(
        `precomputed embeddings ${key}: stored piece ${i + 1} of ${pieces.count} is missing or damaged; import the shard again`,
      );
    held = { i, rows };
    return rows;
  };
  return {
    sidecar: head.sidecar,
    async read(order, dim) {
      const out = new Float32Array(order.length * dim);
      for (let i = 0; i < order.length; i++) {
        const p = order[i];
        const rows = await piece(Math.floor(p / pieces.rows));
        const at = (p % pieces.rows) * dim;
        for (let j = 0; j < dim; j++) out[i * dim + j] = f16ToF32(rows[at + j]);
      }
      return out;
    },
  };
}

function toF32(order: ArrayLike<number>, dim: number, rowOf: (p: number) => [Uint16Array, number]) {
  const out = new Float32Array(order.length * dim);
  for (let i = 0; i < order.length; i++) {
    const [f16, p] = rowOf(order[i]);
    for (let j = 0; j < dim; j++) out[i * dim + j] = f16ToF32(f16[p * dim + j]);
  }
  return out;
}
