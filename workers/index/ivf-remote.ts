// Dense search over a packed IVF-int8 index on a static host (src/lib/core/retrieval/ivf.ts has the
// layout), without downloading the vectors: the first query reads the header (two Range requests:
// the 64-byte fixed part, then the rest), every query reads the lists it probes and the float16 rows
// of its best candidates (one Range request per run of consecutive rows), and all of it is kept in
// an OPFS cache (memory where OPFS is missing), so later queries, later visits and offline use read
// what is cached. A later visit only re-reads the 64-byte fixed part to check that the file has not
// changed (its checksum), and uses the cache without it when the host cannot be reached.
//
// Bytes are counted per query as the response bodies received (HTTP headers not included), which
// is what a static server's access log records as bytes sent.
import {
  IVF_DEFAULTS,
  defaultNprobe,
  IVF_FIXED_BYTES,
  exactRowScore,
  finalTopK,
  listBytes,
  listCount,
  parseIvfFixed,
  parseIvfHeader,
  parseIvfList,
  probeLists,
  rowRuns,
  type IvfHeader,
  type IvfList,
} from '../../src/lib/core/retrieval/ivf';
import { f16ToF32 } from '../../src/lib/core/shard/vector-files';
import { IVF_CACHE_DIR, ivfCacheKey } from '../../src/lib/core/retrieval/ivf-cache-key';
import type { IvfRemoteRequest, IvfRemoteResult, IvfQueryStats } from './ivf-types';
import { scoreProbed } from './ivf-gpu';

type CacheKind = 'opfs' | 'memory';

interface ByteCache {
  kind: CacheKind;
  get(name: string): Promise<Uint8Array | null>;
  put(name: string, bytes: Uint8Array): Promise<void>;
  clear(): Promise<void>;
}

class MemoryCache implements ByteCache {
  readonly kind = 'memory' as const;
  private readonly m = new Map<string, Uint8Array>();
  async get(name: string) {
    return this.m.get(name) ?? null;
  }
  async put(name: string, bytes: Uint8Array) {
    this.m.set(name, bytes);
  }
  async clear() {
    this.m.clear();
  }
}

