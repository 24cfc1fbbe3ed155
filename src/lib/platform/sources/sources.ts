// Browser ShardSource implementations: a picked or dropped folder, a directory handle, a .zip (read
// entry by entry from its central directory) and a URL. Each one maps shard-relative paths
// (`corpus.jsonl`, `images/a.jpg`) to streams of bytes; the core parser only sees ShardSource.
import { Inflate } from 'fflate';
import {
  ShardValidationError,
  withByteLength,
  type RandomAccessFile,
  type ShardSource,
} from '../../core/shard/source';
import { missingPack, receivePack } from './image-packs';

/** A file with the shard-relative path it was found at (drag-and-drop, or attached by the caller). */
export interface PathedFile {
  path: string;
  file: File;
}

/**
 * Where a shard comes from, in a form that survives structured clone (so it can be posted to the
 * shard worker): File, Blob and FileSystemDirectoryHandle all clone; a URL is a string.
 */
export type SourceDescriptor =
  | { kind: 'files'; files: PathedFile[]; label?: string }
  | { kind: 'directory'; handle: FileSystemDirectoryHandle }
  | { kind: 'zip'; file: File; label?: string }
  /**
   * `files`: the paths under `url` when the server cannot list them (a Parquet dataset's files); a
   * Hugging Face `resolve/<rev>/` URL without them is listed through the hub's tree API.
   */
  | { kind: 'url'; url: string; files?: string[] };

/** READ_CHUNK_BYTES: size of each slice read from a Blob (zip entries, files without streams). */
export const READ_CHUNK_BYTES = 1 << 20;

/** Builds the ShardSource a descriptor names (used inside the shard worker). */
export function sourceFromDescriptor(d: SourceDescriptor): ShardSource {
  switch (d.kind) {
    case 'files':
      return folderSource(d.files, d.label);
    case 'directory':
      return directoryHandleSource(d.handle);
    case 'zip':
      return zipSource(d.file, d.label);
    case 'url':
      return urlSource(d.url, d.files);
  }
}

/** Random access to a Blob (a File, a stored zip entry, an inflated one). */
function blobFile(blob: Blob): RandomAccessFile {
  return { byteLength: blob.size, slice: (start, end) => blob.slice(start, end).arrayBuffer() };
}

// ---------------------------------------------------------------------------------------------
// Paths

/** OS litter that is never part of a shard and must not stop the common top folder being found. */
function isJunk(path: string): boolean {
  const segs = path.split('/');
  const last = segs[segs.length - 1];
  return segs.includes('__MACOSX') || last === '.DS_Store' || last === 'Thumbs.db' || last === 'desktop.ini';
}

/** Normalises a path to `a/b/c` (forward slashes, no leading `/` or `./`); null if it escapes (`..`). */
function cleanPath(raw: string): string | null {
  const segs = raw
    .replace(/\\/g, '/')
    .split('/')
    .filter((s) => s !== '' && s !== '.');
  if (segs.length === 0 || segs.includes('..')) return null;
  return segs.join('/');
}

/**
 * The deepest folder every path lies inside (`medquad/`, or `` when some file sits at the top),
 * so a shard picked as a folder or zipped with its folder reads with shard-relative paths.
 */
export function commonFolder(paths: string[]): string {
  if (paths.length === 0) return '';
  let prefix = paths[0].split('/').slice(0, -1);
  for (const p of paths) {
    const dirs = p.split('/').slice(0, -1);
    let i = 0;
    while (i < prefix.length && i < dirs.length && prefix[i] === dirs[i]) i++;
    prefix = prefix.slice(0, i);
    if (prefix.length === 0) return '';
  }
  return prefix.map((s) => s + '/').join('');
}

/** Reads a ReadableStream as an async iterable, cancelling it if the consumer stops early. */
export async function* streamChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      if (r.value.byteLength > 0) yield r.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** A response body whose connection drops mid-way fails with an Error naming the URL and what to do. */
async function* droppedAs(chunks: AsyncGenerator<Uint8Array>, url: string): AsyncGenerator<Uint8Array> {
  try {
    yield* chunks;
  } catch (e) {
    // Errors thrown by the consumer into the generator are not network failures: only wrap read errors.
    if (e instanceof TypeError || (e as { name?: string })?.name === 'NetworkError')
      throw new Error(
        `the connection dropped while reading ${url} (${(e as Error).message}): check the network and import ` +
          'again; nothing was saved',
      );
    throw e;
  }
}

