// In-memory ShardSource: for tests (tiny generated shards, odd chunk sizes) and for adapters that already
// hold the files' bytes (e.g. an unpacked .zip).

import type { ShardSource } from './source';

/** Options of {@link MemorySource}. */
export interface MemorySourceOptions {
  /** Bytes per chunk yielded by `open()` (default 64 KiB); 1 exercises every chunk boundary. */
  chunkSize?: number;
  /** Label for messages (default `memory`). */
  label?: string;
  /** When false, `list()` returns null, like a URL source (default true). */
  listable?: boolean;
}

/** A ShardSource over a map of path → bytes (strings are stored as UTF-8). */
export class MemorySource implements ShardSource {
  readonly label: string;
  /** Path → bytes; may be edited between reads. */
  readonly files: Map<string, Uint8Array>;
  /** How many times each path was opened (to check that a file is read once). */
  readonly opens = new Map<string, number>();
  private readonly chunkSize: number;
  private readonly listable: boolean;
  /** Unlistable (like a URL source): optional files are asked for only when named. */
  readonly remote: boolean;

  constructor(
    files: Map<string, Uint8Array | string> | Record<string, Uint8Array | string>,
    opts: MemorySourceOptions = {},
  ) {
    const enc = new TextEncoder();
    const entries = files instanceof Map ? [...files] : Object.entries(files);
    this.files = new Map(entries.map(([p, v]) => [p, typeof v === 'string' ? enc.encode(v) : v]));
    this.label = opts.label ?? 'memory';
    this.chunkSize = Math.max(1, Math.floor(opts.chunkSize ?? 64 * 1024));
    this.listable = opts.listable ?? true;
    this.remote = !this.listable;
  }

  async list(): Promise<string[] | null> {
    return this.listable ? [...this.files.keys()].sort() : null;
  }

  async open(path: string): Promise<AsyncIterable<Uint8Array> | null> {
    const data = this.files.get(path);
    if (!data) return null;
    this.opens.set(path, (this.opens.get(path) ?? 0) + 1);
    const size = this.chunkSize;
    return (async function* () {
      for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
    })();
  }

  async size(path: string): Promise<number | undefined> {
    return this.files.get(path)?.length;
  }
}
