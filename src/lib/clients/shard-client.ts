// Page-side client of workers/shard.worker.ts. Owns the worker (started lazily, dropped when it dies
// or is cancelled) and turns `{ signal, onProgress }` into comlink calls: cancel = terminate.
import * as Comlink from 'comlink';
import type { ImportResult, InspectResult, ShardWorkerApi } from '../../../workers/shard.worker';
import type { ParquetMapping } from '../core/media/parquet/mapping';
import type { Doc, ProgressFn } from '../core/types';
import { parseLimits, type ShardLimits } from '../core/shard/limits';
import type { ShardIssue } from '../core/shard/source';
import { openShardStore } from '../platform/storage/shard-store';
import { discardPaused, pausedHashes } from '../platform/storage/import-resume';
import type { SourceDescriptor } from '../platform/sources/sources';
import type { ShardHead } from '../platform/sources/remote-shard';

export type { ImportResult, InspectResult, SourceDescriptor };

/** CANCEL_SWEEP_WAIT_MS: how long a cancel waits for the killed worker's lock before sweeping its debris. */
export const CANCEL_SWEEP_WAIT_MS = 5000;

export interface JobOptions {
  signal?: AbortSignal;
  onProgress?: ProgressFn;
}

let worker: Worker | null = null;
let remote: Comlink.Remote<ShardWorkerApi> | null = null;
/** Rejecters of calls in flight, so a dead or terminated worker never leaves a promise hanging. */
const pending = new Set<(e: unknown) => void>();

function connect(): Comlink.Remote<ShardWorkerApi> {
  if (!remote) {
    const w = new Worker(new URL('../../../workers/shard.worker.ts', import.meta.url), {
      type: 'module',
      name: 'loupe-shard',
    });
    w.addEventListener('error', (e) => {
      e.preventDefault();
      stop(w, new Error(`the shard worker failed: ${e.message || 'could not start'}`));
    });
    worker = w;
    remote = Comlink.wrap<ShardWorkerApi>(w);
  }
  return remote;
}

/** Terminates the worker (if it is still `w`) and rejects every call in flight with `reason`. */
function stop(w: Worker | null, reason: unknown): void {
  if (!w || w !== worker) return;
  w.terminate();
  worker = null;
  remote = null;
  for (const reject of [...pending]) reject(reason);
  pending.clear();
}

function abortError(): DOMException {
  return new DOMException('shard import cancelled', 'AbortError');
}

/** Options of {@link importShard}. */
export interface ImportShardOptions extends JobOptions {
  /**
   * A Parquet dataset's confirmed column mapping (from inspectParquet, possibly edited). Without it a
   * source holding only .parquet files is imported with the detected mapping.
   */
  parquet?: ParquetMapping;
  /**
   * Size limits for this import. Default: the page URL's options (`?maxLineMB=…&maxFieldMB=…&maxImageMB=…&maxImageMP=…`,
   * see core/shard/limits.ts), else DEFAULT_LIMITS.
   */
  limits?: Partial<ShardLimits>;
  /** Tests only: let the write run into the quota instead of refusing up front. */
  skipPreflight?: boolean;
  /** Tests only: the write fails as on a full disk once this many transactions have committed. */
  simulateQuotaAfterTx?: number;
  /** Tests only: the write waits for good once this many transactions have committed. */
  simulateHoldAfterTx?: number;
  /** The page's note of this import (import-note.ts), kept with a streamed import that may resume. */
  noteId?: string;
}

/** Limits given in the page URL; a malformed value becomes an issue naming the option. */
function limitsFromPage(): { limits: ShardLimits; issues: ShardIssue[] } {
  const search = typeof location === 'undefined' ? '' : location.search;
  const params = new URLSearchParams(search);
  const { limits, errors } = parseLimits((name) => params.get(name));
  return { limits, issues: errors.map((message) => ({ file: '(page URL)', code: 'bad-option', message })) };
}

