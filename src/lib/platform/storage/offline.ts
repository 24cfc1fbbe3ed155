// Offline use and storage: what this browser holds for Loupe (shards, runs, embeddings and other
// artifacts in IndexedDB, model files in transformers.js's browser cache, the app shell in the
// service worker's cache), how much quota is left, removal, the persistent-storage request, and
// which registry models work without the hub.
import type { ModelSpec } from '../../core/retrieval/models';
import { openShardStore } from './shard-store';
import { MODEL_REGISTRY, RERANKER_REGISTRY } from '../models/model-registry';
import { modelFolder, servedModelFolders } from '../models/model-index';
import { listIvfCache } from './ivf-cache';
import { ivfCacheKey } from '../../core/retrieval/ivf-cache-key';
import { REMOTE_IVF_KIND, type RemoteIvfSet } from '../../core/shard/precomputed';

/** TRANSFORMERS_CACHE: the Cache Storage name transformers.js keeps model files in (env.cacheKey). */
export const TRANSFORMERS_CACHE = 'transformers-cache';
/** SHELL_CACHE_PREFIX: Cache Storage names of the service worker's app-shell caches. */
export const SHELL_CACHE_PREFIX = 'loupe-shell-';

/** How a model can load without the hub. */
export type OfflineSource = 'generated' | 'self-hosted' | 'cached';

/** A registry model that loads offline, and from where. */
export interface OfflineModel {
  spec: ModelSpec;
  source: OfflineSource;
}

/** One cached model's files in transformers.js's browser cache. */
export interface CachedModel {
  /** Hub id (`owner/name`) or local folder path the files belong to. */
  model: string;
  files: number;
  /** Sum of the files' Content-Length (0 when the cache did not keep it). */
  bytes: number;
}

/** What Loupe stores in this browser, and the origin's quota. */
export interface StorageReport {
  shards: {
    hash: string;
    name: string;
    storedBytes: number;
    runs: number;
    /** Artifact counts by kind (`run`, `emb`, `bm25`, `hnsw`, `precomputed`…). */
    artifacts: Record<string, number>;
    /** Packed indexes on the shard's host cached in OPFS (absent when none is): their URLs and size. */
    ivf?: { urls: string[]; files: number; bytes: number };
  }[];
  models: CachedModel[];
  /** Files in the service worker's app-shell cache (0 when there is none). */
  shellFiles: number;
  usage?: number;
  quota?: number;
  persisted: boolean;
}

const hasCaches = () => typeof caches !== 'undefined';

/** The model a cached request belongs to: the hub's `<owner>/<name>/resolve/…` or a local folder. */
function modelOfUrl(url: string): string {
  const u = new URL(url, globalThis.location?.href);
  const hub = /^\/([^/]+\/[^/]+)\/resolve\//.exec(u.pathname);
  if (hub) return hub[1];
  const local = /\/models\/(.+)\/(?:onnx\/)?[^/]+$/.exec(u.pathname);
  return local ? local[1].replace(/\/onnx$/, '') : u.pathname;
}

/** Model files in transformers.js's browser cache, grouped by model. */
export async function cachedModels(): Promise<CachedModel[]> {
  if (!hasCaches() || !(await caches.has(TRANSFORMERS_CACHE))) return [];
  const cache = await caches.open(TRANSFORMERS_CACHE);
  const byModel = new Map<string, CachedModel>();
  for (const req of await cache.keys()) {
    const model = modelOfUrl(req.url);
    const entry = byModel.get(model) ?? { model, files: 0, bytes: 0 };
    const res = await cache.match(req);
    entry.files++;
    entry.bytes += Number(res?.headers.get('content-length') ?? 0) || 0;
    byModel.set(model, entry);
  }
  return [...byModel.values()].sort((a, b) => a.model.localeCompare(b.model));
}

/** Removes a model's files from transformers.js's browser cache; returns how many were removed. */
export async function removeCachedModel(model: string): Promise<number> {
  if (!hasCaches()) return 0;
  const cache = await caches.open(TRANSFORMERS_CACHE);
  let n = 0;
  for (const req of await cache.keys()) if (modelOfUrl(req.url) === model && (await cache.delete(req))) n++;
  return n;
}

