// Corpus rows streamed out of embedCorpus instead of returned as one (docs × dim) matrix: for dense
// runs that go through the index worker's compact store (src/lib/clients/index-client.ts), where the
// whole float32 matrix would not fit the tab (1M × 384 is 1.5 GB). Batches arrive in plan order (by
// text length, or shard order for precomputed rows); each row goes out with its document's index,
// in pieces of at most STREAM_PIECE rows, one piece in flight at a time (the sink's promise is the
// back-pressure), so neither this worker nor the page ever holds more than a piece.
import * as Comlink from 'comlink';
import type { PackedStrings } from '../../src/lib/core/retrieval/packed-ids';

/** Rows per piece sent to the sink (6 MiB of float32 at 384 dimensions). */
export const STREAM_PIECE = 4096;

/** Rows of documents `at[i]` (shard order indices), row-major; both transferred. */
export interface CorpusPiece {
  at: Uint32Array;
  vectors: Float32Array;
}

/**
 * Where a streamed corpus goes (a Comlink proxy from the page). `begin` is told the corpus before the
 * first row (false: the receiver holds it already, send nothing), with the document ids as one packed
 * table (its own copy, transferred); `rows` takes one piece and resolves
 * once it is stored. Every document gets exactly one row; rows of documents without the part are zero.
 */
export interface CorpusSink {
  begin(info: { key: string; dim: number; ids: PackedStrings; missing: string[] }): Promise<boolean>;
  /** May give the piece's buffers back (transferred): the writer fills them again. */
  rows(piece: CorpusPiece): Promise<CorpusPiece | void>;
}

/** What embedCorpus asks for when the caller can take a stream: from how many documents to stream. */
export interface CorpusStreamRequest {
  /** Stream (one row per document only) when the shard has at least this many documents. */
  fromDocs: number;
}

/** Counters of streamed rows, read by tests through the worker's global (loupeEncoderCounters). */
export interface StreamCounters {
  streamedRows: number;
  streamedPieces: number;
  largestPiece: number;
  /** Pieces whose row buffer came back from the sink and was filled again. */
  reusedPieces: number;
}

/** Collects rows with their document indices and sends them to `sink` a piece at a time. */
export class PieceWriter {
  private at = new Uint32Array(STREAM_PIECE);
  private vectors: Float32Array;
  private used = 0;

  constructor(
    private readonly sink: CorpusSink,
    private readonly dim: number,
    private readonly counters: StreamCounters,
  ) {
    this.vectors = new Float32Array(STREAM_PIECE * dim);
  }

  /** Rows of `vectors` (one per entry of `docs`, in order) for documents `docs[i]`. */
  async add(vectors: Float32Array, docs: ArrayLike<number>): Promise<void> {
    const { dim } = this;
    for (let i = 0; i < docs.length; i++) {
      this.at[this.used] = docs[i];
      this.vectors.set(vectors.subarray(i * dim, (i + 1) * dim), this.used * dim);
      if (++this.used === STREAM_PIECE) await this.flush();
    }
  }

  /** Zero rows for documents `docs` (they lack the part: zero rows, as in the returned matrix). */
  async zeros(docs: ArrayLike<number>): Promise<void> {
    const { dim } = this;
    for (let i = 0; i < docs.length; i++) {
      this.at[this.used] = docs[i];
      this.vectors.fill(0, this.used * dim, (this.used + 1) * dim);
      if (++this.used === STREAM_PIECE) await this.flush();
    }
  }

  /** Sends what is collected (the buffers go to the sink; fresh ones are taken for what follows). */
  async flush(): Promise<void> {
    if (this.used === 0) return;
    const n = this.used;
    const piece: CorpusPiece = {
      at: this.at.slice(0, n),
      vectors: n === STREAM_PIECE ? this.vectors : this.vectors.slice(0, n * this.dim),
    };
    this.used = 0;
    this.counters.streamedRows += n;
    this.counters.streamedPieces++;
    this.counters.largestPiece = Math.max(this.counters.largestPiece, n);
    const back = await this.sink.rows(
      Comlink.transfer(piece, [piece.at.buffer, piece.vectors.buffer] as ArrayBuffer[]),
    );
    // The sink's buffers back (no new piece for the GC to find), else a fresh one.
    if (n !== STREAM_PIECE) return;
    if (back?.vectors?.length === STREAM_PIECE * this.dim) {
      this.vectors = back.vectors;
      this.counters.reusedPieces++;
    } else this.vectors = new Float32Array(STREAM_PIECE * this.dim);
  }
}
