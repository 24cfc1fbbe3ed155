// A shard on a static host opened "remote-first" (issue 19), in the shard worker (the page's CSP
// lets workers, not the page, fetch from other origins): when its shard.json names the document
// offsets file pack-shard writes (core/shard/doc-offsets.ts) and its embeddings include a packed IVF
// index, the shard is opened without importing its corpus. Its manifest, queries and qrels (small) are
// read and checked as an import checks them (ids against the offsets' directory); its documents are
// read by HTTP Range when a panel shows them (range-docs.ts). Nothing is written to IndexedDB.
import type { Doc, ProgressFn, Qrels, Query } from '../../core/types';
import { findDocRow, type DocDirectory, type DocFacts } from '../../core/shard/doc-directory';
import { DOC_OFFSETS_FILE, DOC_OFFSETS_KEY } from '../../core/shard/doc-offsets';
import { REMOTE_HEAD, remoteHeadFnv } from '../../core/shard/doc-offsets-v2';
import {
  PRECOMPUTED_INDEX,
  parsePrecomputedIndex,
  readPrecomputed,
  type PrecomputedEntry,
  type RemoteIvfSet,
} from '../../core/shard/precomputed';
import { ShardReadContext } from '../../core/shard/read-context';
import { readManifest } from '../../core/shard/read-manifest';
import { checkRelevance, readTsvQrels } from '../../core/shard/read-qrels';
import { readQueries } from '../../core/shard/read-queries';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../core/shard/source';
import { isObject } from '../../core/shard/json-text';
import { RangeDocReader, type DocLayout } from './range-docs';
import type { ShardSummary } from '../storage/shard-store';
import { urlSource } from './sources';
import { reportingSource } from './reporting-source';

/** A set embeddings/index.json lists: its model and the dtype of the queries it was made for. */
export type RemoteFirstSetName = Pick<PrecomputedEntry, 'model_id' | 'dtype'>;

/**
 * What a shard by URL says of itself before anything else is read (its shard.json and, when it names
 * one, embeddings/index.json): whether it opens remote-first or is imported, how many documents its
 * `counts` state (null: none stated), and the model and dtype of every set it lists.
 */
export interface ShardHead {
  remoteFirst: boolean;
  docs: number | null;
  sets: RemoteFirstSetName[];
}

