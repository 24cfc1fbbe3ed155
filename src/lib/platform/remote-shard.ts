// A shard on a static host opened "remote-first" (issue 19), in the shard worker (the page's CSP
// lets workers, not the page, fetch from other origins): when its shard.json names the document
// offsets file pack-shard writes (core/shard/doc-offsets.ts) and its embeddings include a packed IVF
// index, the shard is opened without importing its corpus. Its manifest, queries and qrels (small) are
// read and checked as an import checks them (ids against the offsets' directory); its documents are
// read by HTTP Range when a panel shows them (range-docs.ts). Nothing is written to IndexedDB.
import type { Doc, Qrels, Query } from '../core/types';
import { findDocRow, type DocDirectory, type DocFacts } from '../core/shard/doc-directory';
import { DOC_OFFSETS_FILE, DOC_OFFSETS_KEY, type DocOffsets } from '../core/shard/doc-offsets';
import { PRECOMPUTED_INDEX, readPrecomputed, type RemoteIvfSet } from '../core/shard/precomputed';
import { ShardReadContext } from '../core/shard/read-context';
import { readManifest } from '../core/shard/read-manifest';
import { checkRelevance, readTsvQrels } from '../core/shard/read-qrels';
import { readQueries } from '../core/shard/read-queries';
import { ShardValidationError, type ShardIssue } from '../core/shard/source';
import { RangeDocReader } from './range-docs';
import type { ShardSummary } from './shard-store';
import { urlSource } from './sources';

/** What the page needs to show a shard opened remote-first. */
export interface RemoteShardHead {
  summary: ShardSummary;
  queries: Query[];
  qrels: Qrels;
  /** The sorted id directory (ShardDocs answers `has` and finds rows by it). */
  dir: DocDirectory;
  facts: DocFacts;
  /** The packed index sets (dense queries go through them). */
  ivf: RemoteIvfSet[];
}

/** One reader per shard URL (its offsets file is fetched once per worker). */
const readers = new Map<string, RangeDocReader>();

/** The shard's folder, as the URL source reads it (no query or fragment, a trailing slash). */
function folderOf(url: string): string {
  const folder = new URL(url, (globalThis as { location?: { href: string } }).location?.href);
  if (!folder.pathname.endsWith('/')) folder.pathname += '/';
  folder.search = '';
  folder.hash = '';
  return folder.href;
}

function readerFor(url: string): RangeDocReader {
  let reader = readers.get(url);
  if (!reader) readers.set(url, (reader = new RangeDocReader(folderOf(url), DOC_OFFSETS_FILE)));
  return reader;
}

/**
 * Documents at corpus `rows` of the shard at `url`, opened by openRemoteShard, read by Range (a new
 * worker, after a cancelled job stopped the last one, fetches the offsets file again).
 */
export async function remoteDocRows(url: string, rows: number[]): Promise<Map<number, Doc>> {
  return readerFor(url).readRows(rows);
}

/** A read context whose corpus ids are the offsets' directory (qrels are checked against it). */
function headContext(source: ReturnType<typeof urlSource>, o: DocOffsets): ShardReadContext {
  const ctx = new ShardReadContext(source, {});
  const lines = new Map<string, number>();
  // Every id without a Map of every id (a million of them): answered by the sorted directory.
  Object.defineProperties(lines, {
    has: { value: (id: string) => findDocRow(o.dir, id) >= 0 },
    get: {
      value: (id: string) => {
        const r = findDocRow(o.dir, id);
        return r < 0 ? undefined : o.lines[r];
      },
    },
    size: { get: () => o.starts.length },
  });
  Object.defineProperty(ctx, 'docLines', { value: lines });
  return ctx;
}

/**
 * Opens the shard at `url` remote-first, or resolves null when it cannot be (no offsets file or no
 * packed index named, documents with images, a host that does not answer): it is then imported as
 * usual. Problems in the files it reads come back as issues (nothing is kept).
 */
