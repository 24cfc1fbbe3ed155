// The shard's sets of precomputed vectors for a dense run (issue 19). Their dtypes: a set and a
// packed index are made for queries embedded at one dtype, so a run or query at dtype `auto` asks the
// encoder for one of those (platform/gpu/backend.ts chooseBackend's setDtypes) instead of the
// device's default (a hub model's WASM default is q8, sentence-transformers writes fp32 vectors:
// without this an fp32 set would be left unused and the corpus embedded in the browser).
// Their packed IVF-int8 index on the shard's host: when a shard opened by URL ships one (its sidecar
// names `ivf-<part>.bin`, kept at import as a REMOTE_IVF_KIND artifact) for the model, dtype and
// document part of a run, only the queries are embedded; the index worker reads the header, the
// probed lists and the rows it rescores with HTTP Range requests (workers/index/ivf-remote.ts), never
// the whole .npy. Everything else (folders, zips, URL shards without an index) embeds the corpus.
// The check that a set comes from the run's model (the plan's 'check-reference' step): the encoder
// worker finds the sets and embeds the probe (workers/encoder/reference.ts); here is what only the
// page reaches (the open shard's documents, a packed index's rows through the index worker), the
// result kept for the tab (once per shard, set, model, dtype and device), and what a failed check
// does: it stops the run (ReferenceMismatchError) unless the run goes on anyway, marked unchecked.
import type { Chunking } from '../core/retrieval/chunking';
import { isChunked } from '../core/retrieval/chunking';
import { fuseFeatures } from '../core/retrieval/dense';
import { referenceCheckKey, type ReferenceCheck } from '../core/retrieval/reference-check';
import { ivfRunInfo, type IvfRunInfo } from '../core/retrieval/ivf-report';
import { fnv1a } from '../core/retrieval/ivf';
import type { Dtype, EmbedPart, ModelSpec } from '../core/retrieval/models';
import type { MultiImage } from '../core/retrieval/multi-image';
import {
  PRECOMPUTED_KIND,
  REMOTE_IVF_KIND,
  precomputedKey,
  precomputedMismatch,
  type RemoteIvfSet,
} from '../core/shard/precomputed';
import type { Doc } from '../core/types';
import {
  checkReference,
  referenceSets,
  type LoadOptions,
  type LoadedEncoder,
} from '../clients/encoder-client';
import type { Device } from '../platform/gpu/backend';
import type { RemoteFirstSetName } from '../platform/sources/remote-shard';
import { withShardStore } from '../platform/storage/shard-store';
import { remoteFirstRowIds, remoteFirstSets, remoteFirstWarm } from './remote-first';
import { forgetRemoteIvf, remoteIvfRows, searchRemoteIvf, type IvfQueryStats } from '../clients/index-client';
import type { JobOptions } from '../clients/worker-client';
import type { DenseRanker } from '../clients/retrieval-client';
import type { RankedList } from '../../../workers/retrieval.worker';

export interface RemoteIvf {
  set: RemoteIvfSet;
  rank: DenseRanker;
  /** What the ranking cost so far (all calls of `rank`), or null before the first. */
  info(): IvfRunInfo | null;
  /** The run's notes: which index was searched, and how. */
  notes: string[];
}

/**
 * The shard's packed index for this run (its one document part, at the encoder's dtype), or null:
 * none, or one that cannot serve it (then a note in `plan.notes` says why the corpus is embedded).
 */
export async function remoteIvfFor(...args: Parameters<typeof packedIvfFor>): Promise<RemoteIvf | null> {
  const found = await packedIvfFor(...args);
  const [sets, spec, , plan] = args;
  // A shard opened remote-first has no corpus here to embed: say what to do instead.
  if (!found && sets.remote)
    throw new Error(
      `${spec.label ?? spec.id} has no packed index this search can use on the shard's host` +
        (plan.notes.length ? ` (${plan.notes.join('; ')})` : '') +
        ': import the shard (Shards view) to embed its corpus here',
    );
  return found;
}