/** What the page needs to show a shard opened remote-first. */
export interface RemoteShardHead {
  summary: ShardSummary;
  queries: Query[];
  qrels: Qrels;
  /**
   * The sorted id directory (ShardDocs answers `has` and finds rows by it), from a version 1 offsets
   * file; absent for version 2, whose ids are looked up by Range when needed (remoteDocRowsOf).
   */
  dir?: DocDirectory;
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

/** Rows of `ids` of the shard at `url` opened by openRemoteShard (ids it does not have are left out). */
export async function remoteDocRowsOf(url: string, ids: string[]): Promise<Map<string, number>> {
  return readerFor(url).rowsOf(ids);
}

/**
 * A read context whose corpus ids are answered by `has` (the offsets' directory, or the ids looked
 * up), without a Map of every id (a million of them): the queries and qrels are checked against it.
 */
function headContext(source: ShardSource, has: (id: string) => boolean, size: number): ShardReadContext {
  const ctx = new ShardReadContext(source, {});
  const lines = new Map<string, number>();
  Object.defineProperties(lines, { has: { value: has }, size: { get: () => size } });
  Object.defineProperty(ctx, 'docLines', { value: lines });
  ctx.format = 'beir+images';
  ctx.strict = true;
  return ctx;
}

/** Reads and checks the manifest, queries and qrels (ShardValidationError: ctx.issues has them). */
async function readHead(ctx: ShardReadContext): Promise<void> {
  try {
    await readManifest(ctx);
    // Documents with images are imported (their images are checked and stored then).
    if (ctx.manifest.tasks.some((t) => t.corpusModality !== 'text')) return;
    await readQueries(ctx, REMOTE_HEAD.queries);
    await readTsvQrels(ctx, REMOTE_HEAD.qrels);
    checkRelevance(ctx, REMOTE_HEAD.qrels);
  } catch (e) {
    if (!(e instanceof ShardValidationError)) throw e;
  } finally {
    await ctx.closeProbes();
  }
}

/** `source` with the files of `held` answered from memory (each fetched once). */
function holding(source: ShardSource, held: Map<string, Uint8Array | null>): ShardSource {
  return Object.create(source, {
    open: {
      value: async (path: string) => {
        if (!held.has(path)) return source.open(path);
        const bytes = held.get(path);
        return bytes ? [bytes] : null;
      },
    },
    size: { value: async (path: string) => (held.has(path) ? held.get(path)?.length : source.size(path)) },
  }) as ShardSource;
}

async function readWhole(source: ShardSource, path: string): Promise<Uint8Array | null> {
  const stream = await source.open(path);
  if (!stream) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  const out = new Uint8Array(parts.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of parts) out.set(c, (at += c.length) - c.length);
  return out;
}

/**
 * Opens the shard at `url` remote-first, or resolves null when it cannot be (no offsets file or no
 * packed index named, documents with images, a host that does not answer): it is then imported as
 * usual. Problems in the files it reads come back as issues (nothing is kept).
 */
export async function openRemoteShard(
  url: string,
  signal?: AbortSignal,
  /**
   * Told once shard.json is read, whether the shard opens remote-first (it names an offsets file and
   * a packed index) or is imported, with the model and dtype of every set embeddings/index.json lists
   * (read first: one small file), so that a model loading ahead takes the dtype its set was made for.
   */
  onHead?: (head: ShardHead) => void,
  /**
   * What it reads, as it reads it: a status for each step and `read` ticks (bytes of the file, of its
   * length when known) for each file read whole.
   */
  onProgress?: ProgressFn,
): Promise<RemoteShardHead | { issues: ShardIssue[] } | null> {
  const say = (message: string) => onProgress?.({ kind: 'status', message });
  const source = reportingSource(urlSource(url), onProgress);
  const base = folderOf(url);
  say(`Opening ${base}: reading shard.json`);
  let raw: Record<string, unknown>;
  try {
    const res = await fetch(new URL('shard.json', base), { signal, credentials: 'same-origin' });
    if (!res.ok) return null;
    raw = (await res.json()) as Record<string, unknown>;
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    return null;
  }
  const sets = isObject(raw) && raw.embeddings === PRECOMPUTED_INDEX;
  const remoteFirst = sets && raw[DOC_OFFSETS_KEY] === DOC_OFFSETS_FILE;
  if (!remoteFirst && !onHead) return null;
  // The sets' index, read once: its models and dtypes now, its sets below.
  const held = new Map<string, Uint8Array | null>();
  let named: RemoteFirstSetName[] = [];
  if (sets)
    try {
      const bytes = await readWhole(source, PRECOMPUTED_INDEX);
      held.set(PRECOMPUTED_INDEX, bytes);
      if (bytes) named = parsePrecomputedIndex(JSON.parse(new TextDecoder().decode(bytes)));
    } catch (e) {
      if ((e as Error)?.name === 'AbortError') throw e;
      // Unreadable here: readPrecomputed below (or the import) reads it again and says what is wrong.
    }
  const declared = isObject(raw) && isObject(raw.counts) ? raw.counts.corpus : undefined;
  try {
    onHead?.({ remoteFirst, docs: typeof declared === 'number' ? declared : null, sets: named });
  } catch {
    // The page's listener is not the opening's business.
  }
  if (!remoteFirst) return null;
  // A fresh reader: the shard may have changed since it was last opened.
  const reader = new RangeDocReader(base, DOC_OFFSETS_FILE);
  let layout: DocLayout;
  say(`Opening ${base} without importing it: reading ${DOC_OFFSETS_FILE}`);
  try {
    layout = await reader.layout(signal, onProgress);
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    // A missing or damaged offsets file: the shard is imported as usual.
    console.warn('loupe: the shard is imported (its document offsets cannot be used):', e);
    return null;
  }
  const offsets = layout.v1;
  const head = layout.v2?.head;
  if ((offsets ?? head)!.format !== 'beir+images') return null;
  const n = offsets ? offsets.starts.length : head!.n;
  // shard.json is there: a "BEIR + images" shard (no probe of the corpus, which would start its
  // download). Its queries and qrels are read once, and checked against the corpus's ids.
  say(`Opening ${base} without importing it: reading its queries and judgements`);
  for (const f of [REMOTE_HEAD.queries, REMOTE_HEAD.qrels]) held.set(f, await readWhole(source, f));
  const src = holding(source, held);
  let has: (id: string) => boolean;
  if (offsets) has = (id) => findDocRow(offsets.dir, id) >= 0;
  else {
    const q = held.get(REMOTE_HEAD.queries);
    const t = held.get(REMOTE_HEAD.qrels);
    if (q && t && head!.qrelsFnv !== null && remoteHeadFnv(q, t) === head!.qrelsFnv) {
      // The very files pack-shard checked with these readers: every document they name is there.
      has = () => true;
    } else {
      // Otherwise the ids they name are looked up (one block of the id table per block named).
      const asked = new Set<string>();
      await readHead(headContext(src, (id) => (asked.add(id), true), n));
      const found = await reader.rowsOf(asked, signal);
      has = (id) => found.has(id);
    }
  }
  const ctx = headContext(src, has, n);
  say(`Opening ${base} without importing it: checking its queries and judgements`);
  await readHead(ctx);
  if (!ctx.issues.length && ctx.manifest.tasks.some((t) => t.corpusModality !== 'text')) return null;
  // shard.json's `counts.corpus` (the key the importer compares, read-manifest.ts checkCounts).
  const stated = (ctx.counts as { corpus?: unknown } | undefined)?.corpus;
  if (!ctx.issues.length && typeof stated === 'number' && stated !== n)
    ctx.issue({
      file: DOC_OFFSETS_FILE,
      code: 'count-mismatch',
      message: `has ${n} documents, shard.json's counts.corpus says ${stated}`,
    });
  if (ctx.issues.length) return { issues: ctx.issues };
  const href = (path: string) => new URL(path.split('/').map(encodeURIComponent).join('/'), base).href;
  let pre: Awaited<ReturnType<typeof readPrecomputed>>;
  say(`Opening ${base} without importing it: checking its precomputed embeddings`);
  if (offsets) {
    // The sidecars are checked against the documents' ids in corpus order (every document has text).
    const ids: { id: string; text: string }[] = new Array(n);
    offsets.dir.rows.forEach((row, i) => {
      const d = offsets.dir;
      ids[row] = { id: d.ids.slice(i === 0 ? 0 : d.ends[i - 1], d.ends[i]), text: 'x' };
    });
    // Only the packed indexes are used here: a set without one is not read (its vectors may be GBs).
    pre = await readPrecomputed(src, ids, true, href, undefined, { indexesOnly: true });
  } else {
    // Version 2: the sidecars' rows must be the corpus order, by count and checksum of the ids.
    pre = await readPrecomputed(src, [], true, href, { docs: n, idsFnv: head!.idsFnv });
  }
  for (const p of pre.problems) console.warn(`loupe: precomputed embeddings not used: ${p}`);
  if (!pre.ivf?.length) return null;
  const id = offsets ?? head!;
  const hash = `remote-${id.corpusFnv.toString(16).padStart(8, '0')}-${id.corpusBytes}`;
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
  return {
    summary,
    queries: ctx.queries,
    qrels: ctx.qrels,
    ...(offsets ? { dir: offsets.dir } : {}),
    facts,
    ivf: pre.ivf,
  };
}