interface OpfsWritable {
  write(b: Uint8Array): Promise<void>;
  close(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * OPFS folder `loupe-ivf/<hash of the index URL>/`, one file per header, list and row. The entries'
 * names are listed once at open and kept as they are written: a first query's hundred-odd lookups
 * of entries not there would each be a failed call to the browser's file system.
 */
class OpfsCache implements ByteCache {
  readonly kind = 'opfs' as const;
  private constructor(
    private readonly parent: FileSystemDirectoryHandle,
    private readonly name: string,
    private dir: FileSystemDirectoryHandle,
    private readonly names: Set<string>,
  ) {}
  static async open(key: string): Promise<OpfsCache> {
    const root = await navigator.storage.getDirectory();
    const parent = await root.getDirectoryHandle(OPFS_DIR, { create: true });
    const dir = await parent.getDirectoryHandle(key, { create: true });
    const probe = await dir.getFileHandle('.probe', { create: true });
    if (!(probe as unknown as { createWritable?: unknown }).createWritable)
      throw new Error('this browser cannot write OPFS files (no createWritable)');
    const names = new Set<string>();
    // Chromium's `<name>.crswap` files are writes still open (or lost): not entries.
    for await (const n of (dir as unknown as { keys(): AsyncIterable<string> }).keys())
      if (!n.endsWith('.crswap')) names.add(n);
    return new OpfsCache(parent, key, dir, names);
  }
  async get(name: string) {
    if (!this.names.has(name)) return null;
    try {
      const f = await (await this.dir.getFileHandle(name)).getFile();
      return new Uint8Array(await f.arrayBuffer());
    } catch {
      return null;
    }
  }
  async put(name: string, bytes: Uint8Array) {
    // A writable stream writes a swap file and replaces the entry on close: readers never see a
    // half-written file, and no exclusive lock is held against them.
    const fh = await this.dir.getFileHandle(name, { create: true });
    const w = await (fh as unknown as { createWritable(): Promise<OpfsWritable> }).createWritable();
    try {
      await w.write(bytes);
      await w.close();
      this.names.add(name);
    } catch (e) {
      await w.abort().catch(() => undefined);
      throw e;
    }
  }
  async clear() {
    await this.parent.removeEntry(this.name, { recursive: true }).catch(() => undefined);
    this.names.clear();
    this.dir = await this.parent.getDirectoryHandle(this.name, { create: true });
  }
}

/** OPFS folder of the cache. */
export const OPFS_DIR = IVF_CACHE_DIR;

/**
 * Cache writes wait while a search runs and for a moment after it: its caller then reads and shows
 * the documents, and a first query's hundred-odd OPFS files written beside its Range requests made
 * the search itself 0.1 s slower on the 1M shard here (BENCHMARKS.md, first dense result). Opened
 * by a timer once no search runs, or at once by a flush.
 */
const WRITES_AFTER_MS = 1000;
let searching = 0;
let gate: { promise: Promise<void>; open: () => void } | null = null;
let gateTimer: ReturnType<typeof setTimeout> | undefined;

function holdWrites(): void {
  searching++;
  clearTimeout(gateTimer);
  if (gate) return;
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}

function releaseWrites(): void {
  searching--;
  if (searching === 0) gateTimer = setTimeout(openGate, WRITES_AFTER_MS);
}

function openGate(): void {
  clearTimeout(gateTimer);
  const g = gate;
  gate = null;
  g?.open();
}

/**
 * Queues a cache write without waiting for it (a result never waits for the disk). Writes run one
 * at a time (an OPFS file takes one writer), not while a search runs, and what is queued is read
 * from memory meanwhile. A failed write only means a later fetch.
 */
function store(r: Remote, name: string, bytes: Uint8Array): void {
  if (r.forgotten || r.writing.has(name)) return;
  r.writing.set(name, bytes);
  r.queue = r.queue
    .then(() => gate?.promise)
    // A cache cleared meanwhile (the Storage panel) takes no write from a search that was under way.
    .then(() => (r.forgotten ? undefined : r.cache.put(name, bytes)))
    .catch((e) => console.warn(`loupe: could not cache ${name} of ${r.url}: ${(e as Error)?.message ?? e}`))
    .finally(() => r.writing.delete(name));
}

/** A cached entry: queued for writing, else from the cache. */
async function cached(r: Remote, name: string): Promise<Uint8Array | null> {
  return r.writing.get(name) ?? (await r.cache.get(name));
}

/** Concurrent Range requests per query (a browser opens six connections per HTTP/1.1 host). */
const CONCURRENCY = 6;

interface Remote {
  url: string;
  vectorsUrl: string;
  cache: ByteCache;
  cacheReason?: string;
  header: IvfHeader | null;
  /** Cache writes, one after the other (see store). */
  queue: Promise<void>;
  /** Set when its cache is cleared: a search still under way writes nothing more. */
  forgotten?: boolean;
  /** Entries queued and not yet written. */
  writing: Map<string, Uint8Array>;
}

const remotes = new Map<string, Remote>();

async function openCache(
  url: string,
  want: 'auto' | CacheKind,
): Promise<{ cache: ByteCache; reason?: string }> {
  if (want === 'memory') return { cache: new MemoryCache(), reason: 'memory cache asked for' };
  try {
    return { cache: await OpfsCache.open(ivfCacheKey(url)) };
  } catch (e) {
    if (want === 'opfs') throw e;
    return { cache: new MemoryCache(), reason: `OPFS: ${(e as Error)?.message ?? String(e)}` };
  }
}

/** GET bytes [start, end) with a Range request; the body's length is added to `stats`. */
async function range(url: string, start: number, end: number, stats: IvfQueryStats): Promise<Uint8Array> {
  const res = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: 'no-store' });
  if (res.status !== 206) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(
      res.ok
        ? `${url}: the server answered a Range request with status ${res.status}, not 206 Partial Content; a packed index needs a host that honours Range`
        : `${url}: HTTP ${res.status} ${res.statusText} for bytes ${start}–${end - 1}`,
    );
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  stats.bytes += bytes.length;
  stats.requests++;
  if (bytes.length !== end - start)
    throw new Error(`${url}: asked for bytes ${start}–${end - 1}, received ${bytes.length} bytes`);
  return bytes;
}

/** Runs `jobs` with at most CONCURRENCY in flight. */
async function pool<T>(jobs: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, jobs.length) }, worker));
  return out;
}

/** The header: from the network (cache checked against the fixed part's checksum), else the cache. */
async function loadHeader(r: Remote, stats: IvfQueryStats): Promise<IvfHeader> {
  const cachedHeader = await cached(r, 'header');
  let fixedBytes: Uint8Array;
  try {
    fixedBytes = await range(r.url, 0, IVF_FIXED_BYTES, stats);
  } catch (e) {
    // Offline (or the host is down): a cached header is good enough, the lists it names are cached.
    if (cachedHeader && e instanceof TypeError) {
      stats.offline = true;
      return parseIvfHeader(cachedHeader, `${r.url} (cached)`);
    }
    throw e;
  }
  const fixed = parseIvfFixed(fixedBytes, r.url);
  if (cachedHeader) {
    try {
      const h = parseIvfHeader(cachedHeader, `${r.url} (cached)`);
      if (h.checksum === fixed.checksum && h.headerBytes === fixed.headerBytes) return h;
    } catch {
      // A damaged cache entry: read the header again.
    }
    await r.cache.clear();
  }
  const bytes = new Uint8Array(fixed.headerBytes);
  bytes.set(fixedBytes, 0);
  bytes.set(await range(r.url, IVF_FIXED_BYTES, fixed.headerBytes, stats), IVF_FIXED_BYTES);
  const h = parseIvfHeader(bytes, r.url);
  store(r, 'header', bytes);
  stats.headerFetched = true;
  return h;
}