async function packedIvfFor(
  sets: ShardSets,
  spec: ModelSpec,
  encoder: { dtype: string; dim: number },
  plan: { docParts: EmbedPart[]; queryParts: EmbedPart[]; notes: string[] },
  chunking: Chunking | undefined,
  multiImage: MultiImage | undefined,
  /** Lists probed per query (default: the index's, defaultNprobe); `cold`: the index's cache emptied first. */
  opts: { nprobe?: number; cold?: boolean } = {},
): Promise<RemoteIvf | null> {
  const { nprobe, cold } = opts;
  const shardHash = sets.hash;
  const found = plan.docParts.map((part) => sets.ivf.get(precomputedKey(spec.id, encoder.dtype, part)));
  const set = found[0];
  if (plan.docParts.length > 1) {
    // A document with a text and an image is one vector, the fusion of both: no single index holds it.
    const names = found.flatMap((x) => (x ? [x.ivfUrl] : []));
    if (names.length)
      plan.notes.push(
        `does not use the packed index ${names.join(', ')} (each document is its text and image fused): the corpus is embedded here`,
      );
    return null;
  }
  if (!set) return null;
  const file = set.ivfUrl;
  const mismatch = precomputedMismatch(set.sidecar, spec, encoder.dtype, encoder.dim);
  if (mismatch.length) {
    plan.notes.push(
      `does not use the packed index ${file} (${mismatch.join(', ')}): the corpus is embedded here`,
    );
    return null;
  }
  const cannot = isChunked(chunking)
    ? 'long texts are chunked'
    : multiImage
      ? 'multi-image items are scored by every image'
      : '';
  if (cannot) {
    plan.notes.push(`does not use the packed index ${file} (${cannot}): the corpus is embedded here`);
    return null;
  }
  const notes = [`searched the packed IVF index ${file} (range-read; the vectors were not downloaded)`];
  if (plan.queryParts.length > 1)
    notes.push('image + text queries use feature fusion only (one vector per query)');
  const stats: IvfQueryStats[] = [];
  let last: Parameters<typeof ivfRunInfo>[1] | null = null;
  const docs = packedRows(shardHash, set);

  const rank: DenseRanker = async (q, _fusion, depth, job) => {
    const dim = q.dim;
    const want: number[] = [];
    const vecs: Float32Array[] = [];
    q.ids.forEach((_, i) => {
      const t = q.hasText[i] && q.text ? q.text.subarray(i * dim, (i + 1) * dim) : null;
      const v = q.hasImage[i] && q.image ? q.image.subarray(i * dim, (i + 1) * dim) : null;
      if (!t && !v) return;
      want.push(i);
      vecs.push(t && v ? fuseFeatures(t, v) : (t ?? v)!.slice());
    });
    const out: RankedList[] = q.ids.map((queryId) => ({ queryId, docIds: [], scores: new Float64Array(0) }));
    if (!want.length) return out;
    const matrix = new Float32Array(want.length * dim);
    vecs.forEach((v, j) => matrix.set(v, j * dim));
    // Excluded documents (a query's own image) are asked for on top of the depth, then dropped.
    const extra = want.reduce((a, i) => Math.max(a, q.exclude[i]?.length ?? 0), 0);
    job.onProgress?.({ kind: 'status', message: `Searching the packed index for ${want.length} queries` });
    // The header read ahead when the shard opened (remote-first.ts): not read a second time.
    await remoteFirstWarm(shardHash);
    // Bytes per query as a first visit pays them (the approximation table's IVF rows).
    if (cold && !stats.length) await forgetRemoteIvf([set.ivfUrl]);
    const r = await searchRemoteIvf(
      { url: set.ivfUrl, vectorsUrl: set.vectorsUrl, k: depth + extra, ...(nprobe ? { nprobe } : {}) },
      matrix,
      job.signal,
    );
    if (r.n !== docs.count)
      throw new Error(`${file}: the index has ${r.n} rows, its sidecar names ${docs.count} documents`);
    const ids = await docs.ids([...new Set(r.rows.flatMap((list) => [...list]))]);
    if (!ids)
      throw new Error(`${file}: its sidecar names no document ids, and the shard is not read from its host`);
    const idOf = (row: number) => ids.get(row);
    last = r;
    stats.push(...r.perQuery);
    want.forEach((qi, j) => {
      const skip = new Set(q.exclude[qi] ?? []);
      const docIds: string[] = [];
      const scores: number[] = [];
      r.rows[j].forEach((row, k) => {
        const id = idOf(row);
        if (id === undefined || skip.has(id) || docIds.length >= depth) return;
        docIds.push(id);
        scores.push(r.scores[j][k]);
      });
      out[qi] = { queryId: q.ids[qi], docIds, scores: Float64Array.from(scores) };
    });
    return out;
  };
  const info = () => (last ? ivfRunInfo(stats, last) : null);
  return { set, rank, info, notes };
}

