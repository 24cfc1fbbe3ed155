// HNSW build, load and save: the graph over a matrix, taken from the shard's cache when its stored
// header and checksums match the request exactly, else built in batches (with progress) and saved.
import { ENGINE, HnswIndex, hnswModule } from './hnsw-engine';
import { indexTieBreak, normalizeRows, trecTieBreak } from '../../src/lib/core/retrieval/exact';
import { throttle } from '../../src/lib/core/throttle';
import type { Progress } from '../../src/lib/core/types';
import { formatBytes } from '../../src/lib/core/shard/limits';
import { isQuotaError, openShardStore } from '../../src/lib/platform/storage/shard-store';
import { hnswlibHeader } from '../../src/lib/core/retrieval/hnsw-header';
import { INDEX_FORMAT_VERSION, checkArtifact, hnswArtifactKey, sha256Hex } from './artifact';
import { asMatrix, closeOpen, setOpen } from './session';
import type { BuildRequest, BuildResult, HnswParams, IndexArtifact, IndexHeader } from './types';

// Defaults: keep equal to INDEX_DEFAULTS in src/lib/clients/index-client.ts (the e2e test checks).
/** DEFAULT_M: HNSW graph degree (links per node per layer; 2·M on the base layer). */
export const DEFAULT_M = 16;
/** DEFAULT_EF_CONSTRUCTION: candidate list size while inserting. */
export const DEFAULT_EF_CONSTRUCTION = 200;
/**
 * DEFAULT_EF_SEARCH: candidate list size while searching, chosen for recall@10 ≥ 0.99 against exact
 * search on the hardest case measured here. Clustered vectors need little: 128 gives 0.996 at
 * 100k × 384 (scripts/bench-index.ts). Medquad embedded by the random-weight bert-tiny (every pair of
 * documents at cosine ≈ 0.97: nearly unstructured, HNSW's worst case) needs more: 128 → 0.962,
 * 256 → 0.990, 384 → 0.996 (M 16, efC 200; `npm run bench -- … --index hnsw --efSearch N`).
 * At 100k × 384, ef 384 still answers a query in about a millisecond.
 */
export const DEFAULT_EF_SEARCH = 384;
/** DEFAULT_SEED: hnswlib's level-assignment seed. */
export const DEFAULT_SEED = 100;
/** ADD_BATCH: vectors per insert call (one progress tick each). */
export const ADD_BATCH = 512;

/**
 * Makes an HNSW index over `vectors` ready: the persisted one when its header and checksum match
 * this request exactly, else a fresh build (in batches, with progress), which is then persisted.
 */