/** Lists what Loupe stores here: shards (with runs and artifacts), cached models, the app shell, quota. */
export async function listStorage(): Promise<StorageReport> {
  const store = await openShardStore({ sweep: false });
  const shards: StorageReport['shards'] = [];
  const ivfFolders = await listIvfCache();
  for (const s of await store.list()) {
    const artifacts: Record<string, number> = {};
    for (const kind of ['run', 'emb', 'bm25', 'hnsw', 'precomputed']) {
      const n = await store.countArtifacts(s.hash, kind);
      if (n) artifacts[kind] = n;
    }
    const ivf = { urls: [] as string[], files: 0, bytes: 0 };
    for (const [, set] of await store.listArtifacts<RemoteIvfSet>(s.hash, REMOTE_IVF_KIND)) {
      const folder = ivfFolders.get(ivfCacheKey(set.ivfUrl));
      if (!folder?.files) continue;
      ivf.urls.push(set.ivfUrl);
      ivf.files += folder.files;
      ivf.bytes += folder.bytes;
    }
    shards.push({
      hash: s.hash,
      name: s.name,
      storedBytes: s.storedBytes,
      runs: artifacts.run ?? 0,
      artifacts,
      ...(ivf.urls.length ? { ivf } : {}),
    });
  }
  let shellFiles = 0;
  if (hasCaches())
    for (const name of await caches.keys())
      if (name.startsWith(SHELL_CACHE_PREFIX)) shellFiles += (await (await caches.open(name)).keys()).length;
  const est = await store.estimate();
  return { shards, models: await cachedModels(), shellFiles, ...est };
}

/** Removes a shard's stored corpus embeddings (computed and precomputed); runs stay. */
export async function removeEmbeddings(hash: string): Promise<void> {
  const store = await openShardStore({ sweep: false });
  await store.deleteArtifacts(hash, 'emb');
  await store.deleteArtifacts(hash, 'precomputed');
}

/**
 * Asks the browser to keep this origin's storage under pressure (`navigator.storage.persist()`); call
 * it when the user caches a model or a shard. `granted`: storage is persistent now; `already`: it was.
 */
export async function requestPersistentStorage(): Promise<{ granted: boolean; already: boolean }> {
  const storage = globalThis.navigator?.storage;
  if (!storage?.persist) return { granted: false, already: false };
  if (await storage.persisted().catch(() => false)) return { granted: true, already: true };
  return { granted: await storage.persist().catch(() => false), already: false };
}

/**
 * The registry's models that load without the hub: generated test models and self-hosted copies of
 * hub models that this site serves (models/index.json lists them: no request per model), and models
 * whose files are in transformers.js's browser cache.
 */
export async function offlineModels(
  models: readonly ModelSpec[] = [...MODEL_REGISTRY.models, ...RERANKER_REGISTRY],
): Promise<OfflineModel[]> {
  const cached = new Set((await cachedModels().catch(() => [])).map((m) => m.model));
  const served = await servedModelFolders();
  const out: OfflineModel[] = [];
  for (const spec of models) {
    const folder = modelFolder(spec);
    if (cached.has(folder) || cached.has(`generated/${folder}`)) out.push({ spec, source: 'cached' });
    else if (served?.has(folder)) out.push({ spec, source: spec.local ? 'generated' : 'self-hosted' });
  }
  return out;
}

/** What a model can stand in for: a cross-encoder, an image–text model or a text embedding model. */
export function modelRole(s: ModelSpec): 'reranker' | 'image' | 'text' {
  return s.kind === 'cross-encoder'
    ? 'reranker'
    : s.kind === 'clip' || s.kind === 'siglip'
      ? 'image'
      : 'text';
}

/**
 * The model a picker should default to when the hub is unreachable: `preferred` when it loads
 * offline, else the first offline model of the same role (reranker, image–text or text); null when
 * none does.
 */
export function offlineDefault(available: readonly OfflineModel[], preferred?: ModelSpec): ModelSpec | null {
  if (preferred && available.some((m) => m.spec.id === preferred.id)) return preferred;
  if (!preferred) return available.find((m) => modelRole(m.spec) !== 'reranker')?.spec ?? null;
  return available.find((m) => modelRole(m.spec) === modelRole(preferred))?.spec ?? null;
}

/** Whether the browser believes it is online (a false `true` is caught by the model load's own error). */
export function browserOnline(): boolean {
  return globalThis.navigator?.onLine !== false;
}

/**
 * Asks the service worker to cache the app shell and the ONNX Runtime wasm (listed by the build in
 * sw-precache.json). Resolves with the cached version, or `ok: false` and why.
 */
export async function precacheShell(): Promise<{
  ok: boolean;
  version?: string;
  files?: number;
  error?: string;
}> {
  const sw = globalThis.navigator?.serviceWorker;
  const worker = sw?.controller ?? (await sw?.ready.catch(() => undefined))?.active;
  if (!worker) return { ok: false, error: 'no service worker controls this page' };
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (e) => resolve(e.data);
    worker.postMessage({ type: 'precache' }, [channel.port2]);
  });
}
