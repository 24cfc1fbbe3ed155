// transformers.js's browser cache of model files, with each file's write put off until its load is
// over. transformers.js awaits a file's write to Cache Storage before it builds the ONNX session from
// it, so a fresh visit's first query waited on a copy of the whole file into the cache (90 MB for an
// fp32 MiniLM): on the 1M packed shard here, the first dense result came 0.3 s later for it
// (BENCHMARKS.md, first dense result). Here `put` queues the file, the session is built from the
// downloaded bytes at once, and the queue is written by `flushModelCache`:
//   - by the page once it is quiet after the load (encoder-client.ts, as the app shell's precache);
//   - by the corpus job right after its load (a long job; the queued copy is not kept through it);
//   - before the worker is retired on purpose (a WebGPU failure, a restart on another ORT build, a
//     query model stopped to free memory).
// A queued file is answered from the queue when it is read again. A worker terminated by a cancel
// loses its queue: the files are downloaded again by the next load, never left half-written (the
// Cache API stores an entry whole or not at all).
import { env } from '@huggingface/transformers';

/** What transformers.js asks of a custom cache (its `CacheInterface`). */
export interface ModelCache {
  match(request: string): Promise<Response | undefined>;
  put(request: string, response: Response): Promise<void>;
  delete(request: string): Promise<boolean>;
}

/** Files waiting to be written, by cache key, in the order they came. */
const queued = new Map<string, Response>();
/** The flushes so far, one after the other. */
let flushing: Promise<void> = Promise.resolve();

async function openCache(): Promise<Cache | null> {
  if (typeof caches === 'undefined') return null;
  try {
    return await caches.open(env.cacheKey);
  } catch {
    // Some contexts refuse Cache Storage (opaque origins): the files are then downloaded every time,
    // as transformers.js does without a cache.
    return null;
  }
}

export const modelCache: ModelCache = {
  async match(request) {
    const q = queued.get(request);
    if (q) return q.clone();
    return (await (await openCache())?.match(request)) ?? undefined;
  },
  async put(request, response) {
    queued.set(request, response);
  },
  async delete(request) {
    const had = queued.delete(request);
    const gone = (await (await openCache())?.delete(request)) ?? false;
    return had || gone;
  },
};

/** Files queued and not written yet. */
export function queuedModelFiles(): number {
  return queued.size;
}

/**
 * Forgets the files whose key contains `part`, queued or written (a model that failed to load: a
 * truncated file must not be served from the cache forever).
 */
export async function forgetModelFiles(part: string): Promise<void> {
  for (const k of [...queued.keys()]) if (k.includes(part)) queued.delete(k);
  const cache = await openCache();
  for (const req of (await cache?.keys()) ?? []) if (req.url.includes(part)) await cache!.delete(req);
}

/**
 * Writes every queued file to Cache Storage, one at a time; resolves when the queue is empty. A file
 * the browser will not store (quota) is dropped with a warning, as transformers.js does.
 */
export function flushModelCache(): Promise<void> {
  flushing = flushing.then(async () => {
    if (!queued.size) return;
    const cache = await openCache();
    for (const [request, response] of [...queued]) {
      queued.delete(request);
      if (!cache) continue;
      try {
        await cache.put(request, response);
      } catch (e) {
        console.warn(`loupe: could not cache the model file ${request}: ${(e as Error)?.message ?? e}`);
      }
    }
  });
  return flushing;
}
