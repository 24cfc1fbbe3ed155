// Shard import worker: reads a shard from a folder, directory handle, zip or URL, validates it
// (core readShard; a Parquet dataset through read-parquet's virtual shard, which feeds the same reader)
// and, only when it is valid, stores it in the IndexedDB cache. Imports stream (issue 18): a first
// pass validates and hashes the shard keeping no document text, a second pass reads the corpus again
// (a JSONL file, or a Parquet dataset's corpus row groups: stream-parquet.ts) and writes its documents
// in batches (shard-stream-store.ts), so memory does not grow with the corpus.
// An invalid shard therefore leaves nothing behind; a worker terminated mid-store leaves an uncommitted entry that
// the cache sweeps (see shard-store.ts).
import * as Comlink from 'comlink';
import { readShard } from '../src/lib/core/shard/read-shard';
import { ShardValidationError, type ShardIssue } from '../src/lib/core/shard/source';
import { throttle } from '../src/lib/core/throttle';
import type { ParsedShard, Progress, ProgressFn } from '../src/lib/core/types';
import { sourceFromDescriptor, type SourceDescriptor } from '../src/lib/platform/sources/sources';
import { listHubDataset, parseHubDatasetUrl } from '../src/lib/platform/sources/hub-dataset';
import type { ParquetMapping } from '../src/lib/core/media/parquet/mapping';
import type { ParquetInspection } from '../src/lib/core/media/parquet/read-parquet';
import { isParquetSource } from '../src/lib/core/media/parquet/detect';
import type { ParquetStreamed } from '../src/lib/core/media/parquet/stream-parquet';
import { blobImageStash } from '../src/lib/platform/storage/blob-image-stash';
// hyparquet and its codecs load with the first Parquet dataset (most imports are JSONL shards).
const parquet = () => import('../src/lib/core/media/parquet/read-parquet');
import type { ShardSource } from '../src/lib/core/shard/source';
import {
  estimateShardBytes,
  isQuotaError,
  openShardStore,
  StorageQuotaError,
  type ShardStore,
  type ShardSummary,
} from '../src/lib/platform/storage/shard-store';
import type { ShardLimits } from '../src/lib/core/shard/limits';
import { DocCheckRefs, streamCorpus, withReadRates } from '../src/lib/core/shard/stream-corpus';
import { estimateStreamedBytes, putShard, putStreamed } from '../src/lib/platform/storage/shard-stream-store';
import { buildDocIndex, loadDocIndex } from '../src/lib/platform/storage/shard-docs';
import { VectorFileError } from '../src/lib/core/shard/vector-files';
import { putPrecomputedSet } from '../src/lib/platform/storage/precomputed-store';
import { resumeKeep, resumeStreamed } from './shard/shard-resume';
import { reportingSource } from '../src/lib/platform/sources/reporting-source';

/** STORAGE_ISSUE_FILE: the `file` of issues about the browser's storage rather than a shard file. */
export const STORAGE_ISSUE_FILE = '(browser storage)';

function storageIssue(message: string): ShardIssue {
  return { file: STORAGE_ISSUE_FILE, code: 'storage-quota', message };
}
import { loadDicomCodecs } from '../src/lib/platform/media/dicom-codecs';
import { isDicom } from '../src/lib/core/media/dicom/image';
import {
  PRECOMPUTED_INDEX,
  REMOTE_IVF_KIND,
  precomputedKey,
  readPrecomputed,
  type PrecomputedSet,
} from '../src/lib/core/shard/precomputed';
import { hasParquetSets } from '../src/lib/core/shard/precomputed-parquet';
import {
  openRemoteShard,
  remoteDocRows,
  remoteDocRowsOf,
  type ShardHead,
} from '../src/lib/platform/sources/remote-shard';

/** Outcome of an import: the cached shard, or every validation issue found (nothing was stored). */
export type ImportResult =
  | {
      ok: true;
      summary: ShardSummary;
      /** true when the same content was already cached */
      cached: boolean;
      /**
       * Precomputed embedding sets (embeddings/ in the shard) kept with the shard, as
       * `model|dtype|part`, and the sets left out with why (the model then embeds the corpus itself).
       */
      precomputed: {
        stored: string[];
        problems: string[];
        /** Sets searched through a packed IVF index on the shard's host (`model|dtype|part`). */
        ivf?: string[];
      };
    }
  | { ok: false; issues: ShardIssue[] };

