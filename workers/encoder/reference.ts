// The check of a shard's reference vectors (issue 37; the pure parts are
// core/retrieval/reference-check.ts), run here on the active model in one call per step: which of the
// shard's stored sets (npy or Parquet column, kept at import) or which packed index the run takes its
// corpus vectors from, then the probe: the set's rows for 16 seeded documents, the same documents
// embedded here, compared row by row. The page keeps the result per tab and decides what a failure
// does (state/dense-sets.ts); what only the page can reach comes through `io`: the open shard's
// documents (a shard opened remote-first reads them from its host), a packed set's row ids and its
// rows (read by the index worker, whose cache holds them).
import type { Doc, EmbedPart } from '../../src/lib/core/types';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';
import { docText } from '../../src/lib/core/retrieval/corpus-batches';
import {
  compareRows,
  judgeReference,
  probeRows,
  type ReferenceCheck,
  type ReferencePartCheck,
} from '../../src/lib/core/retrieval/reference-check';
import {
  precomputedKey,
  precomputedMismatch,
  precomputedPath,
  type PrecomputedSidecar,
} from '../../src/lib/core/shard/precomputed';
import { openPrecomputedSet } from '../../src/lib/platform/storage/precomputed-store';
import { shardStore } from './corpus';
import { embedTexts } from './embed';
import { embedImages } from './image';
import { current } from './session';
import type { OnProgress } from './types';

/** Where a run takes its corpus vectors from. */
export interface ReferenceRequest {
  shardHash: string;
  /** A hash of the shard's set keys as the page holds them (another after its embeddings were removed). */
  setsVersion: number;
  spec: ModelSpec;
  /** The document parts whose stored sets the run takes (not chunked texts, not every image of an item). */
  parts: EmbedPart[];
  /**
   * The packed index the run searches on the shard's host (then no stored set is looked at): its
   * rows' file, their count and whether its sidecar calls them synthetic. Its ids stay on the page
   * (a million of them would be cloned here on every query): `io.rowIds` answers for the rows probed.
   */
  packed?: { part: EmbedPart; vectorsUrl: string; rows: number; synthetic?: boolean };
}

/** What only the page can reach. */
export interface ReferenceIo {
  /** The open shard's documents of `ids` (those it has). */
  docs(ids: string[]): Promise<Doc[]>;
  /** A packed set's document of each row (its sidecar's ids, or remote-first its offsets). */
  rowIds?(rows: number[]): Promise<(string | undefined)[]>;
  /** A packed set's stored rows (rows × dim) and the bytes reading them took from the host. */
  packedRows?(rows: number[]): Promise<{ vectors: Float32Array; bytes: number }>;
}

interface ProbeSet {
  part: EmbedPart;
  name: string;
  rows: number;
  ids(rows: number[]): Promise<(string | undefined)[]>;
  read(rows: number[], dim: number): Promise<{ vectors: Float32Array; bytes?: number }>;
}

const setName = (s: PrecomputedSidecar) =>
  s.origin ?? `embeddings/${precomputedPath(s.model_id, s.dtype)}${s.vectors}`;

const syntheticNote = (name: string, spec: ModelSpec) =>
  `did not check ${name} against the model: its sidecar says its rows are synthetic (not ${spec.id}'s embeddings)`;

/** The sets the run takes its corpus vectors from, fitting the active model; `notes`: those left out, and why. */
async function probeSets(
  req: ReferenceRequest,
  io: ReferenceIo | null,
  notes: string[],
): Promise<ProbeSet[]> {
  const { spec, shardHash, packed } = req;
  const enc = current();
  if (packed) {
    const { vectorsUrl } = packed;
    if (packed.synthetic) {
      notes.push(syntheticNote(vectorsUrl, spec));
      return [];
    }
    return [
      {
        part: packed.part,
        name: vectorsUrl,
        rows: packed.rows,
        ids: async (rows) => (await io?.rowIds?.(rows)) ?? [],
        read: async (rows) => {
          if (!io?.packedRows) throw new Error(`${vectorsUrl}: no reader of the packed rows`);
          return io.packedRows(rows);
        },
      },
    ];
  }
  let db: Awaited<ReturnType<typeof shardStore>>;
  try {
    db = await shardStore();
  } catch {
    return [];
  }
  const out: ProbeSet[] = [];
  for (const part of req.parts) {
    const set = await openPrecomputedSet(db, shardHash, precomputedKey(spec.id, enc.dtype, part)).catch(
      () => undefined,
    );
    if (!set || precomputedMismatch(set.sidecar, spec, enc.dtype, enc.dim).length) continue;
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
      read: async (rows, dim) => ({ vectors: await set.read(rows, dim) }),
    });
  }
  return out;
}

