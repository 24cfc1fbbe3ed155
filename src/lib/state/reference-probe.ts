// The executor of a dense run's 'check-reference' step (core/retrieval/reference-check.ts): which of
// the shard's precomputed sets (npy or Parquet column, stored at import) the run takes its corpus
// vectors from, and the probe: the
// set's rows for a few seeded documents, the same documents embedded here with the loaded encoder,
// compared. A check runs once per shard, set, model, dtype and device in a tab; a failed one stops
// the run (ReferenceMismatchError) unless it is run anyway, marked unchecked.
import type { Chunking } from '../core/retrieval/chunking';
import { isChunked } from '../core/retrieval/chunking';
import { docText } from '../core/retrieval/corpus-batches';
import type { EmbedPart, ModelSpec } from '../core/retrieval/models';
import {
  compareRows,
  judgeReference,
  probeRows,
  referenceCheckKey,
  type ReferenceCheck,
  type ReferencePartCheck,
} from '../core/retrieval/reference-check';
import { precomputedKey, precomputedMismatch, precomputedPath } from '../core/shard/precomputed';
import type { PrecomputedSidecar, RemoteIvfSet } from '../core/shard/precomputed';
import type { Doc } from '../core/types';
import { embedImages, embedTexts, type LoadedEncoder } from '../clients/encoder-client';
import { remoteIvfRows } from '../clients/index-client';
import type { JobOptions } from '../clients/worker-client';
import { openShardStore } from '../platform/storage/shard-store';
import { openPrecomputedSet } from '../platform/storage/precomputed-store';
import { remoteFirstRowIds } from './remote-first';

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

/** One set a run takes corpus vectors from: its rows by index, and the document of each. */
export interface ReferenceSet {
  part: EmbedPart;
  name: string;
  rows: number;
  ids(rows: number[]): Promise<(string | undefined)[]>;
  /** The stored rows; `bytes`: what reading them took from the shard's host (Range reads). */
  read(rows: number[], dim: number): Promise<Float32Array | { vectors: Float32Array; bytes: number }>;
}

/**
 * A packed index on the shard's host as a set to check: its rows are the float16 rows the index
 * rescores from (`vectorsUrl`), read by Range (index worker, cached there for a visit offline); the
 * documents of rows from the sidecar's ids, or on a shard opened remote-first from its offsets.
 */
function packedSet(shardHash: string, part: EmbedPart, set: RemoteIvfSet): ReferenceSet {
  const listed = set.sidecar.doc_ids.length ? set.sidecar.doc_ids : null;
  return {
    part,
    name: set.vectorsUrl,
    rows: listed?.length ?? set.sidecar.corpus_order?.docs ?? 0,
    ids: async (rows) => {
      if (listed) return rows.map((r) => listed[r]);
      const byRow = await remoteFirstRowIds(shardHash, rows);
      return rows.map((r) => byRow?.get(r));
    },
    read: async (rows) => remoteIvfRows({ url: set.ivfUrl, vectorsUrl: set.vectorsUrl }, rows),
  };
}

/**
 * The stored sets this run takes its corpus vectors from: each document part's set where the encoder
 * worker will use it (it fits the model as loaded; not for chunked texts or every image of
 * multi-image items, which are embedded here), or the packed index the run searches on the shard's
 * host (`ivf`). A set that says its rows are synthetic is left out with a note in `notes`.
 */
export async function referenceSetsFor(
  shardHash: string,
  spec: ModelSpec,
  encoder: Pick<LoadedEncoder, 'dtype' | 'dim'>,
  docParts: EmbedPart[],
  ivf: { set: RemoteIvfSet } | null,
  chunking: Chunking | undefined,
  allImages: boolean,
  notes: string[],
): Promise<ReferenceSet[]> {
  if (ivf) {
    if (!ivf.set.sidecar.synthetic) return [packedSet(shardHash, docParts[0], ivf.set)];
    notes.push(syntheticNote(ivf.set.vectorsUrl, spec));
    return [];
  }
  const out: ReferenceSet[] = [];
  let store: Awaited<ReturnType<typeof openShardStore>>;
  try {
    store = await openShardStore({ sweep: false });
  } catch {
    return [];
  }
  for (const part of docParts) {
    if ((part === 'text' && isChunked(chunking)) || (part === 'image' && allImages)) continue;
    const set = await openPrecomputedSet(
      store,
      shardHash,
      precomputedKey(spec.id, encoder.dtype, part),
    ).catch(() => undefined);
    if (!set || precomputedMismatch(set.sidecar, spec, encoder.dtype, encoder.dim).length) continue;
    if (set.sidecar.synthetic) {
      notes.push(syntheticNote(setName(set.sidecar), spec));
      continue;
    }
    const ids = set.sidecar.doc_ids;
    out.push({
      part,
      name: setName(set.sidecar),
      rows: ids.length,
      ids: async (rows) => rows.map((r) => ids[r]),
      read: (rows, dim) => set.read(rows, dim),
    });
  }
  return out;
}