const IMAGE_TYPES: Record<string, string> = {
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  bmp: 'image/bmp',
  dcm: 'application/dicom',
  dicom: 'application/dicom',
};

function imageType(path: string): string {
  return IMAGE_TYPES[path.slice(path.lastIndexOf('.') + 1).toLowerCase()] ?? 'application/octet-stream';
}

/** Options of an import (structured-cloneable). */
export interface ImportOptions {
  /** Read the source as a Parquet dataset with this mapping (without it, Parquet is detected). */
  parquet?: ParquetMapping;
  /** Size limits (default DEFAULT_LIMITS). */
  limits?: Partial<ShardLimits>;
  /** Skip the storage pre-flight: only for fault-injection tests that need a write to hit the quota. */
  skipPreflight?: boolean;
  /** Tests only: the write fails as on a full disk once this many transactions have committed. */
  simulateQuotaAfterTx?: number;
  /** Tests only: the write waits for good once this many transactions have committed. */
  simulateHoldAfterTx?: number;
  /**
   * The page's note of this import (import-note.ts): with it a streamed import that stops keeps what
   * it wrote to resume (shard-resume.ts); without it (scripts, the test harness) that is swept.
   */
  noteId?: string;
}

/** Outcome of inspecting a Parquet dataset: its files and the detected mapping, or why it cannot be read. */
export type InspectResult = { ok: true; inspection: ParquetInspection } | { ok: false; issues: ShardIssue[] };

/**
 * The absolute URL of a file of a shard read over HTTP (`base`: the source's label, its base URL);
 * paths come from the shard's own checked index (relative, no `..`), each segment URL-encoded.
 */
function urlOfFile(base: string): (path: string) => string {
  return (path) => new URL(path.split('/').map(encodeURIComponent).join('/'), base).href;
}

/** A hub dataset URL is listed through the hub's API first (a plain URL cannot be listed). */
async function openSource(d: SourceDescriptor): Promise<ShardSource> {
  if (d.kind === 'url' && !d.files && parseHubDatasetUrl(d.url)) {
    const listed = await listHubDataset(d.url);
    return sourceFromDescriptor({ kind: 'url', url: listed.url, files: listed.files });
  }
  return sourceFromDescriptor(d);
}

/**
 * IMPORT_TICK_MS: least time between two progress ticks of an import sent to the page. Each tick is a
 * task on the page's main thread (a message, the line re-rendered, the import's note saved): an
 * import of a million documents lasts minutes, and four lines a second read as smoothly as ten.
 */
const IMPORT_TICK_MS = 250;

/**
 * Throttled progress that still forwards the first tick of each phase at once (so the page sees phase
 * changes). A file whose parse ticks carry its bytes sends no more read ticks after its first: one
 * message to the page per tick, not two, and a line that does not flip between reading and parsing.
 */
function phasedProgress(fn?: ProgressFn) {
  const throttled = throttle(fn, undefined, IMPORT_TICK_MS);
  let kind: Progress['kind'] | undefined;
  const counted = new Set<string>();
  const report = (p: Progress) => {
    if (!fn) return;
    if (p.kind === 'parse' && p.bytes !== undefined) counted.add(p.file);
    else if (p.kind === 'read' && counted.has(p.file)) return;
    if (p.kind !== kind) {
      kind = p.kind;
      throttled.flush();
      fn(p);
    } else throttled(p);
  };
  report.flush = () => throttled.flush();
  return report;
}

/**
 * Precomputed corpus embeddings: checked against the documents, kept with the shard. They are not
 * part of the shard's content hash (the same data with or without them is one shard).
 */