async function getList(r: Remote, h: IvfHeader, l: number, stats: IvfQueryStats): Promise<IvfList> {
  const name = `l${l}`;
  const want = listBytes(listCount(h, l), h.dim);
  // An empty list (k-means can leave one) has no bytes to read.
  if (want === 0) {
    stats.listsEmpty++;
    return parseIvfList(h, l, new Uint8Array(0), r.url);
  }
  const c = await cached(r, name);
  if (c && c.length === want) {
    stats.listsCached++;
    return parseIvfList(h, l, c, `${r.url} (cached list ${l})`);
  }
  const bytes = await range(r.url, h.offsets[l], h.offsets[l + 1], stats);
  stats.listsFetched++;
  const list = parseIvfList(h, l, bytes, r.url);
  store(r, name, bytes);
  return list;
}

/** Float16 rows (ascending row numbers) from the cache, else one Range request per run of rows. */
async function getRows(
  r: Remote,
  h: IvfHeader,
  sorted: number[],
  stats: IvfQueryStats,
): Promise<Map<number, Uint16Array>> {
  const rowBytes = h.dim * 2;
  const out = new Map<number, Uint16Array>();
  const missing: number[] = [];
  const found = await Promise.all(sorted.map((row) => cached(r, `r${row}`)));
  for (const [i, row] of sorted.entries()) {
    const c = found[i];
    if (c && c.length === rowBytes) {
      out.set(row, new Uint16Array(c.slice().buffer));
      stats.rowsCached++;
    } else missing.push(row);
  }
  await pool(
    rowRuns(missing).map(([first, count]) => async () => {
      const at = h.npyDataOffset + first * rowBytes;
      const bytes = await range(r.vectorsUrl, at, at + count * rowBytes, stats);
      for (let i = 0; i < count; i++) {
        const one = bytes.slice(i * rowBytes, (i + 1) * rowBytes);
        out.set(first + i, new Uint16Array(one.buffer));
        store(r, `r${first + i}`, one);
      }
      stats.rowsFetched += count;
    }),
  );
  return out;
}

function newStats(): IvfQueryStats {
  return {
    bytes: 0,
    requests: 0,
    headerFetched: false,
    offline: false,
    listsFetched: 0,
    listsCached: 0,
    listsEmpty: 0,
    rowsFetched: 0,
    rowsCached: 0,
    ms: 0,
  };
}

/**
 * Top-k of each query (rows of `queries`, n × dim; normalised here, so scores are cosines) from the
 * packed index at `req.url`, rescored from the float16 rows at `req.vectorsUrl`. Queries run one
 * after the other, so each one's bytes are its own.
 */
export async function ivfRemoteSearch(
  req: IvfRemoteRequest,
  queries: Float32Array,
): Promise<IvfRemoteResult> {
  holdWrites();
  try {
    return await searchQueries(req, queries);
  } finally {
    releaseWrites();
  }
}

/** The index at `req.url` with its cache, opened once per worker. */
async function remoteOf(req: Pick<IvfRemoteRequest, 'url' | 'vectorsUrl' | 'cache'>): Promise<Remote> {
  const key = `${req.url}\n${req.vectorsUrl}`;
  let r = remotes.get(key);
  if (!r) {
    const { cache, reason } = await openCache(req.url, req.cache ?? 'auto');
    r = {
      url: req.url,
      vectorsUrl: req.vectorsUrl,
      cache,
      cacheReason: reason,
      header: null,
      queue: Promise.resolve(),
      writing: new Map(),
    };
    remotes.set(key, r);
  }
  return r;
}

/**
 * The stored float16 rows `rows` of the packed index's vectors, as float32 (rows × dim, in the order
 * asked): the reference-vector check's probe (state/dense-sets.ts). From the cache where there,
 * else by Range and cached like a query's rows (so a later visit offline checks from the cache, and a
 * query that rescores a probed row reads it from there). `bytes`: what the probe itself read (the
 * header too, when it is the first to need it).
 */
