// The open HNSW index (one per worker) with its vectors and GPU/wasm copies, and the matrix check
// every call applies to the vectors and queries it is sent.
import type { Matrix } from '../../src/lib/core/retrieval/exact';
import type { IndexInfo, Open } from './types';

/** The open HNSW index (one at a time; build() replaces it). */
let open: Open | null = null;

/** Makes `o` the open index (the previous one must be closed first). */
export function setOpen(o: Open): void {
  open = o;
}

/** Frees the open index (wasm memory) and any GPU buffers. */
export function closeOpen(): void {
  if (!open) return;
  open.index.free();
  open.wasmDocs?.free();
  void open.gpu?.then((g) => g.destroy()).catch(() => undefined);
  open = null;
}

/** The open index, or an error saying to build one. */
export function requireOpen(): Open {
  if (!open) throw new Error('no index: call build() first');
  return open;
}

/** `data` as an (n × dim) matrix, checked: a positive dimension that divides its length; `what` names it. */
export function asMatrix(data: Float32Array, dim: number, what: string): Matrix {
  if (!Number.isInteger(dim) || dim <= 0) throw new RangeError(`dimension must be a positive integer`);
  if (data.length % dim !== 0)
    throw new RangeError(`${what}: ${data.length} values is not a multiple of ${dim}`);
  return { data, n: data.length / dim, dim };
}

/** What is open. */
export async function indexInfo(): Promise<IndexInfo> {
  if (!open) return { open: false as const };
  return {
    open: true as const,
    n: open.vectors.n,
    dim: open.vectors.dim,
    space: open.space,
    params: open.params,
    efSearch: open.efSearch,
    vectorBytes: open.vectors.data.byteLength,
  };
}
