// A precomputed set of clustered random unit vectors for the packed-index e2e and bench: the recipe of
// make-scale-shard --vectors random (topic centre + 0.6 · noise, about 100 rows per topic), written
// as embeddings/index.json + <model>/fp32/{text.npy, sidecar-text.json} under a shard folder, with
// queries drawn from the same topics and brute-force exact top-k over the float16 rows as stored.
// The vectors are not a model's: for recall against exact search and bytes, never retrieval quality.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Xoshiro128 } from '../../src/lib/core/eval/random';
import { writeNpyF16 } from '../../src/lib/core/shard/precomputed';
import { f16ToF32 } from '../../src/lib/core/shard/vector-files';

export const FIXTURE_MODEL = 'loupe-test/minilm-l6-random';

export interface IvfFixture {
  /** Folder of the set, relative to the shard: embeddings/<model>/fp32/. */
  setPath: string;
  /** The rows as the .npy holds them (float16 decoded), n × dim. */
  rows: Float32Array;
  /** Unit-length queries, nq × dim. */
  queries: Float32Array;
  npyBytes: number;
}

/** Writes an n × dim set into `shardDir` and returns its rows and nq queries (seeded). */
export function writeIvfFixture(shardDir: string, n: number, dim: number, nq: number, seed = 19): IvfFixture {
  const rng = new Xoshiro128(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rng.nextFloat())) * Math.cos(2 * Math.PI * rng.nextFloat());
  const topics = Math.max(20, Math.round(n / 100));
  const centres = Float32Array.from({ length: topics * dim }, gauss);
  const draw = (count: number) => {
    const out = new Float32Array(count * dim);
    for (let i = 0; i < count; i++) {
      const c = Math.floor(rng.nextFloat() * topics) * dim;
      let norm = 0;
      for (let j = 0; j < dim; j++) {
        const v = centres[c + j] + 0.6 * gauss();
        out[i * dim + j] = v;
        norm += v * v;
      }
      const inv = 1 / Math.sqrt(norm);
      for (let j = 0; j < dim; j++) out[i * dim + j] *= inv;
    }
    return out;
  };
  const vectors = draw(n);
  const queries = draw(nq);
  const setPath = `embeddings/${FIXTURE_MODEL}/fp32/`;
  const folder = join(shardDir, setPath);
  mkdirSync(folder, { recursive: true });
  const npy = writeNpyF16(vectors, n, dim);
  writeFileSync(join(folder, 'text.npy'), npy);
  const width = String(n).length;
  writeFileSync(
    join(folder, 'sidecar-text.json'),
    JSON.stringify({
      format: 'loupe-embeddings/1',
      model_id: FIXTURE_MODEL,
      hub_id: FIXTURE_MODEL,
      revision: 'main',
      dtype: 'fp32',
      pooling: 'mean',
      normalize: true,
      query_prefix: '',
      doc_prefix: '',
      dim,
      part: 'text',
      vectors: 'text.npy',
      missing: [],
      doc_ids: Array.from({ length: n }, (_, d) => `sd${String(d + 1).padStart(width, '0')}`),
      synthetic: true,
      note: 'Synthetic unit vectors clustered by topic, not this model’s embeddings.',
    }),
  );
  writeFileSync(
    join(shardDir, 'embeddings/index.json'),
    JSON.stringify({
      format: 'loupe-embeddings/1',
      sets: [{ model_id: FIXTURE_MODEL, dtype: 'fp32', path: `${FIXTURE_MODEL}/fp32/` }],
    }),
  );
  const bits = new Uint16Array(npy.slice(npy.length - n * dim * 2).buffer);
  const rows = new Float32Array(n * dim);
  for (let i = 0; i < rows.length; i++) rows[i] = f16ToF32(bits[i]);
  return { setPath, rows, queries, npyBytes: npy.length };
}

/** Brute-force exact top-k rows of query `q` (inner product; score descending, then row ascending). */
export function exactTopRows(rows: Float32Array, dim: number, q: Float32Array, k: number): number[] {
  const n = rows.length / dim;
  const best: { r: number; s: number }[] = [];
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += q[j] * rows[r * dim + j];
    if (best.length < k || s > best[best.length - 1].s) {
      best.push({ r, s });
      best.sort((a, b) => b.s - a.s || a.r - b.r);
      if (best.length > k) best.pop();
    }
  }
  return best.map((b) => b.r);
}