/**
 * Imports a shard in the worker: read, validate, cache. Resolves `{ ok: false, issues }` for an
 * invalid shard (nothing cached), `{ ok: true, summary }` otherwise. Aborting terminates the
 * worker, removes whatever it had half-written, then rejects with an AbortError.
 */
export function importShard(source: SourceDescriptor, opts: ImportShardOptions = {}): Promise<ImportResult> {
  const { onProgress, parquet, skipPreflight, simulateQuotaAfterTx, simulateHoldAfterTx } = opts;
  let limits = opts.limits;
  if (!limits) {
    const fromPage = limitsFromPage();
    if (fromPage.issues.length) return Promise.resolve({ ok: false, issues: fromPage.issues });
    limits = fromPage.limits;
  }
  const options = {
    limits,
    skipPreflight,
    noteId: opts.noteId,
    ...(parquet ? { parquet } : {}),
    ...(simulateQuotaAfterTx !== undefined ? { simulateQuotaAfterTx } : {}),
    ...(simulateHoldAfterTx !== undefined ? { simulateHoldAfterTx } : {}),
  };
  // The shards cached before this import: a cancel that lands after the worker committed the shard
  // (its last progress tick and the commit race the abort) removes it too, so a cancel always leaves
  // nothing behind.
  const before = committedHashes();
  // …and a cancelled streamed import is not left to resume either.
  const paused = withStore(pausedHashes);
  return call<ImportResult>(
    opts.signal,
    async (api) => {
      await Promise.all([before, paused]);
      return api.importShard(source, onProgress ? Comlink.proxy(onProgress) : undefined, options);
    },
    async () => {
      await removeShardsNotIn(await before);
      const keep = await paused;
      if (keep)
        await withStore(async (s) => {
          for (const h of await pausedHashes(s)) if (!keep.has(h)) await discardPaused(s, h);
        });
    },
  );
}

/**
 * Goes on with the stopped streamed import of `hash` (workers/shard/shard-resume.ts): `source` is the folder
 * or zip picked again, none for a URL. A source that differs is refused with issues (and the stopped
 * import discarded); a cancel discards it too.
 */
export function resumeImport(
  hash: string,
  source: SourceDescriptor | undefined,
  opts: JobOptions = {},
): Promise<ImportResult> {
  const { limits, issues } = limitsFromPage();
  if (issues.length) return Promise.resolve({ ok: false, issues });
  return call<ImportResult>(
    opts.signal,
    (api) =>
      api.resumeImport(hash, source, opts.onProgress ? Comlink.proxy(opts.onProgress) : undefined, {
        limits,
      }),
    async () => void (await withStore((s) => discardPaused(s, hash))),
  );
}

/** Runs `fn` on a connection to the shard cache (no sweep); null when the cache cannot be opened. */
async function withStore<T>(
  fn: (s: Awaited<ReturnType<typeof openShardStore>>) => Promise<T>,
): Promise<T | null> {
  try {
    const store = await openShardStore({ sweep: false });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  } catch {
    return null;
  }
}

async function committedHashes(): Promise<Set<string> | null> {
  try {
    const store = await openShardStore({ sweep: false });
    const hashes = new Set((await store.list()).map((s) => s.hash));
    await store.close();
    return hashes;
  } catch {
    return null;
  }
}

/** After a cancel: deletes every shard committed since `before` was taken (none when it is unknown). */
async function removeShardsNotIn(before: Set<string> | null): Promise<void> {
  if (!before) return;
  const store = await openShardStore({ sweep: false });
  try {
    for (const s of await store.list()) if (!before.has(s.hash)) await store.delete(s.hash);
  } finally {
    await store.close();
  }
}

/**
 * Reads a Parquet dataset's file footers in the worker and detects its layout and column mapping:
 * `{ ok: true, inspection }` (show `inspection.mapping` for confirmation), or `{ ok: false, issues }`.
 */
export function inspectParquet(
  source: SourceDescriptor,
  opts: { signal?: AbortSignal } = {},
): Promise<InspectResult> {
  return call<InspectResult>(opts.signal, (api) => api.inspectParquet(source));
}