export async function build(req: BuildRequest, onProgress?: (p: Progress) => void): Promise<BuildResult> {
  const t0 = performance.now();
  const report = throttle(onProgress);
  const engine = await hnswModule();
  closeOpen();
  const params: HnswParams = {
    M: req.M ?? DEFAULT_M,
    efConstruction: req.efConstruction ?? DEFAULT_EF_CONSTRUCTION,
    seed: req.seed ?? DEFAULT_SEED,
  };
  const efSearch = req.efSearch ?? DEFAULT_EF_SEARCH;
  const vectors = asMatrix(req.vectors, req.dim, 'vectors');
  const { n, dim } = vectors;
  if (req.docIds && req.docIds.length !== n)
    throw new RangeError(`${req.docIds.length} document ids for ${n} vectors`);
  // Cosine = inner product of normalised rows: normalise once here, and use hnswlib's 'ip' space.
  if (req.space === 'cosine') normalizeRows(vectors);
  const tieBreak = req.docIds ? trecTieBreak(req.docIds) : indexTieBreak;
  const out: BuildResult = {
    source: 'built',
    n,
    dim,
    space: req.space,
    params,
    efSearch,
    persisted: false,
    bytes: 0,
    timings: { totalMs: 0 },
  };

  const store = req.shard ? await openShardStore({ sweep: false }) : null;
  const artifactKey = hnswArtifactKey(req.key, req.space, params.M, params.efConstruction);
  if (req.shard) out.artifact = { shard: req.shard, kind: 'hnsw', key: artifactKey };
  const want = {
    version: INDEX_FORMAT_VERSION,
    count: n,
    dim,
    space: req.space,
    ...params,
    vectorsSha256: req.shard ? await sha256Hex(vectors.data) : '',
  };
  let index: HnswIndex | null = null;
  try {
    if (store && req.shard && !req.force) {
      report({ kind: 'status', message: 'Looking for a cached HNSW index' });
      const tl = performance.now();
      try {
        const art = await store.getArtifact<IndexArtifact>(req.shard, 'hnsw', artifactKey);
        const why = art === undefined ? 'no cached index' : await checkArtifact(art, want);
        if (why === null) {
          index = HnswIndex.load(engine, new Uint8Array(art!.bytes), dim, n);
          if (index.count() !== n) {
            index.free();
            index = null;
            out.cacheMiss = 'hnswlib read a different element count';
          } else {
            out.source = 'cache';
            out.persisted = true;
            out.bytes = art!.bytes.byteLength;
          }
        } else out.cacheMiss = why;
      } catch (e) {
        // A cached index that cannot be read is rebuilt, never trusted.
        out.cacheMiss = `unreadable cached index: ${(e as Error)?.message ?? String(e)}`;
        index?.free();
        index = null;
      }
      out.timings.loadMs = performance.now() - tl;
    }

    if (!index) {
      const ta = performance.now();
      index = HnswIndex.create(engine, dim, Math.max(1, n), params.M, params.efConstruction, params.seed);
      report({ kind: 'index', done: 0, total: n });
      for (let s = 0; s < n; s += ADD_BATCH) {
        const e = Math.min(n, s + ADD_BATCH);
        index.add(vectors.data.subarray(s * dim, e * dim), s);
        report({ kind: 'index', done: e, total: n });
      }
      out.timings.addMs = performance.now() - ta;
      if (store && req.shard) {
        report({ kind: 'status', message: 'Saving the HNSW index' });
        const ts = performance.now();
        const bytes = index.save();
        out.timings.serializeMs = performance.now() - ts;
        const tw = performance.now();
        const inner = hnswlibHeader(bytes);
        if (inner.count !== n || inner.M !== params.M || inner.efConstruction !== params.efConstruction)
          throw new Error('hnswlib wrote a header that disagrees with the build parameters');
        const header: IndexHeader = {
          format: 'loupe-hnsw',
          ...want,
          byteLength: bytes.byteLength,
          sha256: await sha256Hex(bytes),
          engine: ENGINE,
          createdAt: Date.now(),
        };
        out.bytes = bytes.byteLength;
        try {
          await store.putArtifact(req.shard, 'hnsw', artifactKey, {
            header,
            bytes: bytes.buffer,
          } satisfies IndexArtifact);
          out.persisted = true;
        } catch (e) {
          // A full storage costs the saved copy, not the index: it is in memory and searches here.
          // The put is one transaction, so nothing of it is left behind.
          if (!isQuotaError(e)) throw e;
          out.notSaved =
            `the browser's storage filled up while saving the HNSW index (${formatBytes(bytes.byteLength)}): ` +
            'it works in this tab but was not saved, so it is built again next time. Delete cached ' +
            'shards or runs you no longer need (Shards view), or allow this site more storage in the ' +
            'browser settings';
        }
        out.timings.storeMs = performance.now() - tw;
      }
    }
  } catch (e) {
    index?.free();
    throw e;
  } finally {
    await store?.close();
  }
  index.setEf(efSearch);
  setOpen({ index, vectors, space: req.space, params, efSearch, tieBreak });
  report({ kind: 'index', done: n, total: n });
  report.flush();
  out.timings.totalMs = performance.now() - t0;
  return out;
}
