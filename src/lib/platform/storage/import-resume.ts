// A streamed import that stopped (a reload, a closed tab) can go on where it stopped (issue 18). While
// its documents are written, the uncommitted entry keeps two records beside them in the `artifacts`
// store, under kind RESUME_KIND: `state`, written once before the first document (what the first pass
// established: the checked shard without its documents, and how to recognise the source again), and
// `progress`, rewritten in the same transaction as each batch of documents (how many are committed,
// where the next one starts in the corpus file, and the hash state up to there). The sweep keeps an
// entry with a `state` record; it is committed (the commit marker written, both records deleted in
// the same transaction) only when complete, so nothing half-written is ever listed as a shard.
import type { CorpusMark } from '../../core/shard/stream-corpus';
import type { ParsedShard } from '../../core/types';
import { NOT_ACQUIRED, RESUME_KIND, withHashLock, type ShardStore } from './shard-store';

/** How the import's source is found again: a URL by itself, anything else picked again by the user. */
export type ResumeSource =
  { kind: 'url'; url: string } | { kind: 'files' | 'directory' | 'zip'; name: string };

/** What identifies a file on an HTTP server (the headers a Range request is checked against). */
export interface RemoteIdentity {
  size?: number;
  etag?: string;
  lastModified?: string;
}

/** The `state` record: written once, before the first document. */
export interface ResumeState {
  hash: string;
  /** The page's note of the import (import-note.ts), so its "stopped" message becomes the offer. */
  noteId?: string;
  /** The source as messages name it, and as ShardSummary.sourceLabel stores it. */
  sourceLabel: string;
  source: ResumeSource;
  /** URL sources: the corpus file's identity when the documents started to be written. */
  remote?: RemoteIdentity;
  /** Folder and zip sources: the size of every file the first pass read. */
  sizes?: Record<string, number | null>;
  /** The checked shard without its documents (ParsedShard.streamed says where they are). */
  parsed: ParsedShard;
  images: [string, Blob][];
  /** Whether the shard may have precomputed embeddings (checked against the documents afterwards). */
  precomputed: boolean;
  startedAt: number;
}

/** The `progress` record: rewritten with each batch of documents committed. */
export interface ResumeProgress {
  docChunks: number;
  docs: number;
  storedBytes: number;
  /** FNV-1a of each document chunk written (ShardMetaRecord.sums.docs). */
  sums: number[];
  /** The last document committed. */
  mark: CorpusMark;
  at: number;
}

/** A stopped import as the page offers it. */
export interface PausedImport {
  hash: string;
  noteId?: string;
  label: string;
  source: ResumeSource;
  docsDone: number;
  docTotal: number;
  startedAt: number;
}

/** The resume records of `hash`, if it is a stopped import (not a committed shard). */
export async function readResume(
  store: ShardStore,
  hash: string,
): Promise<{ state: ResumeState; progress?: ResumeProgress } | null> {
  const db = await store.db();
  if (await store.has(hash)) return null;
  const state = (await db.get('artifacts', [hash, RESUME_KIND, 'state']))?.value as ResumeState | undefined;
  if (!state) return null;
  const progress = (await db.get('artifacts', [hash, RESUME_KIND, 'progress']))?.value as
    ResumeProgress | undefined;
  return { state, ...(progress ? { progress } : {}) };
}

/**
 * Stopped imports that can resume, oldest first: entries with a `state` record and no commit marker
 * whose writer is gone (its lock free, waited for up to `waitMs`: a worker killed by a reload lets go
 * a moment later).
 */
export async function listPaused(store: ShardStore, waitMs = 0): Promise<PausedImport[]> {
  const db = await store.db();
  const hashes: string[] = [];
  const tx = db.transaction('artifacts', 'readonly');
  let cur = await tx.store.openKeyCursor();
  while (cur) {
    const h = (cur.key as unknown[])[0] as string;
    hashes.push(h);
    cur = await cur.continue([h, []] as unknown as never);
  }
  await tx.done;
  const out: PausedImport[] = [];
  for (const h of hashes) {
    const r = await withHashLock(h, () => readResume(store, h), waitMs);
    if (r === NOT_ACQUIRED || r === null) continue;
    const { state, progress } = r;
    out.push({
      hash: h,
      ...(state.noteId !== undefined ? { noteId: state.noteId } : {}),
      label: state.sourceLabel,
      source: state.source,
      docsDone: progress?.docs ?? 0,
      docTotal: state.parsed.streamed?.docCount ?? 0,
      startedAt: state.startedAt,
    });
  }
  return out.sort((a, b) => a.startedAt - b.startedAt);
}

