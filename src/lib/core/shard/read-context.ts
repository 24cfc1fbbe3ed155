// The shard reader's shared state and file access: options and limits, the issues and warnings found so
// far, the records read so far (each input file's reader adds to them), and streaming reads with hashing,
// byte counts, progress and cancellation folded in. One context per readShard call.

import { ShardValidationError, type ShardIssue, type ShardSource } from './source';
import type { Doc, ProgressFn, Qrels, Query, ShardFormat, ShardManifest, ShardWarning } from '../types';
import type { DicomCodecs } from '../media/dicom/image';
import { FileHasher } from './hash';
import { DEFAULT_LIMITS, formatBytes, LIMIT_OPTIONS, type ShardLimits } from './limits';
import { LineReadError, readLines, type Line } from './lines';

/** Options of {@link readShard}. */
export interface ReadShardOptions {
  /** Progress (`read` per file with its size when known, `parse` with lines), at most every ~100 ms. */
  onProgress?: ProgressFn;
  /** Polled between chunks; when it returns true reading stops with an `Error` named `AbortError`. */
  isCancelled?: () => boolean;
  /** Size limits (defaults: DEFAULT_LIMITS). */
  limits?: Partial<ShardLimits>;
  /** Longest accepted line, and largest shard.json / NOTICE.md, in bytes (overrides limits.maxLineBytes). */
  maxLineBytes?: number;
  /** Issues collected before giving up (default 50). */
  maxIssues?: number;
  /**
   * Receives each referenced image once (per distinct path) after its magic bytes were checked, and only
   * while no issue has been found. The shard may still fail afterwards: discard what you kept on a throw.
   */
  onImage?: (path: string, bytes: Uint8Array) => void | Promise<void>;
  /**
   * Codecs for compressed DICOM images, loaded on the first DICOM image met. Every DICOM image is
   * decoded (first frame) to check it; without codecs a compressed one fails with "needs a codec".
   */
  loadDicomCodecs?: () => Promise<DicomCodecs>;
  /**
   * Streaming: each valid document is handed to onDoc (awaited, so a slow consumer slows the read)
   * instead of being kept, and only while no issue has been found. The result's `docs` is then empty
   * and its `streamed` says how many documents there were.
   */
  onDoc?: (doc: Doc) => void | Promise<void>;
}

/** PROGRESS_MS: least time between two progress reports, in milliseconds. */
const PROGRESS_MS = 100;

/** Where an image path was first referenced, for its messages. */
export interface ImageRefSite {
  file: string;
  line: number;
  /** `images[2]` when the path came from an item's image list. */
  field?: string;
}

/** State and file access of one shard read; the per-file readers take it as their first argument. */
export class ShardReadContext {
  readonly source: ShardSource;
  readonly opts: ReadShardOptions;
  readonly maxLineBytes: number;
  readonly limits: ShardLimits;
  readonly maxIssues: number;
  readonly issues: ShardIssue[] = [];
  readonly warnings: ShardWarning[] = [];
  readonly fileHashes = new Map<string, Uint8Array>();
  private readonly probes = new Map<string, AsyncIterable<Uint8Array> | null>();
  listing: Set<string> | null = null;
  /** "BEIR + images" is read strictly (the spec); upstream BEIR and R2MED leniently. */
  strict = true;
  format: ShardFormat = 'beir+images';
  /** Bytes read so far, all files together. */
  bytes = 0;
  private lastProgress = -Infinity;

  manifest!: ShardManifest;
  /** shard.json's `counts`, as found (checked against the files at the end). */
  counts: unknown;
  readonly docs: Doc[] = [];
  readonly docLines = new Map<string, number>();
  /** Documents read (kept in docs, or handed to opts.onDoc). */
  docCount = 0;
  readonly queries: Query[] = [];
  readonly queryLines = new Map<string, number>();
  readonly qrels: Qrels = new Map();
  readonly qrelLines = new Map<string, number>();
  qrelRows = 0;
  readonly imageRefs = new Map<string, ImageRefSite>();
  /** The DICOM codecs, loaded on the first DICOM image met. */
  dicomCodecs?: Promise<DicomCodecs>;
  /**
   * A resumed read of one file (stream-corpus.ts): its stream starts at `streamOffset` (a hash block
   * boundary; `blocks` are the digests of the blocks before it) and its lines at `offset`, line `line`.
   */
  resumeAt?: { file: string; streamOffset: number; blocks: Uint8Array; offset: number; line: number };
  /** The hasher of the file lines() reads, and the line it yielded last. */
  hasher?: FileHasher;
  lastLine?: Line;

  constructor(source: ShardSource, opts: ReadShardOptions) {
    this.source = source;
    this.opts = opts;
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.maxLineBytes = opts.maxLineBytes ?? this.limits.maxLineBytes;
    this.maxIssues = Math.max(1, opts.maxIssues ?? 50);
  }

  /** Releases streams opened to probe for files (URL sources) but never read. */
  async closeProbes(): Promise<void> {
    for (const stream of this.probes.values()) {
      if (!stream) continue;
      try {
        await stream[Symbol.asyncIterator]().return?.();
      } catch {
        // Closing is best effort.
      }
    }
    this.probes.clear();
  }

  // ---- issues, progress, cancellation -------------------------------------------------------------

