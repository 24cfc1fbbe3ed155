// A Parquet dataset imported streamed (issue 18), in the two passes of a streamed JSONL import
// (stream-corpus.ts): the first pass validates and hashes the whole dataset row group by row group,
// handing each document to `onDoc` and keeping only ids (the reader's duplicate check) and the parts of
// the documents that are not text-only (the tasks' corpus modalities); the second pass reads the
// corpus row groups again, from a fresh reader, and hands every document on to be written. The
// virtual "BEIR + images" files are the same bytes as a whole read's (read-parquet.ts), so the shard
// hash is the same as readParquetShard's for the same files and mapping. The second pass checks that
// the corpus (its virtual JSONL digest and document count), queries and qrels are what the first pass
// saw; a dataset changed in between fails, naming the Parquet files, and nothing is kept.
import type { Doc, ParsedShard, Progress, ProgressFn } from '../../types';
import { ShardValidationError, type ShardSource } from '../../shard/source';
import { streamCorpus } from '../../shard/stream-corpus';
import type { ShardLimits } from '../../shard/limits';
import { sameBytes } from './cells';
import { checkParquetMapping, type ParquetMapping } from './mapping';
import { inspectParquet, type ParquetInspection } from './inspect-parquet';
import type { ImageStash } from './image-stash';
import type { OpenFile } from './parquet-files';
import { ParquetShard, type ReadParquetOptions } from './read-parquet';
import { VIRTUAL } from './relocate';

/** Options of {@link readParquetStreamed}: those of readParquetShard, with `onDoc` required. */
export interface ParquetStreamOptions extends ReadParquetOptions {
  onDoc: (doc: Doc) => void | Promise<void>;
}

/** Options of the second pass. */
export interface ParquetSecondPassOptions {
  limits?: Partial<ShardLimits>;
  isCancelled?: () => boolean;
}

/** The first pass's outcome, and the second pass to run once the import decided to store. */
export interface ParquetStreamed {
  /** The shard without its documents (`docs` empty, `streamed` set). */
  parsed: ParsedShard;
  /** Reads the corpus again and hands every document to `onDoc`, in the first pass's order. */
  streamCorpus(onDoc: (doc: Doc) => void | Promise<void>, opts?: ParquetSecondPassOptions): Promise<void>;
}

/** Images are checked and kept by the first pass; the second only needs their paths. */
const noImages: ImageStash = { put: () => undefined, take: async () => null };

/**
 * The first pass of a streamed Parquet import: reads and validates the dataset with `mapping` like
 * readParquetShard, each document to `opts.onDoc` instead of kept. Throws ShardValidationError whose
 * issues name the Parquet file, row group and row.
 */
export async function readParquetStreamed(
  source: ShardSource,
  mapping: ParquetMapping,
  opts: ParquetStreamOptions,
): Promise<ParquetStreamed> {
  const inspection = opts.inspection ?? (await inspectParquet(source));
  const mappingIssues = checkParquetMapping(inspection.files, mapping);
  if (mappingIssues.length) throw new ShardValidationError(mappingIssues);
  const { parsed, seen } = await firstPass(source, mapping, { ...opts, inspection });
  const streamed = parsed.streamed;
  if (!streamed) throw new Error('readParquetStreamed: the read did not stream');
  return {
    parsed,
    streamCorpus: async (onDoc, o = {}) => {
      const second = new ParquetShard(source, inspection, mapping, {
        limits: o.limits,
        isCancelled: o.isCancelled,
        imageStash: noImages,
      });
      try {
        // Queries and qrels again: the corpus's image paths depend on the query images before them.
        await second.prepare();
        const now = second.records();
        if (!sameBytes(now.queries, seen.queries) || !sameBytes(now.qrels, seen.qrels))
          throw new ShardValidationError([
            {
              file: inspection.label,
              code: 'changed-during-import',
              message:
                `the queries or qrels of ${inspection.label} changed while it was being imported (they differ ` +
                'from when they were checked); nothing was kept. Import it again once it no longer changes',
            },
          ]);
        await streamCorpus(second.virtualSource(), { format: 'beir+images', ...streamed }, onDoc, {
          limits: o.limits,
          isCancelled: o.isCancelled,
        });
      } catch (e) {
        if (!(e instanceof ShardValidationError)) throw e;
        // A whole-corpus issue (its digest changed) names the corpus files' folder, not the virtual file.
        const corpus = corpusLabel(inspection);
        throw new ShardValidationError(
          second.relocated(e).issues.map((i) => (i.file === VIRTUAL.corpus ? { ...i, file: corpus } : i)),
        );
      }
    },
  };
}