/**
 * The documents a packed set's rows stand for: how many, and the ids of the rows asked for — the
 * sidecar's list, or (a sidecar that says `corpus_order`, on a shard opened remote-first) the
 * documents at those rows, read by Range as they are shown anyway; null when neither is there.
 */
export function packedRows(shardHash: string, set: RemoteIvfSet) {
  const listed = set.sidecar.doc_ids.length ? set.sidecar.doc_ids : null;
  return {
    count: listed?.length ?? set.sidecar.corpus_order?.docs ?? 0,
    ids: async (rows: number[]): Promise<Map<number, string> | null> =>
      listed ? new Map(rows.map((r) => [r, listed[r]])) : await remoteFirstRowIds(shardHash, rows),
  };
}

/**
 * The dtypes of `spec` among sets named `model|dtype|part` (precomputedKey; stored pieces carry a
 * `#…` suffix and are skipped), in the model's own order, each once; only dtypes the model offers.
 */
export function setDtypesOf(sets: readonly RemoteFirstSetName[], spec: ModelSpec): Dtype[] {
  return spec.dtypes.filter((d) => sets.some((s) => s.model_id === spec.id && s.dtype === d));
}

/** `model|dtype|part` keys as model and dtype (pieces, `key#rows3`, are skipped). */
export function parseSetKeys(keys: readonly string[]): RemoteFirstSetName[] {
  return keys.flatMap((k) => {
    if (k.includes('#')) return [];
    const parts = k.split('|');
    if (parts.length < 3) return [];
    return [{ model_id: parts.slice(0, -2).join('|'), dtype: parts[parts.length - 2] }];
  });
}

/**
 * A shard's sets of precomputed vectors: the keys (`model|dtype|part`) of its stored sets and packed
 * indexes, and the packed IVF indexes on its host by key. Read once when the shard opens (the library
 * state holds them for the open shard, and reads them again when its embeddings are removed), so a
 * dense query reads nothing from IndexedDB for them.
 */
export interface ShardSets {
  hash: string;
  /** A hash of `keys`: another when they change (the encoder worker keeps what it found per version). */
  version: number;
  keys: string[];
  ivf: ReadonlyMap<string, RemoteIvfSet>;
  /** Opened remote-first: nothing of it is in the cache (its corpus cannot be embedded here). */
  remote: boolean;
}

/** The sets of the shard `hash`: held remote-first, else read from the cache (none without one). */
export async function readShardSets(hash: string): Promise<ShardSets> {
  const version = (keys: string[]) => fnv1a(new TextEncoder().encode(keys.join('\n')));
  const held = remoteFirstSets(hash);
  if (held) {
    const keys = [...held.keys()];
    return { hash, version: version(keys), keys, ivf: held, remote: true };
  }
  // No cache (a private window without IndexedDB): no sets to match.
  const none = { ivf: new Map<string, RemoteIvfSet>(), keys: [] as string[] };
  const { ivf, keys } = await withShardStore(async (store) => {
    const ivf = new Map(await store.listArtifacts<RemoteIvfSet>(hash, REMOTE_IVF_KIND));
    return { ivf, keys: [...(await store.artifactKeys(hash, PRECOMPUTED_KIND)), ...ivf.keys()] };
  }).catch(() => none);
  return { hash, version: version(keys), keys, ivf, remote: false };
}

/** The dtypes the shard has embeddings of `spec` for (none: no sets, or none of this model). */
export const shardSetDtypes = (sets: ShardSets | null | undefined, spec: ModelSpec): Dtype[] =>
  sets ? setDtypesOf(parseSetKeys(sets.keys), spec) : [];

/**
 * The load options of a dense run or query: the same object shape everywhere (the encoder client
 * keys a loaded model by it), with the shard's set dtypes only when the dtype is `auto`.
 */
export function denseLoadOptions(
  s: {
    device: 'auto' | Device;
    dtype: 'auto' | Dtype;
    simulateWebGpuFailure?: boolean;
    simulateParityMismatch?: boolean;
  },
  setDtypes: Dtype[],
): LoadOptions {
  return {
    device: s.device,
    dtype: s.dtype,
    simulateWebGpuFailure: s.simulateWebGpuFailure,
    simulateParityMismatch: s.simulateParityMismatch,
    ...(s.dtype === 'auto' && setDtypes.length ? { setDtypes } : {}),
  };
}