export async function openRemoteShard(
  url: string,
  signal?: AbortSignal,
): Promise<RemoteShardHead | { issues: ShardIssue[] } | null> {
  const source = urlSource(url);
  const base = folderOf(url);
  let raw: Record<string, unknown>;
  try {
    const res = await fetch(new URL('shard.json', base), { signal, credentials: 'same-origin' });
    if (!res.ok) return null;
    raw = (await res.json()) as Record<string, unknown>;
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    return null;
  }
  if (raw?.[DOC_OFFSETS_KEY] !== DOC_OFFSETS_FILE || raw.embeddings !== PRECOMPUTED_INDEX) return null;
  // A fresh reader: the shard may have changed since it was last opened.
  const reader = new RangeDocReader(base, DOC_OFFSETS_FILE);
  let offsets: DocOffsets;
  try {
    offsets = await reader.offsets(signal);
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    // A missing or damaged offsets file: the shard is imported as usual.
    console.warn('loupe: the shard is imported (its document offsets cannot be used):', e);
    return null;
  }
  if (offsets.format !== 'beir+images') return null;
  const ctx = headContext(source, offsets);
  try {
    // shard.json is there: a "BEIR + images" shard (no probe of the corpus, which would start its download).
    const layout = { queries: 'queries.jsonl', qrels: 'qrels/test.tsv' };
    ctx.format = 'beir+images';
    ctx.strict = true;
    await readManifest(ctx);
    // Documents with images are imported (their images are checked and stored then).
    if (ctx.manifest.tasks.some((t) => t.corpusModality !== 'text')) return null;
    await readQueries(ctx, layout.queries);
    await readTsvQrels(ctx, layout.qrels);
    checkRelevance(ctx, layout.qrels);
    const stated = (ctx.counts as { docs?: unknown } | undefined)?.docs;
    if (typeof stated === 'number' && stated !== offsets.starts.length)
      ctx.issue({
        file: DOC_OFFSETS_FILE,
        code: 'count-mismatch',
        message: `has ${offsets.starts.length} documents, shard.json's counts.docs says ${stated}`,
      });
  } catch (e) {
    if (!(e instanceof ShardValidationError)) throw e;
  } finally {
    await ctx.closeProbes();
  }
  if (ctx.issues.length) return { issues: ctx.issues };
  // The sidecars are checked against the documents' ids in corpus order (every document has text).
  const n = offsets.starts.length;
  const ids: { id: string; text: string }[] = new Array(n);
  offsets.dir.rows.forEach((row, i) => {
    const d = offsets.dir;
    ids[row] = { id: d.ids.slice(i === 0 ? 0 : d.ends[i - 1], d.ends[i]), text: 'x' };
  });
  const href = (path: string) => new URL(path.split('/').map(encodeURIComponent).join('/'), base).href;
  const pre = await readPrecomputed(source, ids, true, href);
  for (const p of pre.problems) console.warn(`loupe: precomputed embeddings not used: ${p}`);
  if (!pre.ivf?.length) return null;
  const hash = `remote-${offsets.corpusFnv.toString(16).padStart(8, '0')}-${offsets.corpusBytes}`;
  readers.set(url, reader);
  let qrels = 0;
  for (const row of ctx.qrels.values()) qrels += row.size;
  const summary: ShardSummary = {
    hash,
    name: ctx.manifest.name,
    format: 'beir+images',
    sourceLabel: url,
    manifest: ctx.manifest,
    warnings: ctx.warnings,
    counts: { docs: n, queries: ctx.queries.length, qrels, images: 0 },
    storedBytes: 0,
    sourceBytes: ctx.bytes + reader.bytesRead,
    cachedAt: Date.now(),
  };
  const facts: DocFacts = { docs: n, imageDocs: 0, textlessDocs: 0, multiImageDocs: 0, queryImageDocs: [] };
  return { summary, queries: ctx.queries, qrels: ctx.qrels, dir: offsets.dir, facts, ivf: pre.ivf };
}