async function storePrecomputed(
  store: ShardStore,
  source: ShardSource,
  parsed: ParsedShard,
  checkDocs: readonly { id: string; text?: string; image?: string }[],
  parquetSets: PrecomputedSet[],
  descriptor: SourceDescriptor,
  report?: ProgressFn,
): Promise<Extract<ImportResult, { ok: true }>['precomputed']> {
  // Its files say how far they are read (a set's vectors stream in as they are stored).
  if (report && (parsed.manifest.embeddings === PRECOMPUTED_INDEX || parquetSets.length))
    report({ kind: 'status', message: 'Checking the precomputed embeddings' });
  const pre = await readPrecomputed(
    reportingSource(source, withReadRates(report)),
    checkDocs,
    parsed.manifest.embeddings === PRECOMPUTED_INDEX,
    descriptor.kind === 'url' ? urlOfFile(source.label) : undefined,
  );
  const stored: string[] = [];
  for (const set of [...pre.sets, ...parquetSets]) {
    const key = precomputedKey(set.sidecar.model_id, set.sidecar.dtype, set.sidecar.part);
    try {
      await putPrecomputedSet(store, parsed.hash, key, set); // in pieces (precomputed-store.ts)
      stored.push(key);
    } catch (e) {
      // A .npy whose length is found wrong only as it streams: that set is left out (none of it stays).
      if (!(e instanceof VectorFileError)) throw e;
      pre.problems.push(e.message);
    }
  }
  // Sets with a packed IVF index on the shard's host: their URLs, not their vectors (this import's
  // source decides: a folder or zip of the same shard afterwards drops them).
  await store.deleteArtifacts(parsed.hash, REMOTE_IVF_KIND);
  const ivfSets: string[] = [];
  for (const set of pre.ivf ?? []) {
    const key = precomputedKey(set.sidecar.model_id, set.sidecar.dtype, set.sidecar.part);
    await store.putArtifact(parsed.hash, REMOTE_IVF_KIND, key, set);
    ivfSets.push(key);
  }
  for (const p of pre.problems) console.warn(`loupe: precomputed embeddings not used: ${p}`);
  return { stored, problems: pre.problems, ...(ivfSets.length ? { ivf: ivfSets } : {}) };
}