/**
 * Answers of referenceSets by shard, the hash of its set keys (they change only when its embeddings
 * are removed), model, dtype, parts and packed file: a shard opened again keeps its answer.
 */
const found = new Map<string, { sets: string[]; notes: string[] }>();

/**
 * The names of the sets a run's check would compare (none: nothing to check), and the sets left out.
 * Asked on every dense query: answered once per worker, since a stored set's head (with its ids, a
 * million at 1M documents) is read from IndexedDB to know it.
 */
export async function referenceSets(req: ReferenceRequest): Promise<{ sets: string[]; notes: string[] }> {
  const enc = current();
  const key = [
    req.shardHash,
    req.setsVersion,
    req.spec.id,
    enc.dtype,
    enc.dim,
    req.parts.join('+'),
    req.packed?.vectorsUrl,
  ].join('|');
  let out = found.get(key);
  if (!out) {
    const notes: string[] = [];
    const sets = await probeSets(req, null, notes);
    out = { sets: sets.map((s) => s.name), notes };
    found.set(key, out);
  }
  return { sets: [...out.sets], notes: [...out.notes] };
}

/**
 * The probe of every set: its rows for the seeded documents, the documents embedded here, compared.
 * Documents without the part (or whose image is not stored) are left out of the probe.
 */
export async function checkReference(
  req: ReferenceRequest,
  io: ReferenceIo,
  onProgress?: OnProgress,
): Promise<ReferenceCheck> {
  const t0 = performance.now();
  onProgress?.({ kind: 'status', message: "Checking the shard's reference vectors" });
  const enc = current();
  const sets = await probeSets(req, io, []);
  const parts: ReferencePartCheck[] = [];
  let embedMs = 0;
  for (const set of sets) {
    const rows = probeRows(set.rows);
    const ids = await set.ids(rows);
    const byId = new Map((await io.docs(ids.filter((x): x is string => !!x))).map((d) => [d.id, d]));
    let keep = rows.flatMap((r, i) => {
      const d = ids[i] ? byId.get(ids[i]!) : undefined;
      const ok = d && (set.part === 'text' ? docText(d) !== '' : !!d.image);
      return ok ? [{ row: r, doc: d! }] : [];
    });
    const t1 = performance.now();
    let probed: Float32Array;
    if (set.part === 'text')
      probed = await embedTexts(
        keep.map((k) => docText(k.doc)),
        'document',
      );
    else {
      const db = await shardStore();
      const blobs = await Promise.all(keep.map((k) => db.getImage(req.shardHash, k.doc.image!)));
      keep = keep.filter((_, i) => blobs[i]);
      probed = await embedImages(blobs.filter((b): b is Blob => !!b));
    }
    embedMs += performance.now() - t1;
    if (!keep.length) continue;
    const read = await set.read(
      keep.map((k) => k.row),
      enc.dim,
    );
    const cmp = compareRows(read.vectors, probed, enc.dim);
    parts.push({
      part: set.part,
      set: set.name,
      docIds: keep.map((k) => k.doc.id),
      ...cmp,
      ...(read.bytes === undefined ? {} : { bytes: read.bytes }),
    });
  }
  const run = { dtype: enc.dtype, device: enc.device };
  return { ...judgeReference(req.spec, run, parts, performance.now() - t0), embedMs };
}
