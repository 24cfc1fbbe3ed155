// ShardSource over a directory on disk, for tests and Node scripts (the browser has its own adapters).

import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { ShardSource } from '../../src/lib/core/shard/source';

/** Options of {@link FsSource}. */
export interface FsSourceOptions {
  /** Label for messages (default: the folder name). */
  label?: string;
  /** Read chunk size in bytes (default 1 MiB). */
  chunkSize?: number;
}

/** A shard folder on disk; paths are shard-relative with `/` separators. */
export class FsSource implements ShardSource {
  readonly label: string;
  readonly root: string;
  private readonly chunkSize: number;

  constructor(dir: string, opts: FsSourceOptions = {}) {
    this.root = resolve(dir);
    this.label = opts.label ?? basename(this.root);
    this.chunkSize = opts.chunkSize ?? 1 << 20;
  }

  async list(): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
        const full = join(dir, entry.name);
        // Follow symlinks: a shard folder may link to shared data.
        const kind = entry.isSymbolicLink() ? await stat(full).catch(() => null) : entry;
        if (!kind) continue;
        if (kind.isDirectory()) await walk(full, rel);
        else if (kind.isFile()) out.push(rel);
      }
    };
    await walk(this.root, '');
    return out.sort();
  }

  async open(path: string): Promise<AsyncIterable<Uint8Array> | null> {
    const full = this.resolve(path);
    if (!full || !(await isFile(full))) return null;
    return createReadStream(full, { highWaterMark: this.chunkSize });
  }

  async size(path: string): Promise<number | undefined> {
    const full = this.resolve(path);
    if (!full) return undefined;
    const s = await stat(full).catch(() => null);
    return s?.isFile() ? s.size : undefined;
  }

  /** Absolute path of a shard-relative one, or null when it would escape the folder. */
  private resolve(path: string): string | null {
    if (path === '' || path.includes('\\') || path.startsWith('/') || path.split('/').includes('..'))
      return null;
    return join(this.root, ...path.split('/'));
  }
}

async function isFile(full: string): Promise<boolean> {
  const s = await stat(full).catch(() => null);
  return !!s?.isFile();
}
