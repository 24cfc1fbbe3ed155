// Builds the packed IVF-int8 index (src/lib/core/retrieval/ivf.ts) of one precomputed set, in Node,
// from the float16 rows pack-shard (or make-scale-shard --vectors random) wrote: spherical k-means
// on a seeded sample, every row assigned to its nearest centroid, int8 codes per list. Writes
// `ivf-<part>.bin` beside the set's `<part>.npy` and names it in the sidecar (`"ivf"`), which is how
// the app knows to search a shard opened by URL through it.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildIvf, parseIvfHeader } from '../../src/lib/core/retrieval/ivf';
import { parsePrecomputedSidecar } from '../../src/lib/core/shard/precomputed';
import { parseNpy } from '../../src/lib/core/shard/vector-files';

export interface PackIvfOptions {
  /** Lists (default round(2·√n)). */
  nlist?: number;
  /** Rows sampled for k-means (default 20,000). */
  sample?: number;
  /** k-means iterations (default 8). */
  iterations?: number;
  seed?: number;
}

export interface PackIvfResult {
  file: string;
  n: number;
  dim: number;
  nlist: number;
  headerBytes: number;
  bytes: number;
  seconds: number;
}

/** Default list count for n rows: 2·√n (100k rows: 632 lists of about 160 rows). */
export function defaultNlist(n: number): number {
  return Math.max(1, Math.min(n, Math.round(2 * Math.sqrt(n))));
}

/** Packs the IVF index of the set in `folder` (embeddings/<model-id>/<dtype>/) for `part`. */
export function packIvf(
  folder: string,
  part: 'text' | 'image',
  opts: PackIvfOptions = {},
): PackIvfResult | null {
  const sidecarFile = join(folder, `sidecar-${part}.json`);
  if (!existsSync(sidecarFile)) return null;
  const t0 = performance.now();
  const sidecarJson = JSON.parse(readFileSync(sidecarFile, 'utf8')) as Record<string, unknown>;
  const sidecar = parsePrecomputedSidecar(sidecarJson, sidecarFile);
  const npyFile = join(folder, sidecar.vectors);
  const bytes = new Uint8Array(readFileSync(npyFile));
  const m = parseNpy(bytes, npyFile);
  // A sidecar pack-shard --offsets wrote `corpus_order` in (no doc_ids listed): its count.
  if (m.n !== (sidecar.corpus_order?.docs ?? sidecar.doc_ids.length) || m.dim !== sidecar.dim)
    throw new Error(`${npyFile}: shape (${m.n}, ${m.dim}) does not match ${sidecarFile}`);
  const nlist = opts.nlist ?? defaultNlist(m.n);
  const width = m.sourceDtype === 'f32' ? 4 : 2;
  const ivf = buildIvf(m.data, m.n, m.dim, {
    nlist,
    npyDataOffset: bytes.length - m.n * m.dim * width,
    sample: opts.sample,
    iterations: opts.iterations,
    seed: opts.seed,
  });
  const name = `ivf-${part}.bin`;
  const out = join(folder, name);
  // Read back before writing: the file must parse as the app will parse it.
  const header = parseIvfHeader(ivf, out, ivf.length);
  // Index first, then the sidecar that names it (each whole: written aside, then renamed), so a
  // reader never finds the sidecar naming an index that is not there yet.
  writeFileSync(`${out}.tmp`, ivf);
  renameSync(`${out}.tmp`, out);
  writeFileSync(`${sidecarFile}.tmp`, JSON.stringify({ ...sidecarJson, ivf: name }) + '\n');
  renameSync(`${sidecarFile}.tmp`, sidecarFile);
  return {
    file: out,
    n: m.n,
    dim: m.dim,
    nlist,
    headerBytes: header.headerBytes,
    bytes: ivf.length,
    seconds: (performance.now() - t0) / 1000,
  };
}