export async function ivfRemoteRows(
  req: Pick<IvfRemoteRequest, 'url' | 'vectorsUrl' | 'cache'>,
  rows: number[],
): Promise<{ vectors: Float32Array; dim: number; n: number; bytes: number; requests: number }> {
  const r = await remoteOf(req);
  const stats = newStats();
  r.header ??= await loadHeader(r, stats);
  const h = r.header;
  const bad = rows.find((row) => !Number.isInteger(row) || row < 0 || row >= h.n);
  if (bad !== undefined) throw new RangeError(`${req.vectorsUrl}: row ${bad} is not one of its ${h.n} rows`);
  const got = await getRows(
    r,
    h,
    [...new Set(rows)].sort((a, b) => a - b),
    stats,
  );
  const vectors = new Float32Array(rows.length * h.dim);
  rows.forEach((row, i) => {
    const f16 = got.get(row)!;
    for (let j = 0; j < h.dim; j++) vectors[i * h.dim + j] = f16ToF32(f16[j]);
  });
  return { vectors, dim: h.dim, n: h.n, bytes: stats.bytes, requests: stats.requests };
}

async function searchQueries(req: IvfRemoteRequest, queries: Float32Array): Promise<IvfRemoteResult> {
  const r = await remoteOf(req);
  const rerank = Math.max(req.k, req.rerank ?? IVF_DEFAULTS.rerankFactor * req.k);
  const result: IvfRemoteResult = {
    rows: [],
    scores: [],
    perQuery: [],
    cache: r.cache.kind,
    cacheReason: r.cacheReason,
    n: 0,
    dim: 0,
    nlist: 0,
    nprobe: req.nprobe ?? 0,
    rerank,
  };
  for (let qi = 0; ; qi++) {
    const stats = newStats();
    const t0 = performance.now();
    r.header ??= await loadHeader(r, stats);
    const h = r.header;
    if (queries.length % h.dim !== 0)
      throw new RangeError(
        `queries hold ${queries.length} values, not a multiple of the index's dimension ${h.dim}`,
      );
    if (qi >= queries.length / h.dim) break;
    const q = queries.slice(qi * h.dim, (qi + 1) * h.dim);
    let norm = 0;
    for (let j = 0; j < h.dim; j++) norm += q[j] * q[j];
    if (norm > 0) for (let j = 0; j < h.dim; j++) q[j] /= Math.sqrt(norm);
    const nprobe = req.nprobe ?? defaultNprobe(h.nlist);
    const probed = probeLists(h, q, nprobe);
    const lists = await pool(probed.map((l) => () => getList(r, h, l, stats)));
    const { cand, scoring } = await scoreProbed(h, lists, q, rerank, req.scoring ?? 'auto');
    stats.scoring = scoring;
    const rows = await getRows(
      r,
      h,
      [...cand.rows].sort((a, b) => a - b),
      stats,
    );
    const exact = cand.rows.map((row) => exactRowScore(q, rows.get(row)!, 0, h.dim, f16ToF32));
    const top = finalTopK(cand.rows, exact, req.k);
    stats.ms = performance.now() - t0;
    result.rows.push(top.rows);
    result.scores.push(top.scores);
    result.perQuery.push(stats);
    Object.assign(result, { n: h.n, dim: h.dim, nlist: h.nlist, nprobe });
  }
  return result;
}

/** Waits for every cache write started so far (before a worker is stopped on purpose). */
export async function ivfRemoteFlush(): Promise<void> {
  openGate();
  for (const r of remotes.values()) while (r.writing.size) await r.queue;
}

/** Forgets the open indexes (the OPFS cache stays; the next search re-checks each header). */
export async function ivfRemoteClose(): Promise<void> {
  await ivfRemoteFlush();
  remotes.clear();
}

/** Forgets the indexes at `urls` and removes their OPFS cache folders (the Storage panel's clear). */
export async function ivfRemoteForget(urls: string[]): Promise<void> {
  for (const r of remotes.values()) if (urls.includes(r.url)) r.forgotten = true;
  await ivfRemoteFlush();
  for (const [key, r] of remotes) if (urls.includes(r.url)) remotes.delete(key);
  const root = await navigator.storage.getDirectory();
  const dir = await root.getDirectoryHandle(OPFS_DIR).catch(() => null);
  for (const url of urls)
    await dir?.removeEntry(ivfCacheKey(url), { recursive: true }).catch(() => undefined);
}

/** Removes every cached index from OPFS. */
export async function ivfRemoteClearCache(): Promise<void> {
  for (const r of remotes.values()) r.forgotten = true;
  await ivfRemoteFlush();
  remotes.clear();
  const root = await navigator.storage.getDirectory();
  await root.removeEntry(OPFS_DIR, { recursive: true }).catch(() => undefined);
}
