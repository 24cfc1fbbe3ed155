// A shard's precomputed corpus embeddings in IndexedDB, kept in pieces: the set's head record (its
// sidecar and how it is cut) under the set's key, and its float16 rows in records of PRECOMPUTED_ROWS
// rows under `<key>#rows<i>`, so that a run reads them a piece at a time (1M × 384 float16 is 768 MB:
// one record would be read whole into the encoder worker). The head is written last, so a set whose
// writing stopped half-way has none and is not used. Sets stored whole (before this layout) are still
// read as they are.
import {
  PRECOMPUTED_KIND,
  type NpyRows,
  type PrecomputedSet,
  type PrecomputedSidecar,
} from '../../core/shard/precomputed';
import { f16ToF32, VectorFileError } from '../../core/shard/vector-files';
import type { ShardStore } from './shard-store';
import { freeBuffers } from './free-buffers';

/**
 * Rows per stored piece of a precomputed set (6 MiB of float16 at 384 dimensions). Each piece read
 * is garbage once its rows are copied on, and the GC lets several wait: pieces of 48 MiB left about
 * 250 MB of them in the encoder worker while 1M rows streamed (bench:scale --trace). A set stored with
 * another piece size is read by the size in its head.
 */
export const PRECOMPUTED_ROWS = 8_192;

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
  const dim = set.f16 ? (n ? set.f16.length / n : 0) : set.sidecar.dim;
  const count = Math.ceil(n / pieceRows);
  try {
    const pieces = set.f16 ? slices(set.f16, n, dim, pieceRows) : npyPieces(set.npy, n, dim, pieceRows);
    let i = 0;
    for await (const rows of pieces)
      await store.putArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i++), rows);
  } catch (e) {
    // Nothing half-written: the pieces stored so far go (a full storage, a truncated file).
    for (let i = 0; i < count; i++)
      await store.deleteArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i)).catch(() => undefined);
    throw e;
  }
  for (let i = count; i < (old?.pieces?.count ?? 0); i++)
    await store.deleteArtifact(hash, PRECOMPUTED_KIND, pieceKey(key, i));
  const head: StoredSet = { sidecar: set.sidecar, pieces: { rows: pieceRows, count, dim } };
  await store.putArtifact(hash, PRECOMPUTED_KIND, key, head);
}

function* slices(f16: Uint16Array, n: number, dim: number, pieceRows: number): Generator<Uint16Array> {
  for (let at = 0; at < n; at += pieceRows) yield f16.slice(at * dim, Math.min(n, at + pieceRows) * dim);
}

/**
 * The rows of a checked float16 .npy in pieces of `pieceRows`, read as the file streams in (one piece
 * in memory); a file shorter or longer than its shape says fails with the file named.
 */
export async function* npyPieces(
  npy: NpyRows,
  n: number,
  dim: number,
  pieceRows: number,
): AsyncGenerator<Uint16Array> {
  const stream = await npy.open();
  if (!stream) throw new VectorFileError(npy.file, 'missing (named by the sidecar)');
  const need = n * dim * 2;
  let skip = npy.dataStart;
  let read = 0;
  let piece = new Uint8Array(Math.min(n, pieceRows) * dim * 2);
  let fill = 0;
  let rowsDone = 0;
  for await (let c of stream) {
    if (skip) {
      const s = Math.min(skip, c.length);
      c = c.subarray(s);
      skip -= s;
    }
    if (read + c.length > need)
      throw new VectorFileError(
        npy.file,
        `data is longer than shape (${n}, ${dim}) of float16 needs (${need} bytes)`,
      );
    read += c.length;
    while (c.length) {
      const take = Math.min(c.length, piece.length - fill);
      piece.set(c.subarray(0, take), fill);
      fill += take;
      c = c.subarray(take);
      if (fill === piece.length) {
        yield new Uint16Array(piece.buffer);
        rowsDone += piece.length / (dim * 2);
        piece = new Uint8Array(Math.min(n - rowsDone, pieceRows) * dim * 2);
        fill = 0;
      }
    }
  }
  if (read !== need)
    throw new VectorFileError(
      npy.file,
      `data is ${read} bytes, shape (${n}, ${dim}) of float16 needs ${need} (truncated file?)`,
    );
}

/** A stored set, read a piece at a time: its sidecar, and float32 rows by index. */
export interface PrecomputedRows {
  sidecar: PrecomputedSidecar;
  /**
   * Rows `order[i]` (indices into the set) as float32, row-major (order.length × dim). With `into`
   * (large enough) they are written there and a view of it is returned: a caller that copies the
   * rows on reuses one buffer, instead of leaving one per batch for the GC (hundreds of MB of them
   * waited for it while 1M rows were streamed).
   */
  read(order: ArrayLike<number>, dim: number, into?: Float32Array): Promise<Float32Array>;
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
      read: async (order, dim, into) => toF32(order, dim, (p) => [whole, p], into),
    };
  const pieces = head.pieces;
  if (!pieces) return undefined;
  // Not `head` itself in the closures: a caller may drop the sidecar's ids once it has checked them.
  const total = head.sidecar.doc_ids.length;
  // The piece read last (runs from precomputed rows go in shard order: each piece is read once).
  let held: { i: number; rows: Uint16Array } | null = null;
  const piece = async (i: number): Promise<Uint16Array> => {
    if (held?.i === i) return held.rows;
    // The piece read before is done with (its rows were copied out as float32): freed now, not when
    // the GC finds it (up to 120 MB of them waited while 1M rows streamed, bench:scale --trace).
    if (held) freeBuffers([held.rows.buffer]);
    held = null;
    const rows = await store.getArtifact<Uint16Array>(hash, PRECOMPUTED_KIND, pieceKey(key, i));
    const want = Math.min(pieces.rows, total - i * pieces.rows) * pieces.dim;
    if (!(rows instanceof Uint16Array) || rows.length !== want)
      throw new Error(
        `precomputed embeddings ${key}: stored piece ${i + 1} of ${pieces.count} is missing or damaged; import the shard again`,
      );
    held = { i, rows };
    return rows;
  };
  return {
    sidecar: head.sidecar,
    async read(order, dim, into) {
      const out = outFor(order.length * dim, into);
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

/** `into`'s first `n` values when it has that many, else a new array. */
const outFor = (n: number, into?: Float32Array) =>
  into && into.length >= n ? into.subarray(0, n) : new Float32Array(n);

function toF32(
  order: ArrayLike<number>,
  dim: number,
  rowOf: (p: number) => [Uint16Array, number],
  into?: Float32Array,
) {
  const out = outFor(order.length * dim, into);
  for (let i = 0; i < order.length; i++) {
    const [f16, p] = rowOf(order[i]);
    for (let j = 0; j < dim; j++) out[i * dim + j] = f16ToF32(f16[p * dim + j]);
  }
  return out;
}