// ---- the reference check -----------------------------------------------------------------------
/** The shard's documents by id (the open shard's ShardDocs). */
export interface ProbeDocs {
  load(ids: Iterable<string>): Promise<Map<string, Doc>>;
}

/** A failed check: the run stopped before any result (its `check` says what was measured). */
export class ReferenceMismatchError extends Error {
  constructor(readonly check: ReferenceCheck) {
    super(
      `the shard's reference vectors for ${check.modelId} do not match this model here (${check.dtype} on ${check.device}): lowest cosine ${check.min.toFixed(4)} < ${check.threshold}`,
    );
    this.name = 'ReferenceMismatchError';
  }
}

/** The sets a run's check compares, and the check kept for them in this tab (undefined: not yet). */
export interface ReferenceSets {
  req: Parameters<typeof referenceSets>[0];
  /** The packed index whose rows are checked (its ids and files stay on the page). */
  ivf?: RemoteIvfSet;
  names: string[];
  key: string;
  check?: ReferenceCheck;
}

/** Checks kept in this tab. */
const checks = new Map<string, ReferenceCheck>();

/**
 * The stored sets this run takes its corpus vectors from, as the encoder worker finds them for the
 * loaded model: each document part's set (not for chunked texts or every image of multi-image
 * items, which are embedded here), or the packed index the run searches on the shard's host. Null:
 * none to check (the worker's notes say which were left out, e.g. synthetic rows).
 */
export async function referenceSetsFor(
  shardSets: ShardSets,
  spec: ModelSpec,
  encoder: Pick<LoadedEncoder, 'dtype' | 'device'>,
  docParts: EmbedPart[],
  ivf: { set: RemoteIvfSet } | null,
  chunking: Chunking | undefined,
  allImages: boolean,
  notes: string[],
): Promise<ReferenceSets | null> {
  const parts = docParts.filter(
    (part) => !((part === 'text' && isChunked(chunking)) || (part === 'image' && allImages)),
  );
  const shardHash = shardSets.hash;
  const req = {
    shardHash,
    setsVersion: shardSets.version,
    spec,
    parts,
    ...(ivf
      ? {
          packed: {
            part: docParts[0],
            vectorsUrl: ivf.set.vectorsUrl,
            rows: packedRows(shardHash, ivf.set).count,
            ...(ivf.set.sidecar.synthetic ? { synthetic: true } : {}),
          },
        }
      : {}),
  };
  const found = await referenceSets(req);
  notes.push(...found.notes);
  if (!found.sets.length) return null;
  const key = referenceCheckKey(shardHash, found.sets, spec.id, encoder.dtype, encoder.device);
  return { req, ivf: ivf?.set, names: found.sets, key, check: checks.get(key) };
}

/**
 * The step itself: the check (kept, or run now in the encoder worker); a failed one stops the run,
 * unless it is run anyway (`skip`): then it is recorded as unchecked.
 */
export async function checkReferenceStep(
  sets: ReferenceSets,
  docs: ProbeDocs,
  skip: boolean,
  job: JobOptions,
): Promise<ReferenceCheck> {
  const { shardHash } = sets.req;
  const ivf = sets.ivf;
  const check = sets.check
    ? { ...sets.check, earlier: true }
    : await checkReference(
        sets.req,
        {
          // Plain objects: the documents are cloned into the worker.
          docs: async (ids) =>
            [...(await docs.load(ids)).values()].map(({ id, title, text, image }) => ({
              id,
              title,
              text,
              image,
              meta: {},
            })),
          rowIds: async (rows) => {
            const byRow = ivf ? await packedRows(shardHash, ivf).ids(rows) : null;
            return rows.map((r) => byRow?.get(r));
          },
          packedRows: async (rows) => {
            if (!ivf) throw new Error('no packed index to read rows of');
            return remoteIvfRows({ url: ivf.ivfUrl, vectorsUrl: ivf.vectorsUrl }, rows, job.signal);
          },
        },
        job,
      );
  if (!sets.check) checks.set(sets.key, check);
  if (check.status === 'passed') return check;
  if (skip) return { ...check, status: 'unchecked' };
  throw new ReferenceMismatchError(check);
}