const api = {
  /**
   * Builds a cached shard's document directory and facts by one scan of its corpus, unless stored
   * (platform/storage/shard-docs.ts); the page then reads it from IndexedDB. `onProgress`: Comlink.proxy.
   */
  async indexDocs(hash: string, queryImages: string[], onProgress?: ProgressFn): Promise<void> {
    const report = throttle(onProgress);
    const store = await openShardStore({ sweep: false });
    try {
      const summary = await store.summary(hash);
      if (summary && (await loadDocIndex(store, hash, summary.counts.docs))) return;
      await buildDocIndex(store, hash, new Set(queryImages), report);
    } finally {
      report.flush();
      await store.close();
    }
  },

  /** A packed shard on a static host, opened without importing its corpus (platform/sources/remote-shard.ts). */
  openRemote: (url: string, onHead?: (head: ShardHead) => void, onProgress?: ProgressFn) => {
    const report = phasedProgress(onProgress);
    return openRemoteShard(url, undefined, onHead, withReadRates(report)).finally(() => report.flush());
  },
  /** Documents of a shard opened by openRemote, read from its host by HTTP Range. */
  remoteDocs: (url: string, rows: number[]) => remoteDocRows(url, rows),
  remoteRowsOf: (url: string, ids: string[]) => remoteDocRowsOf(url, ids),

  /** Reads a Parquet dataset's footers and detects its layout and column mapping (nothing is stored). */
  async inspectParquet(descriptor: SourceDescriptor): Promise<InspectResult> {
    try {
      return { ok: true, inspection: await (await parquet()).inspectParquet(await openSource(descriptor)) };
    } catch (e) {
      if (e instanceof ShardValidationError) return { ok: false, issues: e.issues.map((i) => ({ ...i })) };
      throw e;
    }
  },

  /**
   * `null` when the source is not a Parquet dataset (a JSONL shard, or a URL that cannot be listed);
   * else what inspectParquet gives, so the page can show the mapping before importing.
   */
  async inspectIfParquet(descriptor: SourceDescriptor): Promise<InspectResult | null> {
    try {
      const source = await openSource(descriptor);
      if (!(await isParquetSource(source))) return null;
      return { ok: true, inspection: await (await parquet()).inspectParquet(source) };
    } catch (e) {
      if (e instanceof ShardValidationError) return { ok: false, issues: e.issues.map((i) => ({ ...i })) };
      throw e;
    }
  },

  /** Reads, validates and caches a shard. `onProgress` must be wrapped in Comlink.proxy. */
  async importShard(
    descriptor: SourceDescriptor,
    onProgress?: ProgressFn,
    options: ImportOptions = {},
  ): Promise<ImportResult> {
    const report = phasedProgress(onProgress);
    const images = new Map<string, Blob>();
    const source = await openSource(descriptor);
    // Said at once: the first file's ticks follow (the line never sits at the job's title).
    report({ kind: 'status', message: `Reading ${source.label}: shard.json` });
    let parsed;
    const parquetSets: PrecomputedSet[] = [];
    // A streamed read keeps, per document, only what the embedding checks look at.
    let docRefs: DocCheckRefs | null = new DocCheckRefs();
    let checkDocs: readonly { id: string; text?: string; image?: string }[] = [];
    // The second pass of a streamed Parquet import (a JSONL corpus is read again by streamCorpus).
    let parquetFeed: ParquetStreamed['streamCorpus'] | undefined;
    try {
      const readOpts = {
        limits: options.limits,
        onProgress: report,
        // Blob copies the bytes, so the reader may reuse its buffer afterwards.
        onImage: (path: string, bytes: Uint8Array) =>
          void images.set(
            path,
            new Blob([bytes as Uint8Array<ArrayBuffer>], {
              // A DICOM file is typed as such whatever its name, so the encoder and display know it.
              type: isDicom(bytes) ? 'application/dicom' : imageType(path),
            }),
          ),
        loadDicomCodecs,
      };
      if (options.parquet || (await isParquetSource(source))) {
        // Streamed like a JSONL corpus (stream-parquet.ts): row group by row group, ids only kept.
        const { inspectParquet } = await parquet();
        const inspection = await inspectParquet(source);
        const pq = await (
          await import('../src/lib/core/media/parquet/stream-parquet')
        ).readParquetStreamed(source, options.parquet ?? inspection.mapping, {
          ...readOpts,
          onProgress: withReadRates(report),
          inspection,
          onDoc: (d) => docRefs?.add(d),
          // Image cells wait for their check as Blobs, not in this worker's heap.
          imageStash: blobImageStash(),
        });
        parsed = pq.parsed;
        parquetFeed = pq.streamCorpus;
        // A corpus column of embeddings named by the mapping: checked like an index.json set.
        const emb = options.parquet?.embedding;
        if (emb) report({ kind: 'status', message: `Checking the embedding column "${emb.column}"` });
        if (emb)
          parquetSets.push(
            await (
              await import('../src/lib/core/media/parquet/embeddings')
            ).readEmbeddingColumn(
              source,
              inspection.files.filter((f) => f.role === 'corpus').map((f) => f.path),
              options.parquet!.corpus.id,
              emb,
              docRefs!.list(),
            ),
          );
      } else
        parsed = await readShard(source, {
          ...readOpts,
          onProgress: withReadRates(report),
          onDoc: (d) => docRefs?.add(d),
        });
      // Only a shard that may have precomputed embeddings needs the list (the checks return early).
      if (!parsed.streamed) checkDocs = parsed.docs;
      else if (
        parsed.manifest.embeddings === PRECOMPUTED_INDEX ||
        (!source.remote && (await source.list())?.includes(PRECOMPUTED_INDEX) !== false)
      )
        checkDocs = docRefs!.list();
      docRefs = null; // the ids go before the second pass
      // Corpus embeddings from a Parquet column (embeddings/index.json): checked before anything is
      // stored, and a bad one fails the import (the shard names them for a model: all or nothing).
      if (await hasParquetSets(source, parsed.manifest.embeddings === PRECOMPUTED_INDEX)) {
        report({ kind: 'status', message: 'Checking the Parquet embeddings' });
        parquetSets.push(
          ...(await (
            await import('../src/lib/core/media/parquet/embeddings')
          ).readParquetEmbeddings(source, checkDocs)),
        );
      }
    } catch (e) {
      // Class identity does not survive comlink: validation failures are returned as data.
      if (e instanceof ShardValidationError) return { ok: false, issues: e.issues.map((i) => ({ ...i })) };
      throw e;
    }
    report({ kind: 'status', message: 'Saving to the browser cache' });
    const store = await openShardStore();
    try {
      const cached = await store.has(parsed.hash);
      // Refuse before writing anything when the shard cannot fit (the write would fail half-way).
      const streamed = parsed.streamed;
      let needed = estimateShardBytes(parsed, images);
      if (streamed)
        needed = estimateStreamedBytes(
          needed,
          (!parquetFeed && (await source.size(streamed.corpusFile))) || parsed.bytes,
        );
      if (!cached && !options.skipPreflight)
        await store.ensureRoom(`the shard "${parsed.manifest.name}"`, needed);
      const format = parsed.manifest.format;
      const summary = streamed
        ? await putStreamed(
            store,
            parsed,
            (add) =>
              parquetFeed
                ? parquetFeed(add, { limits: options.limits })
                : streamCorpus(source, { format, ...streamed }, add, { limits: options.limits }),
            images,
            source.label,
            report,
            // Resumable after a reload when the page keeps a note of it (it offers to resume then);
            // a Parquet import is not (yet): it starts again.
            options.noteId === undefined || parquetFeed
              ? {}
              : { keep: await resumeKeep(descriptor, source, parsed, options.noteId, checkDocs.length > 0) },
            {
              ...(options.simulateQuotaAfterTx === undefined
                ? {}
                : { quotaAfterTx: options.simulateQuotaAfterTx }),
              ...(options.simulateHoldAfterTx === undefined
                ? {}
                : { holdAfterTx: options.simulateHoldAfterTx }),
            },
          )
        : await putShard(store, parsed, images, source.label, report);
      const precomputed = await storePrecomputed(
        store,
        source,
        parsed,
        checkDocs,
        parquetSets,
        descriptor,
        report,
      );
      report.flush();
      return {
        ok: true,
        summary,
        cached,
        precomputed,
      };
    } catch (e) {
      // Storage refusals are reported like validation issues: what failed and what to do (putStreamed
      // has already removed whatever it wrote).
      if (e instanceof StorageQuotaError) return { ok: false, issues: [storageIssue(e.message)] };
      // The second pass of a streamed import found the corpus changed (nothing was kept).
      if (e instanceof ShardValidationError) return { ok: false, issues: e.issues.map((i) => ({ ...i })) };
      if (isQuotaError(e))
        return {
          ok: false,
          issues: [
            storageIssue(
              `the browser's storage filled up while saving the shard "${parsed.manifest.name}"; what was ` +
                'written was removed and shards cached before are kept. Delete cached shards or runs you no longer ' +
                'need, or allow this site more storage in the browser settings, then import again',
            ),
          ],
        };
      throw e;
    } finally {
      // A failure's outcome follows the last tick held back by the throttle (the commits it counted
      // before the failure), as a success's does.
      report.flush();
      await store.close();
    }
  },

  /**
   * Goes on with a stopped streamed import of `hash` (shard-resume.ts): `descriptor` is the folder or
   * zip picked again (none for a URL). `onProgress` must be wrapped in Comlink.proxy.
   */
  async resumeImport(
    hash: string,
    descriptor: SourceDescriptor | undefined,
    onProgress?: ProgressFn,
    options: ImportOptions = {},
  ): Promise<ImportResult> {
    const report = phasedProgress(onProgress);
    const store = await openShardStore({ sweep: false });
    try {
      const r = await resumeStreamed(store, hash, descriptor, report, options.limits);
      if (!r.ok) return r;
      const checkDocs = r.checkDocs?.list() ?? [];
      const from = descriptor ?? { kind: 'url' as const, url: r.source.label };
      const precomputed = await storePrecomputed(store, r.source, r.parsed, checkDocs, [], from, report);
      report.flush();
      return { ok: true, summary: r.summary, cached: false, precomputed };
    } catch (e) {
      if (e instanceof ShardValidationError) return { ok: false, issues: e.issues.map((i) => ({ ...i })) };
      if (e instanceof StorageQuotaError || isQuotaError(e))
        return {
          ok: false,
          issues: [
            storageIssue(
              "the browser's storage filled up while resuming the import; what it had written was removed " +
                'and shards cached before are kept. Delete cached shards or runs you no longer need, then import again',
            ),
          ],
        };
      throw e;
    } finally {
      report.flush();
      await store.close();
    }
  },
};

/** The worker's API as seen through Comlink.wrap (import type only). */
export type ShardWorkerApi = typeof api;

Comlink.expose(api);