/** Streams a Blob: its own stream when the runtime has one, else READ_CHUNK_BYTES slices. */
function blobChunks(blob: Blob): AsyncIterable<Uint8Array> {
  if (typeof blob.stream === 'function') return streamChunks(blob.stream());
  return (async function* () {
    for (let pos = 0; pos < blob.size; pos += READ_CHUNK_BYTES) {
      yield new Uint8Array(await blob.slice(pos, pos + READ_CHUNK_BYTES).arrayBuffer());
    }
  })();
}

// ---------------------------------------------------------------------------------------------
// Folder (<input webkitdirectory>, drag-and-drop)

/**
 * A shard from a list of files: `<input type="file" webkitdirectory>`'s FileList (paths from
 * `webkitRelativePath`), or `{ path, file }` pairs from a drop. The common top folder is stripped.
 */
export function folderSource(files: File[] | FileList | PathedFile[], label?: string): ShardSource {
  const raw: { path: string; file: File }[] = [];
  for (const item of Array.from(files as ArrayLike<File | PathedFile>)) {
    const pf = item instanceof File ? { path: item.webkitRelativePath || item.name, file: item } : item;
    const path = cleanPath(pf.path);
    if (path && !isJunk(path)) raw.push({ path, file: pf.file });
  }
  const top = commonFolder(raw.map((f) => f.path));
  const byPath = new Map<string, File>();
  for (const f of raw) byPath.set(f.path.slice(top.length), f.file);
  const name = label ?? (top ? top.slice(0, -1).split('/').pop()! : `${byPath.size} files`);
  return {
    label: name,
    list: async () => [...byPath.keys()],
    open: async (path) => {
      const f = byPath.get(path);
      return f ? blobChunks(f) : null;
    },
    size: async (path) => byPath.get(path)?.size,
    openRandom: async (path) => {
      const f = byPath.get(path);
      return f ? blobFile(f) : null;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// FileSystemDirectoryHandle (showDirectoryPicker)

function isNotFound(e: unknown): boolean {
  const name = (e as { name?: string } | null)?.name;
  return name === 'NotFoundError' || name === 'TypeMismatchError' || name === 'TypeError';
}

/**
 * A shard from `showDirectoryPicker()`. If the picked folder holds nothing but one sub-folder
 * (a parent of the shard), that sub-folder is used, like a zip with one top folder.
 */
export function directoryHandleSource(handle: FileSystemDirectoryHandle): ShardSource {
  let root: Promise<FileSystemDirectoryHandle> | undefined;
  const resolveRoot = () =>
    (root ??= (async () => {
      let dir = handle;
      for (;;) {
        const kids: (FileSystemDirectoryHandle | FileSystemFileHandle)[] = [];
        for await (const h of dir.values()) if (!isJunk(h.name)) kids.push(h);
        if (kids.length === 1 && kids[0].kind === 'directory') dir = kids[0] as FileSystemDirectoryHandle;
        else return dir;
      }
    })());

  const fileHandle = async (path: string): Promise<FileSystemFileHandle | null> => {
    const segs = cleanPath(path)?.split('/');
    if (!segs) return null;
    try {
      let dir = await resolveRoot();
      for (const s of segs.slice(0, -1)) dir = await dir.getDirectoryHandle(s);
      return await dir.getFileHandle(segs[segs.length - 1]);
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  };

  return {
    label: handle.name,
    list: async () => {
      const out: string[] = [];
      const walk = async (dir: FileSystemDirectoryHandle, prefix: string) => {
        for await (const h of dir.values()) {
          if (isJunk(h.name)) continue;
          if (h.kind === 'file') out.push(prefix + h.name);
          else await walk(h as FileSystemDirectoryHandle, `${prefix}${h.name}/`);
        }
      };
      await walk(await resolveRoot(), '');
      return out;
    },
    open: async (path) => {
      const h = await fileHandle(path);
      return h ? blobChunks(await h.getFile()) : null;
    },
    size: async (path) => {
      const h = await fileHandle(path);
      return h ? (await h.getFile()).size : undefined;
    },
    openRandom: async (path) => {
      const h = await fileHandle(path);
      return h ? blobFile(await h.getFile()) : null;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Drag-and-drop

/**
 * Every file in a drop, with paths relative to what was dropped (`medquad/corpus.jsonl`), walking
 * dropped folders through `webkitGetAsEntry()`. Call it synchronously inside the `drop` handler
 * (before any `await`): the browser empties `dataTransfer.items` once the event has been handled.
 */
export function filesFromDataTransfer(dt: DataTransfer): Promise<PathedFile[]> {
  // Collected synchronously; the entries themselves stay readable after the event.
  const entries: FileSystemEntry[] = [];
  const loose: File[] = [];
  for (const item of Array.from(dt.items ?? [])) {
    if (item.kind !== 'file') continue;
    const entry = typeof item.webkitGetAsEntry === 'function' ? item.webkitGetAsEntry() : null;
    if (entry) entries.push(entry);
    else {
      const f = item.getAsFile();
      if (f) loose.push(f);
    }
  }
  if (entries.length === 0 && loose.length === 0) loose.push(...Array.from(dt.files ?? []));

  const fileOf = (e: FileSystemFileEntry) => new Promise<File>((res, rej) => e.file(res, rej));
  const readAll = async (dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> => {
    const reader = dir.createReader();
    const all: FileSystemEntry[] = [];
    // readEntries returns at most ~100 entries per call; an empty batch means the end.
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
      if (batch.length === 0) return all;
      all.push(...batch);
    }
  };
  const walk = async (entry: FileSystemEntry, out: PathedFile[]): Promise<void> => {
    if (entry.isFile) {
      out.push({
        path: entry.fullPath.replace(/^\/+/, ''),
        file: await fileOf(entry as FileSystemFileEntry),
      });
    } else if (entry.isDirectory) {
      for (const kid of await readAll(entry as FileSystemDirectoryEntry)) await walk(kid, out);
    }
  };
  return (async () => {
    const out: PathedFile[] = loose.map((file) => ({ path: file.name, file }));
    for (const e of entries) await walk(e, out);
    return out;
  })();
}

/** The descriptor for a drop: one `.zip` file is read as a zip, anything else as a folder. */
export function describeDrop(dt: DataTransfer): Promise<SourceDescriptor> {
  const files = filesFromDataTransfer(dt);
  return files.then((fs) => {
    if (fs.length === 1 && /\.zip$/i.test(fs[0].file.name))
      return { kind: 'zip', file: fs[0].file, label: fs[0].file.name };
    return { kind: 'files', files: fs };
  });
}

// ---------------------------------------------------------------------------------------------
// Zip

/** One file entry of a zip's central directory. */
interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

const SIG_EOCD = 0x06054b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_EOCD64_LOCATOR = 0x07064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;
/** EOCD_MAX_SEARCH: the end-of-central-directory record is within the last 22 + 65535 (comment) bytes. */
const EOCD_MAX_SEARCH = 22 + 0xffff;

let crcTable: Uint32Array | undefined;
/** CRC-32 (IEEE, reflected) update over one chunk; start with 0xffffffff, finish with `^ 0xffffffff`. */
function crc32Update(crc: number, data: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  const t = crcTable;
  let c = crc;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return c >>> 0;
}

async function readBytes(blob: Blob, start: number, end: number): Promise<DataView> {
  const buf = await blob.slice(start, end).arrayBuffer();
  return new DataView(buf);
}

function u64(v: DataView, at: number): number {
  const n = v.getBigUint64(at, true);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('zip64 offset too large');
  return Number(n);
}

/** Reads the central directory (once) into name → entry. Throws a plain Error on a malformed zip. */
async function readCentralDirectory(blob: Blob): Promise<ZipEntry[]> {
  const tailStart = Math.max(0, blob.size - EOCD_MAX_SEARCH);
  const tail = await readBytes(blob, tailStart, blob.size);
  let eocd = -1;
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (tail.getUint32(i, true) === SIG_EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('no end-of-central-directory record (not a zip file, or truncated)');
  let count = tail.getUint16(eocd + 10, true);
  let cdSize = tail.getUint32(eocd + 12, true);
  let cdOffset = tail.getUint32(eocd + 16, true);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    // Zip64: the locator sits right before the classic EOCD record.
    const loc = eocd - 20;
    if (loc < 0 || tail.getUint32(loc, true) !== SIG_EOCD64_LOCATOR) throw new Error('zip64 locator missing');
    const at = u64(tail, loc + 8);
    const rec = await readBytes(blob, at, at + 56);
    if (rec.byteLength < 56 || rec.getUint32(0, true) !== SIG_EOCD64)
      throw new Error('zip64 end record missing');
    count = u64(rec, 32);
    cdSize = u64(rec, 40);
    cdOffset = u64(rec, 48);
  }
  if (cdOffset + cdSize > blob.size)
    throw new Error('central directory lies outside the file (truncated zip)');
  const cd = await readBytes(blob, cdOffset, cdOffset + cdSize);
  const names = new TextDecoder('utf-8');
  const entries: ZipEntry[] = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.byteLength || cd.getUint32(p, true) !== SIG_CENTRAL)
      throw new Error(`central directory entry ${i + 1} is damaged`);
    const nameLen = cd.getUint16(p + 28, true);
    const extraLen = cd.getUint16(p + 30, true);
    const commentLen = cd.getUint16(p + 32, true);
    const e: ZipEntry = {
      flags: cd.getUint16(p + 8, true),
      method: cd.getUint16(p + 10, true),
      crc: cd.getUint32(p + 16, true),
      compressedSize: cd.getUint32(p + 20, true),
      size: cd.getUint32(p + 24, true),
      localHeaderOffset: cd.getUint32(p + 42, true),
      name: names.decode(new Uint8Array(cd.buffer, cd.byteOffset + p + 46, nameLen)),
    };
    // Zip64 extra field (id 1): only the fields saturated in the fixed header, in this order.
    let x = p + 46 + nameLen;
    const xEnd = x + extraLen;
    while (x + 4 <= xEnd) {
      const id = cd.getUint16(x, true);
      const len = cd.getUint16(x + 2, true);
      if (id === 1) {
        let q = x + 4;
        if (e.size === 0xffffffff) {
          e.size = u64(cd, q);
          q += 8;
        }
        if (e.compressedSize === 0xffffffff) {
          e.compressedSize = u64(cd, q);
          q += 8;
        }
        if (e.localHeaderOffset === 0xffffffff) e.localHeaderOffset = u64(cd, q);
      }
      x += 4 + len;
    }
    entries.push(e);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/**
 * A shard inside a .zip, with its files at the root or inside one top folder. The central
 * directory is read once; each file is inflated on demand, READ_CHUNK_BYTES of compressed data at
 * a time, with its CRC-32 and size checked at the end. A file that is not a zip, or a damaged
 * entry, throws ShardValidationError naming the zip or the entry.
 */
export function zipSource(file: Blob, label?: string, opts: { keepPaths?: boolean } = {}): ShardSource {
  const name = label ?? ((file as File).name || 'archive.zip');
  let index: Promise<Map<string, ZipEntry>> | undefined;
  const issue = (path: string, code: string, message: string) =>
    new ShardValidationError([{ file: path, code, message }]);

  const entries = () =>
    (index ??= (async () => {
      let all: ZipEntry[];
      try {
        all = await readCentralDirectory(file);
      } catch (e) {
        throw issue(name, 'not-a-zip', `${name} is not a readable zip file: ${(e as Error).message}`);
      }
      const files: { path: string; e: ZipEntry }[] = [];
      for (const e of all) {
        if (e.name.endsWith('/')) continue; // folder entry
        const path = cleanPath(e.name);
        if (path && !isJunk(path)) files.push({ path, e });
      }
      // An image pack's entries are shard paths already (`images/…`): nothing to strip.
      const top = opts.keepPaths ? '' : commonFolder(files.map((f) => f.path));
      return new Map(files.map((f) => [f.path.slice(top.length), f.e] as const));
    })());

  async function* inflate(path: string, e: ZipEntry): AsyncGenerator<Uint8Array> {
    const bad = (why: string) =>
      issue(path, 'zip-corrupt-entry', `${name}: entry ${e.name} is damaged (${why})`);
    if (e.flags & 1) throw issue(path, 'zip-unsupported', `${name}: entry ${e.name} is encrypted`);
    if (e.method !== 0 && e.method !== 8) {
      throw issue(
        path,
        'zip-unsupported',
        `${name}: entry ${e.name} uses compression method ${e.method} (only stored and deflate are supported)`,
      );
    }
    const local = await readBytes(file, e.localHeaderOffset, e.localHeaderOffset + 30);
    if (local.byteLength < 30 || local.getUint32(0, true) !== SIG_LOCAL) throw bad('local header missing');
    const start = e.localHeaderOffset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
    const end = start + e.compressedSize;
    if (end > file.size) throw bad('data runs past the end of the file');

    const out: Uint8Array[] = [];
    let inflater: Inflate | undefined;
    if (e.method === 8) inflater = new Inflate((d) => void out.push(d));
    let crc = 0xffffffff;
    let produced = 0;
    const push = (chunk: Uint8Array, final: boolean) => {
      if (!inflater) {
        if (chunk.byteLength) out.push(chunk);
        return;
      }
      try {
        inflater.push(chunk, final);
      } catch (err) {
        throw bad(`inflate failed: ${(err as Error).message}`);
      }
    };
    let pos = start;
    do {
      const stop = Math.min(end, pos + READ_CHUNK_BYTES);
      push(new Uint8Array(await file.slice(pos, stop).arrayBuffer()), stop >= end);
      pos = stop;
      while (out.length) {
        const d = out.shift()!;
        produced += d.byteLength;
        if (produced > e.size) throw bad('more data than its recorded size');
        crc = crc32Update(crc, d);
        yield d;
      }
    } while (pos < end);
    if (produced !== e.size) throw bad(`${produced} bytes instead of ${e.size}`);
    if ((crc ^ 0xffffffff) >>> 0 !== e.crc) throw bad('CRC-32 mismatch');
  }

  return {
    label: name,
    list: async () => [...(await entries()).keys()],
    open: async (path) => {
      const e = (await entries()).get(path);
      return e ? inflate(path, e) : null;
    },
    size: async (path) => (await entries()).get(path)?.size,
    // Parquet readers seek: a stored entry is a slice of the zip itself; a deflated one is inflated
    // (with its CRC checked) into a Blob first.
    openRandom: async (path) => {
      const e = (await entries()).get(path);
      if (!e) return null;
      if (e.method === 0 && !(e.flags & 1)) {
        const local = await readBytes(file, e.localHeaderOffset, e.localHeaderOffset + 30);
        if (local.byteLength < 30 || local.getUint32(0, true) !== SIG_LOCAL)
          throw issue(
            path,
            'zip-corrupt-entry',
            `${name}: entry ${e.name} is damaged (local header missing)`,
          );
        const start = e.localHeaderOffset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
        return blobFile(file.slice(start, start + e.size));
      }
      const parts: Uint8Array<ArrayBuffer>[] = [];
      for await (const c of inflate(path, e)) parts.push(c as Uint8Array<ArrayBuffer>);
      return blobFile(new Blob(parts));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// URL

/** Hosts a Hugging Face `resolve/` URL may redirect to (its LFS / Xet storage). */
function isHubHost(host: string): boolean {
  return (
    host === 'huggingface.co' ||
    host.endsWith('.huggingface.co') ||
    host === 'hf.co' ||
    host.endsWith('.hf.co')
  );
}

/**
 * A shard served over HTTP(S) at `baseUrl` (`/shards/medquad/`, `https://host/shard/`). Bodies are
 * streamed; a 404 (or 410) means the file does not exist; any other failure is an Error naming the
 * status and URL. Only URLs under the given base, on its origin, are fetched (a Hugging Face URL may
 * be redirected to the hub's storage); the listing is `files` when given, else unknown (`remote`).
 */
export function urlSource(baseUrl: string, files?: string[]): ShardSource {
  const here = (globalThis as { location?: { href: string } }).location?.href;
  const base = new URL(baseUrl, here);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  base.search = '';
  base.hash = '';
  if (base.protocol !== 'https:' && base.protocol !== 'http:')
    throw new Error(`not an http(s) URL: ${base.href}`);
  const hub = isHubHost(base.hostname);

  const urlOf = (path: string): URL => {
    const clean = cleanPath(path);
    if (!clean) throw new Error(`refusing to fetch a path outside the shard: ${path}`);
    const u = new URL(clean.split('/').map(encodeURIComponent).join('/'), base);
    if (u.origin !== base.origin || !u.pathname.startsWith(base.pathname))
      throw new Error(`refusing to fetch ${u.href}: outside ${base.href}`);
    return u;
  };

  const request = async (
    path: string,
    method: 'GET' | 'HEAD',
    headers?: Record<string, string>,
  ): Promise<Response | null> => {
    const u = urlOf(path);
    let res: Response;
    try {
      res = await fetch(u, { method, credentials: 'same-origin', headers });
    } catch (e) {
      throw new Error(
        `could not fetch ${u.href} (${(e as Error).message || 'network error'}): check the network ` +
          'connection, the URL, and that the server allows this site (CORS), then import again; nothing was saved',
      );
    }
    if (
      res.url &&
      new URL(res.url).origin !== base.origin &&
      !(hub && isHubHost(new URL(res.url).hostname))
    ) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(
        `${u.href} redirected to another origin (${new URL(res.url).origin}); refusing to read it`,
      );
    }
    if (res.status === 404 || res.status === 410) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''} for ${u.href}`);
    }
    // A web page where a shard file should be: the server answers paths it does not have with its
    // index page (a single-page-app fallback) instead of a 404. An optional file (a set's index, a
    // pack) is then simply not there; the files every shard starts from say so in words.
    if (/^text\/html/i.test(res.headers.get('Content-Type') ?? '') && !/\.html?$/i.test(path)) {
      await res.body?.cancel().catch(() => undefined);
      if (path !== 'shard.json' && path !== 'corpus.jsonl') return null;
      throw new Error(
        `${u.href} is a web page (text/html), not the shard's ${path}: the server answers files it ` +
          `does not have with its index page, so there is no shard at ${base.href}; check the shard's URL`,
      );
    }
    return res;
  };

  const size = async (path: string): Promise<number | undefined> => {
    const res = await request(path, 'HEAD').catch(() => null);
    const len = res?.headers.get('Content-Length');
    // A compressed transfer's length is not the file's.
    if (!res || !len || res.headers.get('Content-Encoding')) return undefined;
    const n = Number(len);
    return Number.isFinite(n) ? n : undefined;
  };

  /** The image packs read by usePacks: zips over their downloaded bytes, asked first by open(). */
  let packs: ShardSource[] = [];

  return {
    label: base.href,
    list: async () => (files ? [...files] : null),
    remote: !files,
    usePacks: async (names, opts = {}) => {
      const read: ShardSource[] = [];
      for (const name of names) {
        const res = await request(name, 'GET');
        if (!res) throw missingPack(name);
        const pack = zipSource(await receivePack(res, name, opts), name, { keepPaths: true });
        // Its central directory now: a damaged pack fails here, named, before any image is read.
        await pack.list();
        read.push(pack);
      }
      packs = read;
    },
    open: async (path) => {
      for (const p of packs) {
        const s = await p.open(path);
        if (s) return s;
      }
      const res = await request(path, 'GET');
      if (!res) return null;
      if (!res.body) return (async function* () {})();
      // The file's length, for the progress of a whole-file read (a compressed transfer's is not it).
      const len = res.headers.get('Content-Encoding') ? null : res.headers.get('Content-Length');
      return withByteLength(
        droppedAs(streamChunks(res.body), res.url || urlOf(path).href),
        len ? Number(len) : undefined,
      );
    },
    size,
    // HTTP range requests (a Parquet footer, then only the row groups read); a server that ignores
    // Range gets one whole download, kept for the following slices.
    openRandom: async (path) => {
      const n = await size(path);
      if (n === undefined) {
        const res = await request(path, 'GET');
        return res ? blobFile(await res.blob()) : null;
      }
      let whole: Promise<Blob> | undefined;
      return {
        byteLength: n,
        slice: async (start, end = n) => {
          if (whole) return (await whole).slice(start, end).arrayBuffer();
          const res = await request(path, 'GET', { Range: `bytes=${start}-${end - 1}` });
          if (!res) throw new Error(`${urlOf(path).href} disappeared while it was being read`);
          if (res.status === 206) return res.arrayBuffer();
          whole = res.blob();
          return (await whole).slice(start, end).arrayBuffer();
        },
      };
    },
  };
}