/**
 * The Parquet inspection of a source that holds a Parquet dataset (show its mapping for confirmation
 * before importing), or `null` for a JSONL shard.
 */
export function inspectIfParquet(
  source: SourceDescriptor,
  opts: { signal?: AbortSignal } = {},
): Promise<InspectResult | null> {
  return call<InspectResult | null>(opts.signal, (api) => api.inspectIfParquet(source));
}

/**
 * Builds the document directory of cached shard `hash` in the worker when it is not stored yet (one
 * scan of its corpus; see platform/storage/shard-docs.ts). `queryImages`: the images of the shard's queries.
 */
export function indexShardDocs(hash: string, queryImages: string[], opts: JobOptions = {}): Promise<void> {
  const { onProgress } = opts;
  return call<void>(opts.signal, (api) =>
    api.indexDocs(hash, queryImages, onProgress ? Comlink.proxy(onProgress) : undefined),
  );
}

/**
 * Opens a packed shard on a static host without importing its corpus, or null when it cannot be
 * (platform/sources/remote-shard.ts; in the worker, which may fetch from the shard's origin).
 */
export function openRemoteShard(url: string, opts: JobOptions & { onHead?: (head: ShardHead) => void } = {}) {
  const { onHead: told, onProgress } = opts;
  return call<Awaited<ReturnType<ShardWorkerApi['openRemote']>>>(opts.signal, (api) =>
    api.openRemote(
      url,
      told ? Comlink.proxy(told) : undefined,
      onProgress ? Comlink.proxy(onProgress) : undefined,
    ),
  );
}

/** Documents at corpus `rows` of a shard opened by openRemoteShard, read from its host by Range. */
export function readRemoteDocs(url: string, rows: number[]): Promise<Map<number, Doc>> {
  return call<Map<number, Doc>>(undefined, (api) => api.remoteDocs(url, rows));
}

/** Rows of `ids` in a shard opened by openRemoteShard (looked up by Range; ids it lacks are left out). */
export function remoteRowsOf(url: string, ids: string[]): Promise<Map<string, number>> {
  return call<Map<string, number>>(undefined, (api) => api.remoteRowsOf(url, ids));
}

/** Runs one worker call with cancel (terminate + sweep) and worker-death handling. */
function call<T>(
  signal: AbortSignal | undefined,
  invoke: (api: Comlink.Remote<ShardWorkerApi>) => Promise<T>,
  afterCancel?: () => Promise<void>,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(abortError());
  const api = connect();
  const w = worker;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const reject1 = (e: unknown) => {
      if (settled) return;
      settled = true;
      pending.delete(reject1);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    };
    const onAbort = () => {
      if (settled) return;
      settled = true;
      pending.delete(reject1);
      // Other calls in flight on this worker die with it.
      stop(w, new Error('the shard worker was stopped because another import was cancelled'));
      // The killed worker's Web Lock is released by the browser; wait for it, then sweep the
      // uncommitted records it left (see shard-store.ts), so a cancel leaves nothing behind.
      void sweepAfterCancel()
        .then(() => afterCancel?.())
        .catch((e) => console.warn('loupe: cleaning up a cancelled import failed', e))
        .finally(() => reject(abortError()));
    };
    pending.add(reject1);
    signal?.addEventListener('abort', onAbort, { once: true });
    invoke(api).then((r) => {
      if (settled) return;
      settled = true;
      pending.delete(reject1);
      signal?.removeEventListener('abort', onAbort);
      resolve(r);
    }, reject1);
  });
}

async function sweepAfterCancel(): Promise<void> {
  try {
    const store = await openShardStore({ sweep: false });
    await store.sweep({ waitMs: CANCEL_SWEEP_WAIT_MS });
    await store.close();
  } catch (e) {
    console.warn('loupe: cleaning up a cancelled import failed; it will be swept on next start', e);
  }
}

/** Terminates the shard worker if it is running (calls in flight reject). */
export function stopShardWorker(): void {
  stop(worker, abortError());
}