/** The corpus as issues name it: its one file, else the folder of its files, else the dataset. */
function corpusLabel(inspection: ParquetInspection): string {
  const files = inspection.files.filter((f) => f.role === 'corpus').map((f) => f.path);
  if (files.length === 1) return files[0];
  const dirs = new Set(files.map((f) => f.slice(0, f.lastIndexOf('/') + 1)));
  return dirs.size === 1 && [...dirs][0] ? [...dirs][0] : inspection.label;
}

/** The first pass, in its own scope: its reader (images, line maps) is not kept for the second. */
async function firstPass(
  source: ShardSource,
  mapping: ParquetMapping,
  opts: ParquetStreamOptions & { inspection: ParquetInspection },
): Promise<{ parsed: ParsedShard; seen: { queries: Uint8Array; qrels: Uint8Array } }> {
  const first: ParquetShard = new ParquetShard(source, opts.inspection, mapping, {
    ...opts,
    onProgress: opts.onProgress && parquetProgress(() => first, opts.onProgress),
  });
  return { parsed: await first.read(), seen: first.records() };
}

/** Compressed bytes of row groups [0, end) of a file (what reading them fetches, roughly). */
function groupBytes(f: OpenFile, end: number): number {
  let n = 0;
  for (const g of f.metadata.row_groups.slice(0, end))
    for (const c of g.columns) n += Number(c.meta_data?.total_compressed_size ?? 0);
  return n;
}

/**
 * Progress of the virtual corpus said as the Parquet file being read: `read` ticks count the
 * compressed bytes of its row groups read so far of the file's (so the import's rate and time left
 * are the file's, as for a JSONL corpus), `parse` ticks its rows (with the same bytes). Other
 * virtual files are named by their Parquet file when they have one.
 */
function parquetProgress(reader: () => ParquetShard, fn: ProgressFn): ProgressFn {
  const totals = new Map<string, number>();
  return (p: Progress) => {
    if ((p.kind !== 'read' && p.kind !== 'parse') || !Object.values(VIRTUAL).includes(p.file)) return fn(p);
    const r = reader();
    if (p.file !== VIRTUAL.corpus) {
      const role = p.file === VIRTUAL.queries ? 'query' : p.file === VIRTUAL.qrels ? 'qrels' : null;
      const files = role ? r.of(role, r.mapping.splits) : [];
      return fn(files.length === 1 ? { ...p, file: files[0].info.path } : p);
    }
    // Before the first row group is read: the first file, nothing read yet.
    const seg = r.maps.corpus.segments.at(-1);
    const f = seg ? r.of('corpus').find((x) => x.info.path === seg.file) : r.of('corpus')[0];
    if (!f) return fn(p);
    let total = totals.get(f.info.path);
    if (total === undefined) totals.set(f.info.path, (total = groupBytes(f, f.metadata.row_groups.length)));
    const bytes = seg ? groupBytes(f, seg.rowGroup + 1) : 0;
    if (p.kind === 'parse')
      return fn({
        kind: 'parse',
        file: f.info.path,
        lines: seg ? Math.max(0, seg.row + p.lines - seg.line + 1) : 0,
        bytes,
        totalBytes: total,
      });
    fn({ kind: 'read', file: f.info.path, bytes, totalBytes: total });
  };
}