/** Discards a stopped import: every record of its hash, unless it was committed meanwhile. */
export async function discardPaused(store: ShardStore, hash: string): Promise<void> {
  await withHashLock(hash, async () => {
    if (!(await store.has(hash))) await store.deleteRecords(hash);
  });
}

/** Hashes of the stopped imports in the cache now (before an import: what a cancel must not touch). */
export async function pausedHashes(store: ShardStore): Promise<Set<string>> {
  return new Set((await listPaused(store, 0)).map((p) => p.hash));
}

/** The identity headers of a response (a compressed transfer's length is not the file's). */
export function identityOf(res: Response): RemoteIdentity {
  const len = res.headers.get('Content-Length');
  const range = /\/(\d+)$/.exec(res.headers.get('Content-Range') ?? '');
  const size = range ? Number(range[1]) : len && !res.headers.get('Content-Encoding') ? Number(len) : NaN;
  const etag = res.headers.get('ETag');
  const lastModified = res.headers.get('Last-Modified');
  return {
    ...(Number.isFinite(size) ? { size } : {}),
    ...(etag ? { etag } : {}),
    ...(lastModified ? { lastModified } : {}),
  };
}

/** The identity of a file on a server (HEAD), or null when it is gone or the server says nothing. */
export async function remoteIdentity(url: string): Promise<RemoteIdentity | null> {
  const res = await fetch(url, { method: 'HEAD', credentials: 'same-origin' }).catch(() => null);
  if (!res?.ok) return null;
  return identityOf(res);
}

/** Whether two identities name the same file: every validator both have agrees, and there is one. */
export function sameRemote(a: RemoteIdentity, b: RemoteIdentity): boolean {
  let compared = 0;
  for (const k of ['size', 'etag', 'lastModified'] as const) {
    if (a[k] === undefined || b[k] === undefined) continue;
    if (a[k] !== b[k]) return false;
    compared++;
  }
  return compared > 0;
}

/**
 * The file at `url` from byte `start` on: a Range request, with If-Range so a file replaced meanwhile
 * comes whole. `start` is where the stream begins: the asked offset when the server honoured the
 * range for the same file, else 0 (the whole file: the reader checks the part already stored and
 * skips it). Without an ETag or Last-Modified the size alone does not vouch for the bytes before
 * `start`: the whole file is asked for.
 */
export async function fetchFrom(
  url: string,
  start: number,
  id: RemoteIdentity,
): Promise<{ start: number; identity: RemoteIdentity; body: ReadableStream<Uint8Array> } | null> {
  const validator = id.etag && !id.etag.startsWith('W/') ? id.etag : id.lastModified;
  const headers: Record<string, string> =
    start > 0 && validator
      ? { Range: `bytes=${start}-`, ...(validator ? { 'If-Range': validator } : {}) }
      : {};
  const res = await fetch(url, { credentials: 'same-origin', headers });
  if (new URL(res.url || url).origin !== new URL(url).origin) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`${url} redirected to another origin (${new URL(res.url).origin}); refusing to read it`);
  }
  if (res.status === 404 || res.status === 410) return null;
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status} for ${url}`);
  const ranged =
    res.status === 206 && new RegExp(`^bytes ${start}-`).test(res.headers.get('Content-Range') ?? '');
  if (res.status === 206 && !ranged) {
    await res.body.cancel().catch(() => undefined);
    throw new Error(`${url} answered another range than bytes=${start}-`);
  }
  return { start: ranged ? start : 0, identity: identityOf(res), body: res.body };
}

/** The `state` record's key and the `progress` record's, in the artifacts store. */
export const resumeKey = (hash: string, which: 'state' | 'progress') => [hash, RESUME_KIND, which] as const;
