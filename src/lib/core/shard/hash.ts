// Content hash of a shard, computed while its files stream by. crypto.subtle.digest has no incremental
// API, so each file is cut into fixed 1 MiB blocks, each block is hashed, and the block digests are hashed
// again (a two-level tree). Fixed blocks make the result independent of how the source chunks its reads.

import type { ShardSource } from './source';

/** Size of the blocks a file is re-cut into before hashing. Part of the hash definition: do not change. */
export const HASH_BLOCK_BYTES = 1 << 20;

// Domain-separation prefixes, so a file digest can never be mistaken for a tree digest.
const FILE_TAG = 'loupe-file-sha256-v1\n';
const TREE_TAG = 'loupe-tree-sha256-v1\n';
// Bound on block digests in flight, which bounds the memory held by blocks waiting to be hashed.
const MAX_IN_FLIGHT = 4;

/**
 * Incremental hash of one file: `update()` with its chunks in order, then `digest()` once.
 * File digest = SHA-256(tag ‖ u64 byte length ‖ SHA-256(block 1) ‖ SHA-256(block 2) ‖ …).
 */
export class FileHasher {
  private block: Uint8Array | null = null;
  private fill = 0;
  private readonly done: ArrayBuffer[] = [];
  private readonly inFlight: Promise<void>[] = [];
  private scheduled = 0;
  private length = 0;
  /** Settles once every block scheduled so far is hashed. */
  private settled: Promise<unknown> = Promise.resolve();

  /**
   * A hasher that goes on from a block boundary: `blocks` holds the digests (32 bytes each) of the
   * file's first blocks, as blocksBefore() gave them; the next update() is the byte after them.
   */
  static resume(blocks: Uint8Array): FileHasher {
    const h = new FileHasher();
    for (let at = 0; at + 32 <= blocks.length; at += 32) h.done.push(blocks.slice(at, at + 32).buffer);
    h.scheduled = h.done.length;
    h.length = h.done.length * HASH_BLOCK_BYTES;
    return h;
  }

  /**
   * The digests (32 bytes each, concatenated) of the whole blocks before byte `offset`, all of which
   * must have been fed already: what resume() takes to go on from there (a resumed import).
   */
  async blocksBefore(offset: number): Promise<Uint8Array> {
    const n = Math.floor(offset / HASH_BLOCK_BYTES);
    if (n > this.scheduled) throw new Error(`blocksBefore(${offset}): only ${this.length} bytes fed`);
    await this.settled;
    const out = new Uint8Array(32 * n);
    for (let i = 0; i < n; i++) out.set(new Uint8Array(this.done[i]), 32 * i);
    return out;
  }

  /** Bytes fed so far. */
  get bytes(): number {
    return this.length;
  }

  /** Feeds the next chunk. Returns a promise (to await) only when too many block digests are in flight. */
  update(chunk: Uint8Array): void | Promise<void> {
    this.length += chunk.length;
    let pos = 0;
    while (pos < chunk.length) {
      if (this.fill === 0 && chunk.length - pos >= HASH_BLOCK_BYTES) {
        // Whole block available in the chunk: hash it in place, no copy.
        this.schedule(chunk.subarray(pos, pos + HASH_BLOCK_BYTES));
        pos += HASH_BLOCK_BYTES;
        continue;
      }
      // A fresh buffer per block (never reused): digest() may read its input after returning.
      if (!this.block) this.block = new Uint8Array(HASH_BLOCK_BYTES);
      const n = Math.min(HASH_BLOCK_BYTES - this.fill, chunk.length - pos);
      this.block.set(chunk.subarray(pos, pos + n), this.fill);
      this.fill += n;
      pos += n;
      if (this.fill === HASH_BLOCK_BYTES) {
        this.schedule(this.block);
        this.block = null;
        this.fill = 0;
      }
    }
    if (this.inFlight.length > MAX_IN_FLIGHT) return this.drain(MAX_IN_FLIGHT);
  }

  /** The file digest (32 bytes). Call once, after the last `update()`. */
  async digest(): Promise<Uint8Array> {
    if (this.block && this.fill > 0) this.schedule(this.block.subarray(0, this.fill));
    this.block = null;
    this.fill = 0;
    await this.drain(0);
    const header = new TextEncoder().encode(FILE_TAG);
    const out = new Uint8Array(header.length + 8 + 32 * this.done.length);
    out.set(header, 0);
    writeU64(out, header.length, this.length);
    let at = header.length + 8;
    for (const d of this.done) {
      out.set(new Uint8Array(d), at);
      at += 32;
    }
    return new Uint8Array(await crypto.subtle.digest('SHA-256', out));
  }

  private schedule(data: Uint8Array): void {
    const index = this.scheduled++;
    // DOM's digest() refuses views that might be SharedArrayBuffer-backed; file chunks never are.
    const p = crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>).then((d) => {
      this.done[index] = d;
    });
    this.inFlight.push(p);
    this.settled = Promise.all([this.settled, p]);
  }

  private async drain(keep: number): Promise<void> {
    while (this.inFlight.length > keep) await this.inFlight.shift();
  }
}

/**
 * Combines file digests into the shard hash (lower-case hex SHA-256): files sorted by path (UTF-16 code
 * unit order), each contributing u32 path length ‖ UTF-8 path ‖ file digest.
 */
export async function combineFileHashes(files: Iterable<readonly [string, Uint8Array]>): Promise<string> {
  const enc = new TextEncoder();
  const entries = [...files].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const parts: Uint8Array[] = [enc.encode(TREE_TAG)];
  for (const [path, digest] of entries) {
    const p = enc.encode(path);
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, p.length);
    parts.push(len, p, digest);
  }
  let total = 0;
  for (const p of parts) total += p.length;
  const buf = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    buf.set(p, at);
    at += p.length;
  }
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', buf)));
}

/**
 * Hash of the given files of a source (default: every listed file), equal to the `hash` `readShard`
 * returns when given exactly the files it read. Throws when a file is missing or the source cannot list.
 */
export async function hashSource(source: ShardSource, paths?: string[]): Promise<string> {
  const files = paths ?? (await source.list());
  if (!files) throw new Error(`${source.label}: cannot list files; pass the paths to hash`);
  const digests: [string, Uint8Array][] = [];
  for (const path of files) {
    const stream = await source.open(path);
    if (!stream) throw new Error(`${source.label}: ${path} not found`);
    const h = new FileHasher();
    for await (const chunk of stream) {
      const r = h.update(chunk);
      if (r) await r;
    }
    digests.push([path, await h.digest()]);
  }
  return combineFileHashes(digests);
}

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

function writeU64(buf: Uint8Array, at: number, value: number): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  view.setUint32(at, Math.floor(value / 2 ** 32));
  view.setUint32(at + 4, value >>> 0);
}