  /** Records an issue; stops once maxIssues are collected. */
  issue(issue: ShardIssue): void {
    this.issues.push(issue);
    if (this.issues.length >= this.maxIssues) throw new ShardValidationError(this.issues);
  }

  /** Records an issue after which reading cannot meaningfully go on, and stops. */
  fatal(issue: ShardIssue): never {
    if (this.issues.length < this.maxIssues) this.issues.push(issue);
    throw new ShardValidationError(this.issues);
  }

  /** Throws an `Error` named `AbortError` when opts.isCancelled says so. */
  checkCancelled(): void {
    if (this.opts.isCancelled?.()) {
      const e = new Error(`reading ${this.source.label} was cancelled`);
      e.name = 'AbortError';
      throw e;
    }
  }

  /** Sends progress events, at most every PROGRESS_MS unless forced. */
  progress(force: boolean, ...events: Parameters<ProgressFn>[0][]): void {
    const fn = this.opts.onProgress;
    if (!fn) return;
    const now = Date.now();
    if (!force && now - this.lastProgress < PROGRESS_MS) return;
    this.lastProgress = now;
    for (const e of events) fn(e);
  }

  // ---- files --------------------------------------------------------------------------------------

  /** Whether the shard has `path` (from the listing, else by opening it and keeping the stream). */
  async exists(path: string): Promise<boolean> {
    if (this.listing) return this.listing.has(path);
    if (!this.probes.has(path)) this.probes.set(path, await this.source.open(path));
    return this.probes.get(path) != null;
  }

  /** A stream of `path` (a probe's, when exists() opened it), or null when the shard lacks it. */
  async open(path: string): Promise<AsyncIterable<Uint8Array> | null> {
    if (this.probes.has(path)) {
      const s = this.probes.get(path) ?? null;
      this.probes.delete(path);
      return s;
    }
    if (this.listing && !this.listing.has(path)) return null;
    return this.source.open(path);
  }

  /** Like open(), but a missing file is a fatal issue. */
  async openRequired(path: string): Promise<AsyncIterable<Uint8Array>> {
    const stream = await this.open(path);
    if (!stream)
      this.fatal({
        file: path,
        code: 'missing-file',
        message: `${path} is missing from ${this.source.label}`,
      });
    return stream;
  }

  /** Lines of a text file, with hashing, byte counts, progress and cancellation folded in. */
  async *lines(path: string): AsyncGenerator<Line> {
    const stream = await this.openRequired(path);
    const totalBytes = await this.source.size(path);
    const r = this.resumeAt?.file === path ? this.resumeAt : undefined;
    const hasher = r ? FileHasher.resume(r.blocks) : new FileHasher();
    this.hasher = hasher;
    let bytes = r?.streamOffset ?? 0;
    let lines = 0;
    const emit = (force: boolean): void =>
      this.progress(
        force,
        { kind: 'read', file: path, bytes, totalBytes },
        { kind: 'parse', file: path, lines, bytes, ...(totalBytes !== undefined ? { totalBytes } : {}) },
      );
    emit(true);
    try {
      for await (const l of readLines(stream, {
        file: path,
        maxLineBytes: this.maxLineBytes,
        strict: this.strict,
        onChunk: (chunk) => {
          this.checkCancelled();
          bytes += chunk.length;
          this.bytes += chunk.length;
          emit(false);
          return hasher.update(chunk);
        },
        onIssue: (i) => this.issue(i),
        onWarning: (w) => this.warnings.push(w),
        ...(r
          ? { from: { streamOffset: r.streamOffset, skip: r.offset - r.streamOffset, line: r.line } }
          : {}),
      })) {
        lines = l.line;
        this.lastLine = l;
        // A file that came in one piece (a zip entry, a small file) still counts its lines as they go.
        if ((lines & 1023) === 0) emit(false);
        yield l;
      }
    } catch (e) {
      if (e instanceof LineReadError) this.fatal(e.issue);
      throw e;
    }
    this.fileHashes.set(path, await hasher.digest());
    emit(true);
  }

  /** A whole (small) file: shard.json, NOTICE.md (capped at maxLineBytes) or an image (maxImageBytes). */
  async readWhole(path: string, stream: AsyncIterable<Uint8Array>, image = false): Promise<Uint8Array> {
    const hasher = new FileHasher();
    const parts: Uint8Array[] = [];
    const cap = image ? this.limits.maxImageBytes : this.maxLineBytes;
    const option = image ? LIMIT_OPTIONS.maxImageBytes.name : LIMIT_OPTIONS.maxLineBytes.name;
    let n = 0;
    for await (const chunk of stream) {
      this.checkCancelled();
      n += chunk.length;
      if (n > cap) {
        this.fatal({
          file: path,
          code: 'file-too-large',
          message:
            `${path} is larger than ${formatBytes(cap)} (the limit for ${image ? 'an image' : 'this file'}); ` +
            `reading stopped here. Shrink it, or raise the limit with ${option}=<MiB>`,
        });
      }
      parts.push(chunk);
      const r = hasher.update(chunk);
      if (r) await r;
    }
    this.bytes += n;
    this.fileHashes.set(path, await hasher.digest());
    // Always a fresh, exactly sized array: a source chunk may be a view into a larger (pooled) buffer, and
    // onImage consumers may keep `.buffer`.
    const out = new Uint8Array(n);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}
