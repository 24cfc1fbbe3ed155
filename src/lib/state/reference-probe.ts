// The page's side of a dense run's 'check-reference' step (core/retrieval/dense-plan.ts). The encoder
// worker finds the sets the run takes its corpus vectors from and embeds the probe
// (workers/encoder/reference.ts); here: what only the page reaches (the open shard's documents, a
// packed index's rows through the index worker), the result kept for the tab (a check runs once per
// shard, set, model, dtype and device), and what a failed check does: it stops the run
// (ReferenceMismatchError) unless the run goes on anyway, marked unchecked.
import type { Chunking } from '../core/retrieval/chunking';
import { isChunked } from '../core/retrieval/chunking';
import type { EmbedPart, ModelSpec } from '../core/retrieval/models';
import { referenceCheckKey, type ReferenceCheck } from '../core/retrieval/reference-check';
import type { RemoteIvfSet } from '../core/shard/precomputed';
import type { Doc } from '../core/types';
import { checkReference, referenceSets, type LoadedEncoder } from '../clients/encoder-client';
import { remoteIvfRows } from '../clients/index-client';
import type { JobOptions } from '../clients/worker-client';
import { packedRows } from './dense-remote';

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
  shardHash: string,
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
  const req = {
    shardHash,
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