const syntheticNote = (name: string, spec: ModelSpec) =>
  `did not check ${name} against the model: its sidecar says its rows are synthetic (not ${spec.id}'s embeddings)`;

const setName = (s: PrecomputedSidecar) =>
  s.origin ?? `embeddings/${precomputedPath(s.model_id, s.dtype)}${s.vectors}`;

/** Checks kept in this tab (a check runs once per shard, set, model, dtype and device). */
const checks = new Map<string, ReferenceCheck>();

/** The key of a run's check, and the check kept for it (undefined: not checked yet in this tab). */
export function cachedReference(
  shardHash: string,
  spec: ModelSpec,
  enc: LoadedEncoder,
  sets: ReferenceSet[],
) {
  const key = referenceCheckKey(
    shardHash,
    sets.map((s) => s.name),
    spec.id,
    enc.dtype,
    enc.device,
  );
  return { key, check: checks.get(key) };
}

/**
 * Embeds the probe of every set here and compares it with the stored rows; the result is kept for
 * the tab. Documents without the part (or whose image is not stored) are left out of the probe.
 */
export async function runReferenceCheck(
  shardHash: string,
  spec: ModelSpec,
  enc: LoadedEncoder,
  sets: ReferenceSet[],
  docs: ProbeDocs,
  job: JobOptions,
): Promise<ReferenceCheck> {
  const { key, check } = cachedReference(shardHash, spec, enc, sets);
  if (check) return check;
  const t0 = performance.now();
  job.onProgress?.({ kind: 'status', message: "Checking the shard's reference vectors" });
  const parts: ReferencePartCheck[] = [];
  let embedMs = 0;
  for (const set of sets) {
    const rows = probeRows(set.rows);
    const ids = await set.ids(rows);
    const byId = await docs.load(ids.filter((x): x is string => !!x));
    let keep = rows.flatMap((r, i) => {
      const d = ids[i] ? byId.get(ids[i]!) : undefined;
      const ok = d && (set.part === 'text' ? docText(d) !== '' : !!d.image);
      return ok ? [{ row: r, doc: d! }] : [];
    });
    let probed: Float32Array;
    const t1 = performance.now();
    if (set.part === 'text')
      probed = await embedTexts(
        keep.map((k) => docText(k.doc)),
        'document',
        job,
      );
    else {
      const store = await openShardStore({ sweep: false });
      const blobs = await Promise.all(keep.map((k) => store.getImage(shardHash, k.doc.image!)));
      keep = keep.filter((_, i) => blobs[i]);
      probed = await embedImages(
        blobs.filter((b): b is Blob => !!b),
        job,
      );
    }
    embedMs += performance.now() - t1;
    if (!keep.length) continue;
    const read = await set.read(
      keep.map((k) => k.row),
      enc.dim,
    );
    const stored = read instanceof Float32Array ? read : read.vectors;
    const cmp = compareRows(stored, probed, enc.dim);
    const bytes = read instanceof Float32Array ? {} : { bytes: read.bytes };
    parts.push({ part: set.part, set: set.name, docIds: keep.map((k) => k.doc.id), ...cmp, ...bytes });
  }
  const model = { ...spec, docPrefix: spec.docPrefix };
  const out = { ...judgeReference(model, enc, parts, performance.now() - t0), embedMs };
  checks.set(key, out);
  return out;
}

/**
 * The step itself: the check (kept, or run now); a failed one stops the run, unless it is run
 * anyway (`skip`): then it is recorded as unchecked.
 */
export async function checkReferenceStep(
  a: { shardHash: string; spec: ModelSpec; encoder: LoadedEncoder; docs: ProbeDocs; job: JobOptions },
  sets: ReferenceSet[],
  skip: boolean,
): Promise<ReferenceCheck> {
  const check = await runReferenceCheck(a.shardHash, a.spec, a.encoder, sets, a.docs, a.job);
  if (check.status === 'passed') return check;
  if (skip) return { ...check, status: 'unchecked' };
  throw new ReferenceMismatchError(check);
}
